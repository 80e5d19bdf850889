# ibdiag: InfiniBand fabric diagnostics in Go.
#
#   make demo    ibdiscover on the bundled demo fabric (embedded simulator)
#   make test    install the real tools if missing (apt-get), then every test
#   make bench   Go benchmarks, summarised as a table
#   make bench-ibsim  ibdiscover vs ibnetdiscover (and a bare client) on ibsim fabrics of 2,144 and 324 nodes
#   make fuzz    run every fuzz target for FUZZTIME each
#   make install PREFIX=/usr/local   binaries and man pages

GO       ?= go
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/sbin
MANDIR   ?= $(PREFIX)/share/man
FUZZTIME ?= 60s
CMDS     := ibdiscover ibhops ibavtrack
DEMO     ?= testdata/fabrics/demo.net

.PHONY: all build demo test vet fmt-check bench bench-ibsim fuzz install clean

all: build

build:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

demo:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/ibdiscover
	./bin/ibdiscover --sim $(DEMO)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: fmt-check vet
	sh scripts/install-deps.sh
	$(GO) test -race -count=1 ./...

bench:
	sh scripts/bench.sh

bench-ibsim: build
	sh scripts/install-deps.sh
	sh scripts/bench-ibsim.sh

fuzz:
	sh scripts/fuzz.sh $(FUZZTIME)

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(addprefix bin/,$(CMDS)) $(DESTDIR)$(BINDIR)/
	install -m 0644 man/*.8 $(DESTDIR)$(MANDIR)/man8/

clean:
	rm -rf bin
