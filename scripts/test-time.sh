#!/bin/sh
# test-time.sh: how long `make test`'s test step takes at two commits, measured in ONE run on the same machine, so that
# a before/after comparison does not depend on what else the machine was
# doing on another day.
#
# usage: scripts/test-time.sh [-n RUNS] [BASE [NEW]] [-- PACKAGES...]
#   BASE      the commit to compare against (default: main)
#   NEW       the commit measured (default: HEAD)
#   RUNS      timed runs of each commit (default 3, or $TEST_TIME_RUNS)
#   PACKAGES  what go test runs (default ./...; e.g. ./cmd/...)
# environment: GO (the go command, default go), TMPDIR.
#
# Both commits are checked out into temporary git worktrees (removed at
# the end, however the script ends), so uncommitted changes play no part.
# Each commit runs its own Makefile's test step: the environment and
# flags `make print-test-step` gives (TESTENV, TESTFLAGS), or, for a
# commit whose Makefile has no such target, `go test -race -count=1
# -timeout 30m` as make test ran it then.
#
# Each is first compiled once (go test -run '^$', not timed: the build
# cache is then warm for both); then the runs alternate BASE, NEW, NEW,
# BASE, BASE, NEW, ... so that a change in the machine's load during the
# measurement falls on both alike. For each run it records:
#   wall   seconds, start to end of go test
#   cpu    user+sys seconds of go test and everything it waited for (the
#          test binaries, and the ibsim, OpenSM and C tools they ran);
#          on a machine shared with other work this is the steadier number
#   procs  processes the ibsim harness started (internal/ibsimtest's
#          IBSIMTEST_LAUNCH_LOG; "-" for a commit whose harness lacks it)
# and prints each run with its TEST_TIME_TOP (5) slowest packages (go
# test's own per-package wall times), the medians and the NEW/BASE ratios. A failing run
# is marked FAIL (its times still count; look at the log it names).
#
# Needs GNU time (/usr/bin/time, Debian package "time") for the CPU
# seconds; without it only wall time is measured.
#
# Example, before/after of a branch on a quiet machine:
#   scripts/test-time.sh -n 5 main i28-time
set -u

runs=${TEST_TIME_RUNS:-3}
TEST_TIME_TOP=${TEST_TIME_TOP:-5}
base=
new=
go=${GO:-go}
while [ $# -gt 0 ]; do
	case $1 in
	-n) [ $# -ge 2 ] || { echo "test-time: -n needs a number" >&2; exit 2; }
		runs=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "test-time: unknown option $1 (usage: scripts/test-time.sh [-n RUNS] [BASE [NEW]] [-- PACKAGES...])" >&2; exit 2 ;;
	*) if [ -z "$base" ]; then base=$1; elif [ -z "$new" ]; then new=$1; else
			echo "test-time: too many commits: $1" >&2; exit 2; fi
		shift ;;
	esac
done
case $runs in
'' | *[!0-9]* | 0) echo "test-time: RUNS must be a positive number, not '$runs'" >&2; exit 2 ;;
esac
[ -n "$base" ] || base=main
[ -n "$new" ] || new=HEAD
[ $# -gt 0 ] || set -- ./...

top=$(git rev-parse --show-toplevel 2>/dev/null) || { echo "test-time: not in a git repository" >&2; exit 2; }
base_rev=$(git -C "$top" rev-parse --verify -q "$base^{commit}") || { echo "test-time: BASE $base: no such commit" >&2; exit 2; }
new_rev=$(git -C "$top" rev-parse --verify -q "$new^{commit}") || { echo "test-time: NEW $new: no such commit" >&2; exit 2; }

timecmd=
if [ -x /usr/bin/time ] && /usr/bin/time -f %e true >/dev/null 2>&1; then
	timecmd=/usr/bin/time
else
	echo "test-time: no GNU time at /usr/bin/time: wall time only" >&2
fi
setsid=
command -v setsid >/dev/null 2>&1 && setsid=setsid

work=$(mktemp -d "${TMPDIR:-/tmp}/test-time.XXXXXX") || exit 2
gopid=
cleanup() {
	if [ -n "$gopid" ]; then
		kill -TERM "-$gopid" 2>/dev/null || kill -TERM "$gopid" 2>/dev/null
		wait "$gopid" 2>/dev/null
	fi
	for w in base new; do
		[ -d "$work/$w" ] && git -C "$top" worktree remove --force "$work/$w" >/dev/null 2>&1
	done
	git -C "$top" worktree prune >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "test-time: interrupted" >&2; exit 130' INT TERM HUP

for w in base new; do
	eval rev=\$${w}_rev
	git -C "$top" worktree add --detach -q "$work/$w" "$rev" || { echo "test-time: cannot check out $rev" >&2; exit 2; }
done

# step W: the test step of worktree W, as "ENV\nFLAGS" in $work/W.step.
for w in base new; do
	if ! make -s --no-print-directory -C "$work/$w" print-test-step >"$work/$w.step" 2>/dev/null ||
		[ "$(wc -l <"$work/$w.step")" -ne 2 ]; then
		printf '\n%s\n' '-race -count=1 -timeout 30m' >"$work/$w.step"
	fi
done
stepenv() { sed -n 1p "$work/$1.step"; }
stepflags() { sed -n 2p "$work/$1.step"; }

echo "test-time: make test's test step on $*, $runs runs each of"
echo "  BASE $base ($(git -C "$top" log -1 --format='%h %s' "$base_rev" | cut -c1-70))"
echo "  NEW  $new ($(git -C "$top" log -1 --format='%h %s' "$new_rev" | cut -c1-70))"
for w in base new; do
	echo "  $w: $(stepenv $w) go test $(stepflags $w)"
done
echo "  on $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'); logs in $work (removed at the end)"

# Compile both once, untimed.
for w in base new; do
	if ! (cd "$work/$w" && "$go" test $(stepflags $w) -run '^$' "$@" >"$work/$w.build.log" 2>&1); then
		echo "test-time: $w does not build:" >&2
		tail -20 "$work/$w.build.log" >&2
		exit 1
	fi
done

# one W N: one timed run of worktree W (base or new), run number N.
one() {
	w=$1
	n=$2
	shift 2
	log=$work/$w.$n.log
	launches=$work/$w.$n.launches
	: >"$launches"
	start=$(date +%s.%N)
	# In the background and in a process group of its own (setsid), so
	# that a signal to this script is handled at once and stops it all.
	if [ -n "$timecmd" ]; then
		(cd "$work/$w" && IBSIMTEST_LAUNCH_LOG=$launches exec env $(stepenv $w) $setsid $timecmd -f 'TEST-TIME %e %U %S' -o "$work/$w.$n.time" "$go" test $(stepflags $w) "$@") >"$log" 2>&1 &
	else
		(cd "$work/$w" && IBSIMTEST_LAUNCH_LOG=$launches exec env $(stepenv $w) $setsid "$go" test $(stepflags $w) "$@") >"$log" 2>&1 &
	fi
	gopid=$!
	wait "$gopid"
	rc=$?
	gopid=
	end=$(date +%s.%N)
	if [ -n "$timecmd" ] && [ -s "$work/$w.$n.time" ]; then
		set -- $(grep '^TEST-TIME ' "$work/$w.$n.time" | tail -1)
		wall=$2
		cpu=$(echo "$3 $4" | awk '{printf "%.1f", $1 + $2}')
	else
		wall=$(echo "$start $end" | awk '{printf "%.2f", $2 - $1}')
		cpu=-
	fi
	procs=$(wc -l <"$launches" | tr -d ' ')
	[ "$procs" -gt 0 ] || procs=-
	status=ok
	[ "$rc" -eq 0 ] || status="FAIL (exit $rc; log kept below)"
	printf '  run %d %-4s wall %8.1f s   cpu %8s s   procs %6s   %s\n' "$n" "$w" "$wall" "$cpu" "$procs" "$status"
	echo "$wall $cpu $procs" >>"$work/$w.results"
	# the slowest packages of the run (go test's "ok  PKG  12.3s" lines)
	awk '$1 == "ok" || $1 == "FAIL" { if ($3 ~ /s$/) { t = $3; sub(/s$/, "", t); print t, $2 } }' "$log" |
		sort -rn | head -"$TEST_TIME_TOP" | awk '{ printf "      %7.1f s  %s\n", $1, $2 }'
	if [ "$rc" -ne 0 ]; then
		cp "$log" "${TMPDIR:-/tmp}/test-time-$w-$n.log"
		grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -20 | sed 's/^/      /'
		echo "      full log: ${TMPDIR:-/tmp}/test-time-$w-$n.log"
	fi
}

i=1
while [ "$i" -le "$runs" ]; do
	if [ $((i % 2)) -eq 1 ]; then
		one base "$i" "$@"
		one new "$i" "$@"
	else
		one new "$i" "$@"
		one base "$i" "$@"
	fi
	i=$((i + 1))
done

# median COLUMN FILE
median() {
	awk -v c="$1" '$c != "-" { print $c }' "$2" | sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "-"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() {
	echo "$1 $2" | awk '$1 == "-" || $2 == "-" || $1 == 0 { print "-"; next } { printf "%.2f\n", $2 / $1 }'
}
bw=$(median 1 "$work/base.results")
nw=$(median 1 "$work/new.results")
bc=$(median 2 "$work/base.results")
nc=$(median 2 "$work/new.results")
bp=$(median 3 "$work/base.results")
np=$(median 3 "$work/new.results")
echo "medians of $runs runs:"
printf '  %-9s %10s %10s %10s\n' "" "wall s" "cpu s" "procs"
printf '  %-9s %10s %10s %10s\n' BASE "$bw" "$bc" "$bp"
printf '  %-9s %10s %10s %10s\n' NEW "$nw" "$nc" "$np"
printf '  %-9s %10s %10s %10s\n' NEW/BASE "$(ratio "$bw" "$nw")" "$(ratio "$bc" "$nc")" "$(ratio "$bp" "$np")"
