//go:build !windows

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestThresholdFIFOInterrupted: a --threshold-file (or --node-name-map)
// that is a FIFO nobody writes honours the first interruption: exit 130
// naming it, instead of waiting for a writer.
func TestThresholdFIFOInterrupted(t *testing.T) {
	for _, flag := range []string{"--threshold-file", "--node-name-map"} {
		t.Run(flag, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "input")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				clitest.Skip(t, "mkfifo: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			var stdout, stderr bytes.Buffer
			go func() {
				done <- run(ctx, &stdout, &stderr, []string{"ibavtrack", "errors", "--sim", "../../testdata/fabrics/loop.net", flag, fifo})
			}()
			// Interrupt it once it blocks in the FIFO's open (where the open
			// cannot be seen the interruption may come first: the same outcome).
			clitest.WaitFIFOOpenBlocked(t, 60*time.Second)
			cancel()
			select {
			case code := <-done:
				if code != exitcode.Interrupted || !strings.Contains(stderr.String(), fifo) {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr.String(), exitcode.Interrupted, fifo)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s FIFO: still waiting for a writer 60 s after the interruption", flag)
			}
		})
	}
}
