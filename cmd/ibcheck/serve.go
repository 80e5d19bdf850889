package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/pkg/exporter"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
)

// DefaultListen is the exporter's address (treydock/infiniband_exporter's
// port).
const DefaultListen = ":9315"

// Test hooks: sweepStarted runs when a scheduled sweep starts (a test
// may hold it there), listening when serve is bound.
var (
	sweepStarted = func(ctx context.Context, n int) {}
	listening    = func(addr string) {}
)

const serveExamples = `ibcheck serve sweeps the fabric on a schedule (discovery, every port's
   PerfMgt counters, the checks) and serves the last complete result at
   /metrics for Prometheus (metrics: docs/metrics.md, ibcheck(8)). A scrape
   never starts a sweep; a slow sweep never delays a scrape. A sweep that
   cannot reach the fabric keeps the last result served, marked stale
   (infiniband_exporter_stale 1, infiniband_exporter_result_age_seconds).

EXAMPLES:
   ibcheck serve                             listen on :9315, sweep every 60s
   ibcheck serve --listen 127.0.0.1:9315 --interval 5m --skip routes

EXIT STATUS:
   0 stopped by SIGINT or SIGTERM; 1 fatal error (the server failed);
   2 bad arguments or input, or the address cannot be listened on (in use,
   not an address).`

func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "checks", Usage: "run only checks `LIST` (comma-separated: " + joinChecks() + ")"},
		&cli.StringFlag{Name: "skip", Usage: "run every check but `LIST` (comma-separated)"},
		&cli.StringFlag{Name: "threshold-file", Usage: "error counter thresholds `FILE` (ibqueryerrors' format)", DefaultText: portcounters.DefaultThresholdFile + " when present"},
		&cli.IntFlag{Name: "max-op-vls", Value: 5, Usage: "OpenSM's max_op_vls `N` for the mtu-vl check (1-15)"},
		&cli.StringFlag{Name: "routing-engine", Value: "minhop", Usage: "compare route lengths with routing engine `NAME`'s hop counts (minhop, updn, ...)"},
		&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when it exists)"},
	}
}

func serveCommand(stdout, stderr io.Writer) *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "listen", Value: DefaultListen, Usage: "serve /metrics on `ADDR` (host:port)"},
		&cli.DurationFlag{Name: "interval", Value: time.Minute, Usage: "sweep the fabric every `DURATION`"},
	}, commonFlags()...)
	flags = append(flags, attach.Flags(true)...)
	return &cli.Command{
		Name:        "serve",
		Usage:       "a Prometheus exporter: sweep on a schedule, serve the last result at /metrics",
		UsageText:   "ibcheck serve [--listen ADDR] [--interval DURATION] [options]",
		Description: serveExamples,
		Flags:       flags,
		Action: func(c *cli.Context) error {
			return serveCmd(c, stderr)
		},
	}
}

func serveCmd(c *cli.Context, stderr io.Writer) error {
	if c.NArg() > 0 {
		return cliapp.Usage(c.Args().First(), "ibcheck serve takes no arguments")
	}
	iv := c.Duration("interval")
	if iv <= 0 {
		return cliapp.Usage("--interval "+iv.String(), "must be positive")
	}
	o, err := parseOptions(c, stderr)
	if err != nil {
		return err
	}
	addr := c.String("listen")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		why := err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			why = oe.Err.Error()
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			why = "address already in use"
		}
		return cliapp.Usage("--listen "+addr, why)
	}
	// A scraper that goes away mid-response (Prometheus at its
	// scrape_timeout) makes the server's write fail with EPIPE; cliapp
	// stops a run on SIGPIPE only when stdout or stderr is the broken
	// pipe, so the exporter goes on.
	// each sweep's collection is garbage once encoded: collected from
	// the start (docs/performance.md)
	cliapp.EndGCFloor()
	e := exporter.New()
	mux := http.NewServeMux()
	mux.Handle("/metrics", exporter.Handler(e))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "ibcheck exporter: metrics at /metrics")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "ibcheck serve: listening on %s, a sweep every %s\n", ln.Addr(), iv)
	listening(ln.Addr().String())
	ctx := c.Context
	t := time.NewTimer(0)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			srv.Shutdown(sctx)
			cancel()
			return nil
		case err := <-served:
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("serve: %w", err))
		case <-t.C:
		}
		sweepStarted(ctx, n)
		start := time.Now()
		col, err := sweep(ctx, o)
		if err == nil {
			if err = e.Set(col); err == nil {
				cliapp.TestEvent("served " + strconv.Itoa(n)) // binary tests wait on it
			}
		}
		switch {
		case ctx.Err() != nil:
			continue // the select above stops
		case err != nil:
			e.Failed()
			if at, ok, _ := e.Last(); ok {
				fmt.Fprintf(stderr, "ibcheck serve: sweep %d: %v; serving the result of %s (stale)\n", n, err, at.Format(time.RFC3339))
			} else {
				fmt.Fprintf(stderr, "ibcheck serve: sweep %d: %v; nothing to serve yet\n", n, err)
			}
		}
		t.Reset(max(0, iv-time.Since(start)))
	}
}

// sweep is one collection: the fabric opened, swept, closed.
func sweep(ctx context.Context, o *options) (*exporter.Collection, error) {
	fab, err := openFabric(ctx, o.s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", exporter.ErrUnreachable, err)
	}
	defer fab.Close()
	in := o.in
	in.Querier = o.s.Querier(fab)
	attachInput(o.s, fab, o.checks, &in)
	return exporter.Collect(ctx, exporter.Config{Transport: fab, Discover: o.s.Config(), Input: in, Checks: o.checks, Name: in.Name})
}

// textfileCmd is --textfile: one collection, written atomically in
// node_exporter's textfile format.
func textfileCmd(c *cli.Context, stderr io.Writer, o *options, file string) error {
	for _, f := range []string{"json", "baseline", "load-cache"} {
		if c.IsSet(f) {
			return cliapp.Usage("--textfile", "cannot be used with --"+f)
		}
	}
	out, err := outfile.CreateContext(c.Context, file)
	if err != nil {
		return cliapp.Usage("--textfile "+file, outfileReason(err))
	}
	defer out.Abort()
	// a sweep keeps a fifth of what it allocates: collected from the
	// start, it peaks lower (docs/performance.md)
	cliapp.EndGCFloor()
	col, err := sweep(c.Context, o)
	if c.Context.Err() != nil {
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted during the sweep"))
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	err = exporter.WriteCollection(bw, col, time.Now())
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--textfile %s: %w", file, err))
	}
	if err := out.Commit(); err != nil {
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--textfile %s: %s", file, outfileReason(err)))
	}
	if col.Partial() {
		return cliapp.Exit(exitcode.Partial, fmt.Errorf("--textfile %s: partial result written (infiniband_exporter_collect_partial 1)", file))
	}
	return nil
}

func outfileReason(err error) string {
	var pe interface{ Unwrap() error }
	for errors.As(err, &pe) {
		inner := pe.Unwrap()
		if inner == nil {
			break
		}
		err = inner
	}
	return err.Error()
}

func joinChecks() string {
	s := ""
	for i, c := range health.Checks {
		if i > 0 {
			s += ", "
		}
		s += c
	}
	return s
}
