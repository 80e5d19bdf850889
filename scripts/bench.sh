#!/bin/sh
# bench.sh: run the Go benchmarks (codec, engine, the window under the
# simulator's latency model against fixed windows and the fabric's
# physical bound (BenchmarkLatencyModel: bound-ms, x-bound), hop matrix,
# the embedded SM, renderers) with -benchmem and print them as a table.
# BENCHTIME may be set.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./... >"$out" 2>&1 || { cat "$out"; exit 1; }
awk '
/^pkg: / { pkg = $2; sub(/.*ibdiag\//, "", pkg) }
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	line = sprintf("%-16s %-58s", pkg, name)
	for (i = 3; i < NF; i += 2) line = line sprintf(" %14s %s", $i, $(i+1))
	print line
}' "$out"
