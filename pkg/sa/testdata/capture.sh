#!/bin/bash
# capture.sh regenerates the SA test vectors (*.hex) in this directory.
# TestLiveMatchesSaquery starts a private ibsim (Debian ibsim-utils 0.10)
# on its example net.2sw2path4hca, a continuously running OpenSM 3.3.23 on
# Hca1 under libumad2sim, and queries the SA from Hca2 with pkg/sa's client
# through pkg/ibsim; with SA_CAPTURE=1 it writes some of the answer MADs it
# received, each with the saquery (infiniband-diags 44) output for the
# same query at Hca2 as "> " lines, and the source in "#" lines.
#
# OpenSM under libumad2sim answers a GetTable in one MAD cut to 256 bytes
# (the shim forwards no more; there is no kernel RMPP): RMPP flags "Active"
# only, no segment number, no PayloadLength. The bytes past OpenSM's own
# length are zero (pkg/ibsim clears them). See "Through ibsim" in the
# package documentation (sa.go).
#
# usage: pkg/sa/testdata/capture.sh   (needs ibsim, opensm, saquery, go)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f testdata/*.hex
SA_CAPTURE=1 go test -count=1 -run 'TestLiveMatchesSaquery$' .
ls testdata/*.hex
