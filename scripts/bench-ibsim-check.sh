#!/bin/sh
# bench-ibsim-check.sh: ibcheck (every check the fabric allows) against
# ibdiscover then `ibavtrack errors` run one after the other, on a
# generated fat tree of 2,000+ nodes served by ibsim, LIDs from opensm
# --once: wall time and peak RSS of each, side by side (see
# tools/benchcheck). SPEC and RUNS may be set in the environment.
set -eu
cd "$(dirname "$0")/.."
# as make build (Makefile BUILDENV, BUILDFLAGS)
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibdiscover ./cmd/ibavtrack ./cmd/ibcheck
exec go run ./tools/benchcheck -spec "${SPEC:-fattree:levels=2,radix=64}" -runs "${RUNS:-5}" -bin bin
