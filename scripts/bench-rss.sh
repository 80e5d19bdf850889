#!/bin/sh
# bench-rss.sh: peak RSS of each process on its own, as the kernel reports
# it (/usr/bin/time -f %M: the process's VmHWM, nothing of its parent):
# `ibdiscover --version`, then ibdiscover and ibnetdiscover (defaults and
# -o 16) on the 2,144-node fat tree served by ibsim, and, with BIG=1, on
# the 64,656-node three-level tree (ibsim takes about a minute to load
# it and ibnetdiscover about four to discover it here).
# RUNS (5) runs of each, interleaved; min, median and max in KiB.
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
TIME=/usr/bin/time
SHIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for b in ibsim ibnetdiscover "$TIME"; do
	command -v "$b" >/dev/null || { echo "bench-rss: $b not installed (run scripts/install-deps.sh)" >&2; exit 1; }
done
[ -e "$SHIM" ] || { echo "bench-rss: $SHIM missing (install ibsim-utils)" >&2; exit 1; }

# Built as make build builds them (Makefile BUILDENV, BUILDFLAGS).
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibdiscover
CGO_ENABLED=0 go build -o bin/benchibsim ./tools/benchibsim
ours=$PWD/bin/ibdiscover
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-rss.XXXXXX")
ibsim_pid=
cleanup() {
	[ -n "$ibsim_pid" ] && kill "$ibsim_pid" 2>/dev/null && wait "$ibsim_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# rss CMD...: one run's peak RSS in KiB (the command's output discarded;
# a failed run stops the script with its error output). It runs in $dir:
# libumad2sim.so makes its sysfs tree (sys-PID) in the working directory.
rss() {
	if ! (cd "$dir" && exec "$TIME" -o "$dir/time" -f %M "$@" >/dev/null 2>"$dir/err"); then
		echo "bench-rss: $* failed:" >&2
		cat "$dir/err" >&2
		exit 1
	fi
	tail -1 "$dir/time"
}

# stats NAME FILE: min, median and max of the numbers in FILE.
stats() {
	sort -n "$2" | awk -v name="$1" '{ v[NR] = $1 } END {
		printf "%-40s %8d %8d %8d\n", name, v[1], v[int((NR + 1) / 2)], v[NR] }'
}

# fabric SPEC: write the fabric and start ibsim on it with a private
# socket; returns once ibsim's control socket is up (ibsim parses the
# whole file first: a minute or more for the 64,656-node tree).
fabric() {
	eval "$(bin/benchibsim -prepare "$dir" -spec "$1" | tr ' ' '\n' | grep -E '^(nodes|switches|ports|host)=')"
	sock="benchrss$$"
	(cd "$dir" && IBSIM_SOCKNAME=$sock exec ibsim -s -n -N $((nodes + 16)) -S $((switches + 16)) -P $((ports + 64)) fabric.net \
		</dev/null >"$dir/ibsim.log" 2>&1) &
	ibsim_pid=$!
	export IBSIM_SOCKNAME="$sock" SIM_HOST="$host"
	i=0
	until grep -q "@$sock:ctl@" /proc/net/unix; do
		if ! kill -0 "$ibsim_pid" 2>/dev/null; then
			echo "bench-rss: ibsim exited:" >&2
			cat "$dir/ibsim.log" >&2
			exit 1
		fi
		i=$((i + 1))
		[ $i -le 6000 ] || { echo "bench-rss: ibsim not up after 10 minutes" >&2; exit 1; }
		sleep 0.1
	done
}

stop_ibsim() {
	kill "$ibsim_pid" 2>/dev/null || true
	wait "$ibsim_pid" 2>/dev/null || true
	ibsim_pid=
}

echo "peak RSS in KiB, each process alone ($TIME -f %M), $runs runs each, interleaved"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-40s %8s %8s %8s\n" "" min median max

: >"$dir/version"
for _ in $(seq "$runs"); do rss "$ours" --version >>"$dir/version"; done
stats "ibdiscover --version" "$dir/version"

# measure LABEL RUNS: ibdiscover and ibnetdiscover on the running ibsim.
measure() {
	: >"$dir/o"; : >"$dir/o16"; : >"$dir/c"; : >"$dir/c16"
	for _ in $(seq "$2"); do
		rss "$ours" --ibsim >>"$dir/o"
		rss "$ours" --ibsim -o 16 >>"$dir/o16"
		rss env LD_PRELOAD="$SHIM" ibnetdiscover >>"$dir/c"
		rss env LD_PRELOAD="$SHIM" ibnetdiscover -o 16 >>"$dir/c16"
	done
	stats "$1: ibdiscover --ibsim (default)" "$dir/o"
	stats "$1: ibnetdiscover (default)" "$dir/c"
	stats "$1: ibdiscover --ibsim -o 16" "$dir/o16"
	stats "$1: ibnetdiscover -o 16" "$dir/c16"
	for w in "" 16; do
		a=$(sort -n "$dir/o$w" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		b=$(sort -n "$dir/c$w" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		awk -v a="$a" -v b="$b" -v l="$1" -v w="${w:-default}" 'BEGIN { printf "%s, %s: ibdiscover / ibnetdiscover %.2fx\n", l, w == "default" ? "defaults" : "-o " w, a / b }'
	done
}

fabric fattree:levels=2,radix=64
measure "2,144 nodes" "$runs"
stop_ibsim
if [ "${BIG:-0}" = 1 ]; then
	fabric fattree:levels=3,radix=48,hosts=36,leaves=36
	measure "64,656 nodes" "${BIGRUNS:-1}"
	stop_ibsim
fi
