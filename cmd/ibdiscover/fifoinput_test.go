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

// TestFIFOInputInterrupted: an input that is a FIFO nobody writes
// (--sim, --load-cache, --diff, --node-name-map, -z) honours the first
// interruption: the run exits 130 naming the input, at once, instead of
// waiting for a writer until a second Ctrl-C.
func TestFIFOInputInterrupted(t *testing.T) {
	for _, flag := range []string{"--sim", "--load-cache", "--diff", "--node-name-map", "-z"} {
		t.Run(flag, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "input")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				clitest.Skip(t, "mkfifo: %v", err)
			}
			args := []string{"ibdiscover", flag, fifo}
			if flag != "--sim" && flag != "--load-cache" {
				args = append(args, "--sim", fabrics+"loop.net")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			var stdout, stderr bytes.Buffer
			go func() { done <- run(ctx, &stdout, &stderr, args) }()
			// Interrupt it once it blocks in the FIFO's open (where the
			// open cannot be seen the interruption may come first: the
			// outcome must be the same).
			clitest.WaitFIFOOpenBlocked(t, fifoGuard)
			cancel()
			select {
			case code := <-done:
				if code != exitcode.Interrupted || !strings.Contains(stderr.String(), fifo) {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr.String(), exitcode.Interrupted, fifo)
				}
				if strings.Count(stderr.String(), "\n") != 1 {
					t.Errorf("stderr is not one line: %q", stderr.String())
				}
			case <-time.After(fifoGuard):
				t.Fatalf("%s FIFO: still waiting for a writer %v after the interruption", flag, fifoGuard)
			}
		})
	}
}
