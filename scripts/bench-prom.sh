#!/bin/sh
# bench-prom.sh: one sweep of ibcheck's Prometheus exporter (--textfile)
# vs treydock/infiniband_exporter's pipeline (ibnetdiscover, one
# perfquery -x per switch) on a generated 2,144-node fat tree served by
# ibsim (see tools/benchprom), and the scrape of a 2,144-node result
# (BenchmarkScrapeFatTree). SPEC and RUNS may be set in the environment.
set -eu
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibcheck   # as make build (Makefile BUILDFLAGS)
go run ./tools/benchprom -spec "${SPEC:-fattree:levels=2,radix=64}" -runs "${RUNS:-5}" -ibcheck bin/ibcheck
echo
go test -run '^$' -bench BenchmarkScrapeFatTree -benchtime "${RUNS:-5}x" ./pkg/exporter/
