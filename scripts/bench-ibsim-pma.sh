#!/bin/sh
# bench-ibsim-pma.sh: `ibavtrack errors` vs ibqueryerrors on a generated
# fat tree of 2,000+ nodes served by ibsim, LIDs from opensm --once (see
# tools/benchpma). SPEC and RUNS may be set in the environment.
set -eu
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibavtrack   # as make build (Makefile BUILDFLAGS)
exec go run ./tools/benchpma -spec "${SPEC:-fattree:levels=2,radix=64}" -runs "${RUNS:-5}" -ibavtrack bin/ibavtrack
