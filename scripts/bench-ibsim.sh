#!/bin/sh
# bench-ibsim.sh: ibdiscover vs ibnetdiscover on a generated fat tree of
# 2,000+ nodes served by ibsim (see tools/benchibsim). SPEC and RUNS may be
# set in the environment.
set -eu
cd "$(dirname "$0")/.."
go build -o bin/ ./cmd/ibdiscover
exec go run ./tools/benchibsim -spec "${SPEC:-fattree:levels=2,radix=64}" -runs "${RUNS:-7}" -ibdiscover bin/ibdiscover
