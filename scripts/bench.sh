#!/bin/sh
# bench.sh: run the Go benchmarks (codec, engine, the window under the
# simulator's latency model in real time against fixed windows and the
# fabric's physical bound (BenchmarkLatencyModel: bound-ms, x-bound), hop
# matrix, the embedded SM, renderers) with -benchmem and print them as a
# table; then the latency-model comparison on a virtual clock
# (TestLatencyModelVirtual: default vs each fixed window vs the bound,
# independent of the host's load), as docs/performance.md's tables.
# BENCHTIME may be set; SHORT=1 leaves out the 20.7k-node tree.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
short=
[ "${SHORT:-}" = 1 ] && short=-short
go test $short -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./... >"$out" 2>&1 || { cat "$out"; exit 1; }
awk '
/^pkg: / { pkg = $2; sub(/.*ibdiag\//, "", pkg) }
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	line = sprintf("%-16s %-58s", pkg, name)
	for (i = 3; i < NF; i += 2) line = line sprintf(" %14s %s", $i, $(i+1))
	print line
}' "$out"
echo
go test ./pkg/discover $short -count=1 -timeout 30m -v -run '^TestLatencyModelVirtual$' -latency-report 2>/dev/null >"$out" || { cat "$out"; exit 1; }
grep -v -e '^=== ' -e '^--- ' -e '^PASS$' -e '^ok ' -e ' virtual, .* real$' "$out"
