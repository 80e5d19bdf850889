#!/bin/sh
# test-stress.sh: run the test suite several times in a row on a loaded
# machine, as `make test` runs it (go test -race -count=1), while CPU-bound
# processes compete for the cores. It stops at the first failing run and
# says which one; its output is kept in a log file.
#
# usage: scripts/test-stress.sh [RUNS] [PACKAGES...]
#   RUNS      how many runs (default 5, or $STRESS_RUNS)
#   PACKAGES  what to test (default ./...)
# environment: STRESS_LOAD  number of CPU-bound processes (default 3)
#              GO           the go command (default go)
#              STRESS_LOG   log file (default a new file under ${TMPDIR:-/tmp})
#
# The load processes are started by this script and killed by their PIDs
# when it ends, however it ends.
set -u

runs=${STRESS_RUNS:-5}
if [ $# -gt 0 ]; then
	runs=$1
	shift
fi
case $runs in
'' | *[!0-9]* | 0) echo "test-stress: RUNS must be a positive number, not '$runs'" >&2; exit 2 ;;
esac
load=${STRESS_LOAD:-3}
case $load in
'' | *[!0-9]*) echo "test-stress: STRESS_LOAD must be a number, not '$load'" >&2; exit 2 ;;
esac
go=${GO:-go}
[ $# -gt 0 ] || set -- ./...
setsid=
command -v setsid >/dev/null 2>&1 && setsid=setsid
log=${STRESS_LOG:-$(mktemp "${TMPDIR:-/tmp}/test-stress.XXXXXX")}

pids=   # load processes
gopid=  # the running go test
cleanup() {
	# go test and the test binaries it runs form their own process
	# group (setsid below): stop them all, or go test alone without it.
	if [ -n "$gopid" ]; then
		kill -TERM "-$gopid" 2>/dev/null || kill -TERM "$gopid" 2>/dev/null
	fi
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	pids=
}
trap cleanup EXIT
trap 'echo "test-stress: interrupted" >&2; exit 130' INT TERM HUP

i=0
while [ "$i" -lt "$load" ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done

echo "test-stress: $runs runs of '$go test -race -count=1 -timeout 30m $*' with $load CPU-bound processes (pids$pids) on $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') cores; log: $log"
: >"$log"
run=1
while [ "$run" -le "$runs" ]; do
	start=$(date +%s)
	echo "=== test-stress run $run of $runs" >>"$log"
	# In the background, so that a signal to this script is handled at
	# once (the shell runs traps only between foreground commands), and
	# in a process group of its own (setsid), led by go test's PID.
	$setsid "$go" test -race -count=1 -timeout 30m "$@" >>"$log" 2>&1 &
	gopid=$!
	wait "$gopid"
	rc=$?
	gopid=
	if [ "$rc" -eq 0 ]; then
		echo "test-stress: run $run of $runs passed ($(($(date +%s) - start)) s)"
	else
		echo "test-stress: run $run of $runs FAILED ($(($(date +%s) - start)) s); failures:" >&2
		sed -n "/^=== test-stress run $run of/,\$p" "$log" | grep -E '^(--- FAIL|FAIL|panic:|    [a-z_]+_test\.go:[0-9]+:)' | head -60 >&2
		echo "test-stress: full output in $log" >&2
		exit 1
	fi
	run=$((run + 1))
done
echo "test-stress: all $runs runs passed under load"
