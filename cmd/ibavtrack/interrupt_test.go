package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestInterrupt: cancelling the context (what SIGINT and SIGTERM do in
// main) in the middle of a slow discovery stops every command with exit
// 130 and one line on stderr, and nothing on stdout.
func TestInterrupt(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	// 1,344 nodes behind a 1ms-per-SMA latency model: seconds to discover.
	slow := "fattree:levels=3,radix=16;Latency hop=1us sma=1ms vl15=1"
	var cancel context.CancelFunc
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := old(ctx, s)
		if err == nil { // cancel once discovery is certainly under way
			f.Transport = clitest.CancelAfter(f.Transport, 50, cancel)
		}
		return f, err
	}
	defer func() { openFabric = old }()

	for _, args := range [][]string{
		{"links", "--sim", slow},
		{"path", "--sim", slow, "H0", "H1000"},
		{"watch", "--sim", slow, "--interval", "1ms", "H1000"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ctx, c := context.WithCancel(context.Background())
			defer c()
			cancel = c
			var out, errb bytes.Buffer
			start := time.Now()
			code := run(ctx, &out, &errb, append([]string{"ibavtrack"}, args...))
			t.Logf("stopped after %v: %s", time.Since(start).Round(time.Millisecond), errb.String())
			if code != exitcode.Interrupted {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Interrupted, errb.String())
			}
			msg := errb.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "ibavtrack: interrupted during discovery") {
				t.Errorf("stderr is not one \"ibavtrack: interrupted during discovery\" line:\n%s", msg)
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
		})
	}
}

// TestInterruptWatch: Ctrl-C between sweeps, the usual way to stop watch,
// keeps what was printed, exits 130 and says so in one line.
func TestInterruptWatch(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	afterSweep = func(sweep int, _ *attach.Fabric) {
		if sweep == 1 {
			cancel()
		}
	}
	defer func() { afterSweep = nil }()
	var out, errb bytes.Buffer
	code := run(ctx, &out, &errb, []string{"ibavtrack", "watch", "--sim", "testdata/pathmix.net", "--interval", "1ms", "hB", "hC"})
	if code != exitcode.Interrupted || errb.String() != "ibavtrack: interrupted\n" {
		t.Fatalf("exit %d, stderr %q; want %d and one interrupted line", code, errb.String(), exitcode.Interrupted)
	}
	// The first sweep's AVs were printed, and nothing after them changed.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " hB: AV dlid ") || !strings.Contains(lines[1], " hC: AV dlid ") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
