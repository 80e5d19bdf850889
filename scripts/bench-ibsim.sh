#!/bin/sh
# bench-ibsim.sh: ibdiscover vs ibnetdiscover (and a bare ibsim client
# sending the same SMPs) on generated fat trees served by ibsim: the
# 2,144-node two-level tree and the 324-node one (see tools/benchibsim).
# SPECS (space-separated generator specs) and RUNS may be set.
set -eu
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibdiscover   # as make build (Makefile BUILDFLAGS)
CGO_ENABLED=0 go build -o bin/benchibsim ./tools/benchibsim
for spec in ${SPECS:-fattree:levels=2,radix=64 fattree:levels=2,radix=24}; do
	bin/benchibsim -spec "$spec" -runs "${RUNS:-7}" -ibdiscover bin/ibdiscover
	echo
done
