#!/bin/sh
# bench-sim-big.sh: wall time, CPU time and peak RSS of `ibdiscover --sim`,
# `ibdiscover --sim --sim-sm` (the embedded SM first: LIDs and every
# switch's LFT, what errors needs to send LID-routed PerfMgt MADs, and most
# of its memory on a big tree) and `ibavtrack errors --sim` (which runs that
# SM by default) on the same embedded fabric, by default the
# 64,656-node three-level fat tree of docs/performance.md ("Big fabrics"),
# each process alone under /usr/bin/time (%M is its own VmHWM). RUNS (3)
# runs of each, interleaved; min, median and max.
#
# On that tree the embedded SM runs out of unicast LIDs (49,151 of 64,656
# ports get one, as warned): errors then fails the PerfMgt queries of the
# 15,505 hosts without a LID, names each on standard error and exits 3
# (partial), which counts as finished here; any other status stops the
# script with the command's error output.
#
#	[SPEC=fattree:levels=3,radix=48,hosts=36,leaves=36] [RUNS=3] sh scripts/bench-sim-big.sh
set -eu
cd "$(dirname "$0")/.."
spec=${SPEC:-fattree:levels=3,radix=48,hosts=36,leaves=36}
runs=${RUNS:-3}
TIME=/usr/bin/time
command -v "$TIME" >/dev/null || { echo "bench-sim-big: $TIME not installed (run scripts/install-deps.sh)" >&2; exit 1; }

# Built as make build builds them (Makefile BUILDENV, BUILDFLAGS).
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibdiscover ./cmd/ibavtrack
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-sim-big.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM HUP

# one NAME OK CMD...: one run; appends "wall cpu rss" to $dir/NAME. OK is
# the exit status that is not a failure besides 0.
one() {
	name=$1 ok=$2
	shift 2
	st=0
	"$TIME" -o "$dir/time" -f '%e %U %S %M' "$@" >"$dir/out" 2>"$dir/err" || st=$?
	if [ "$st" != 0 ] && [ "$st" != "$ok" ]; then
		echo "bench-sim-big: $* exited $st:" >&2
		tail -20 "$dir/err" >&2
		exit 1
	fi
	tail -1 "$dir/time" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' >>"$dir/$name"
	# the last run's summary, for the record
	tail -5 "$dir/out" >"$dir/$name.tail"
}

# stats LABEL FILE: min, median and max of each column.
stats() {
	for col in 1 2 3; do
		cut -d' ' -f$col "$2" | sort -n | awk -v c=$col '{ v[NR] = $1 } END {
			m = v[int((NR + 1) / 2)]
			if (c == 3) printf "  peak RSS %.1f MB (%.1f-%.1f)", m / 1000, v[1] / 1000, v[NR] / 1000
			else if (c == 1) printf "  wall %.2f s (%.2f-%.2f)", m, v[1], v[NR]
			else printf "  CPU %.2f s (%.2f-%.2f)", m, v[1], v[NR] }'
	done | { printf "%-27s" "$1"; cat; echo; }
}

echo "fabric: --sim $spec; $runs runs each, interleaved; medians (min-max); MB = 1,000 KiB"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
: >"$dir/disc"
: >"$dir/discsm"
: >"$dir/errors"
for _ in $(seq "$runs"); do
	one disc 0 bin/ibdiscover --sim "$spec"
	one discsm 0 bin/ibdiscover --sim "$spec" --sim-sm
	one errors 3 bin/ibavtrack errors --sim "$spec"
done
stats "ibdiscover --sim" "$dir/disc"
stats "ibdiscover --sim --sim-sm" "$dir/discsm"
stats "ibavtrack errors --sim" "$dir/errors"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "ibavtrack errors, last run's summary:"
sed 's/^/  /' "$dir/errors.tail"
