#!/bin/sh
# bench-prom.sh: one sweep of ibcheck's Prometheus exporter (--textfile)
# vs treydock/infiniband_exporter's commands (ibnetdiscover --ports, one
# perfquery -l -x -G per switch) and, when TREYDOCK names its binary,
# treydock's exporter itself (--exporter.runonce), on a generated
# 2,144-node fat tree served by ibsim; then `ibcheck serve` sweeping back
# to back, scraped meanwhile (see tools/benchprom); then the encoding of
# a 2,144-node result by client_golang and by hand, and a scrape of it
# (BenchmarkEncodeFatTree, BenchmarkScrapeFatTree). SPEC, RUNS and
# TREYDOCK may be set in the environment; docs/performance.md says how
# treydock's binary was built.
set -eu
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -tags=urfave_cli_no_docs -o bin/ ./cmd/ibcheck   # as make build (Makefile BUILDFLAGS)
uptime
go run ./tools/benchprom -spec "${SPEC:-fattree:levels=2,radix=64}" -runs "${RUNS:-5}" -ibcheck bin/ibcheck -treydock "${TREYDOCK:-}"
echo
uptime
go test -run '^$' -bench 'BenchmarkEncodeFatTree|BenchmarkScrapeFatTree' -benchtime "${RUNS:-5}x" ./pkg/exporter/
uptime
