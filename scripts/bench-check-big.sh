#!/bin/sh
# bench-check-big.sh: ibcheck with every check on the 64,656-node
# three-level fat tree of the embedded simulator (its SM run: --sim-sm),
# beside ibdiscover on the same fabric: wall time, CPU time and peak RSS of
# each process alone (/usr/bin/time), RUNS (1) runs each, alternating.
# SPEC may name another fabric. The embedded SM runs out of unicast LIDs
# on this tree (15,505 hosts stay at LID 0, not Active): ibcheck reports
# them (links: stuck in Initialize; counters: no LID to send PerfMgt to),
# exit status 4.
set -eu
cd "$(dirname "$0")/.."
spec=${SPEC:-fattree:levels=3,radix=48,hosts=36,leaves=36}
runs=${RUNS:-1}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "bench-check-big: $TIME not installed (apt-get install time)" >&2; exit 1; }
# as make build (Makefile BUILDENV, BUILDFLAGS)
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibdiscover ./cmd/ibcheck
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-check-big.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM HUP

# measure NAME OKCODE CMD...: one run, appended to $dir/NAME as
# "wall user sys KiB"; exit status OKCODE is not a failure.
measure() {
	name=$1 ok=$2
	shift 2
	code=0
	"$TIME" -o "$dir/time" -f "%e %U %S %M" "$@" >"$dir/out" 2>"$dir/err" || code=$?
	if [ "$code" != 0 ] && [ "$code" != "$ok" ]; then
		echo "bench-check-big: $* exited $code:" >&2
		tail -5 "$dir/err" >&2
		exit 1
	fi
	tail -1 "$dir/time" >>"$dir/$name"
}

echo "fabric: --sim $spec --sim-sm; $runs run(s) each, alternating"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) before"
for _ in $(seq "$runs"); do
	measure ibdiscover 0 bin/ibdiscover --sim "$spec" --sim-sm
	measure ibcheck 4 bin/ibcheck --sim "$spec" --sim-sm
done
# the checks and their status (not the ports each could not look at)
sed -n '/^Checks (/,/^Findings:/p' "$dir/out" | grep -v '^      not checked: ' | sed 's/^/ibcheck: /'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) after"
printf "%-12s %10s %10s %12s\n" "" "wall (s)" "CPU (s)" "peak RSS"
# med FILE: the median of the numbers in FILE
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for n in ibdiscover ibcheck; do
	cut -d' ' -f1 "$dir/$n" >"$dir/w"
	awk '{ print $2 + $3 }' "$dir/$n" >"$dir/c"
	cut -d' ' -f4 "$dir/$n" >"$dir/m"
	printf "%-12s %10.2f %10.2f %9d KiB (medians of %d)\n" "$n" "$(med "$dir/w")" "$(med "$dir/c")" "$(med "$dir/m")" "$(wc -l <"$dir/$n")"
done
