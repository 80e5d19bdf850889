package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestInterrupt: cancelling the context (what SIGINT and SIGTERM do in
// main) stops every mode with exit 130 and one line on stderr, nothing on
// stdout and no output file, whether it comes in the middle of a slow
// discovery or before the start node answered.
func TestInterrupt(t *testing.T) {
	// 1,344 nodes behind a 1ms-per-SMA latency model: seconds to discover.
	slow := "fattree:levels=3,radix=16;Latency hop=1us sma=1ms vl15=1"
	dir := t.TempDir()
	var cancel context.CancelFunc
	var after int64 // cancel once this many SMPs were answered
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := old(ctx, s)
		if err == nil && after > 0 {
			f.Transport = clitest.CancelAfter(f.Transport, after, cancel)
		}
		return f, err
	}
	t.Cleanup(func() { openFabric = old })

	for _, tt := range []struct {
		name  string
		after int64 // 0: the context is cancelled at the start
		args  []string
		msg   string
	}{
		{"dump", 50, []string{"--sim", slow}, "ibhops: interrupted during discovery ("},
		{"check into a file", 50, []string{"--sim", slow, "--check-routes", "--output", filepath.Join(dir, "check.txt")}, "ibhops: interrupted during discovery ("},
		{"trace", 50, []string{"--sim", slow, "--trace", "H0", "H1000"}, "ibhops: interrupted during discovery ("},
		{"before the start", 0, []string{"--sim", slow, "--output", filepath.Join(dir, "dump.txt")}, "ibhops: interrupted before the start node answered"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, c := context.WithCancel(context.Background())
			defer c()
			cancel, after = c, tt.after
			if after == 0 {
				c()
			}
			var out, errb bytes.Buffer
			start := time.Now()
			code := run(ctx, &out, &errb, append([]string{"ibhops"}, tt.args...))
			t.Logf("stopped after %v: %s", time.Since(start).Round(time.Millisecond), errb.String())
			if code != exitcode.Interrupted {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Interrupted, errb.String())
			}
			msg := errb.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, tt.msg) {
				t.Errorf("stderr is not one %q line:\n%s", tt.msg, msg)
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
		})
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind in %s: %v", dir, left)
	}
}
