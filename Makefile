# ibdiag: InfiniBand fabric diagnostics in Go.
#
#   make demo    build every tool into bin/, then ibdiscover on the bundled demo fabric (embedded simulator)
#   make test    install the real tools if missing (apt-get), cross-build, then every test
#   make cross   go build and go vet for every other supported GOOS/GOARCH
#   make test-stress  the tests STRESS_RUNS times (5) under 3 CPU-bound processes
#   make bench   Go benchmarks, summarised as a table
#   make bench-ibsim  ibdiscover vs ibnetdiscover (and a bare client) on ibsim fabrics of 2,144 and 324 nodes
#                     (and ibavtrack errors vs ibqueryerrors on the same size, and ibcheck
#                     vs ibdiscover then ibavtrack errors)
#   make bench-rss    peak RSS of each process alone: ibdiscover --version, ibdiscover vs
#                     ibnetdiscover on the 2,144-node tree through ibsim (BIG=1: also 64,656 nodes)
#   make fuzz    run every fuzz target for FUZZTIME each
#   make install PREFIX=/usr/local   binaries, man pages, bash, zsh and fish completions

GO       ?= go
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/sbin
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
FUZZTIME ?= 60s
CMDS     := ibdiscover ibhops ibavtrack ibcheck
DEMO     ?= testdata/fabrics/demo.net
# Where the tools build besides linux/amd64: --sim, --load-cache, --diff
# and every renderer work there; the kernel umad transport and --ibsim
# are Linux-only.
CROSS    ?= linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 freebsd/amd64

STRESS_RUNS ?= 5
# The binaries are built without cgo: nothing needs it, and the net
# package's cgo resolver would link libc in, about 2 MB of every
# process's peak RSS (a third of ibnetdiscover's whole peak). Tests keep
# the default (-race needs cgo).
BUILDENV ?= CGO_ENABLED=0
# urfave/cli without its markdown/man generators (blackfriday, go-md2man):
# the tools never call them, but text/template's reflection keeps them
# linked, about 0.7 MB of every process's peak RSS. Without the tag
# everything builds and behaves the same (go build ./..., go test ./...);
# the tests that build the tools use the same flags
# (internal/testkit/clitest.BuildFlags), and so do the bench scripts.
BUILDFLAGS ?= -tags=urfave_cli_no_docs

.PHONY: all build demo test print-test-step test-stress vet cross fmt-check bench bench-ibsim bench-rss fuzz install clean

all: build

build:
	@mkdir -p bin
	$(BUILDENV) $(GO) build $(BUILDFLAGS) -buildvcs=auto -o bin/ ./cmd/...   # -V shows the commit

demo: build
	./bin/ibdiscover --sim $(DEMO)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

cross:
	@set -e; for t in $(CROSS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/}: go build, go vet"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(BUILDENV) $(GO) build $(BUILDFLAGS) -o /dev/null ./cmd/...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done

# -timeout 30m: cmd/ibavtrack takes about 5 minutes under -race on two
# cores, too close to go test's default of 10 per package.
TESTFLAGS ?= -race -count=1 -timeout 30m
# The race runtime sleeps a second before a test binary exits (GORACE's
# atexit_sleep_ms, 1000 by default), for goroutines still running to
# report a race: 47 test binaries, about 25 s of make test's wall time on
# two cores, spent idle. A race found while tests run is reported as
# before; only one found in a goroutine left running after the last test
# (none of ours may outlive its test) would go unreported.
TESTENV ?= GORACE=atexit_sleep_ms=0
test: fmt-check vet cross
	sh scripts/install-deps.sh
	$(TESTENV) $(GO) test $(TESTFLAGS) ./...

# The test step's environment and flags, for scripts/test-time.sh.
print-test-step:
	@echo '$(TESTENV)'; echo '$(TESTFLAGS)'

test-stress: fmt-check vet
	sh scripts/install-deps.sh
	GO=$(GO) sh scripts/test-stress.sh $(STRESS_RUNS)

bench:
	sh scripts/bench.sh

bench-ibsim: build
	sh scripts/install-deps.sh
	sh scripts/bench-ibsim.sh
	sh scripts/bench-ibsim-pma.sh
	sh scripts/bench-ibsim-check.sh
	sh scripts/bench-prom.sh

bench-rss:
	sh scripts/install-deps.sh
	sh scripts/bench-rss.sh

fuzz:
	sh scripts/fuzz.sh $(FUZZTIME)

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(addprefix bin/,$(CMDS)) $(DESTDIR)$(BINDIR)/
	install -m 0644 man/*.8 $(DESTDIR)$(MANDIR)/man8/
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	for c in $(CMDS); do \
		install -m 0644 completions/$$c.bash $(DESTDIR)$(BASHCOMPDIR)/$$c && \
		install -m 0644 completions/_$$c $(DESTDIR)$(ZSHCOMPDIR)/_$$c && \
		install -m 0644 completions/$$c.fish $(DESTDIR)$(FISHCOMPDIR)/$$c.fish || exit 1; \
	done

clean:
	rm -rf bin
