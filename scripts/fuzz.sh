#!/bin/sh
# fuzz.sh [TIME]: run every native Go fuzz target of the module for TIME
# each (default 60s), one at a time. Crashers land in the package's
# testdata/fuzz/<Target>/ and become regression seeds.
set -eu
cd "$(dirname "$0")/.."
time=${1:-60s}
fail=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $target ($time)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 10s "$pkg"; then
			fail=1
		fi
	done
done
exit $fail
