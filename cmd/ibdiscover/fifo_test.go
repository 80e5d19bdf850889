//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestEmptyFabricFIFO: an empty fabric given through a FIFO is read once
// and reported, never opened again (which would wait for a writer).
func TestEmptyFabricFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fabric.net")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		clitest.Skip(t, "mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
		if err == nil {
			err = w.Close() // nothing written: EOF
		}
		done <- err
	}()
	var stderr []byte
	var code int
	within(t, "ibdiscover --sim FIFO", func() { _, stderr, code = runOurs(t, "--sim", fifo) })
	want := "ibdiscover: --sim " + fifo + ": no nodes (want an ibsim net file or an ibnetdiscover topology file)\n"
	if code != exitcode.Usage || string(stderr) != want {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitcode.Usage, want)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(fifoGuard):
		t.Fatalf("the FIFO's writer was not let go in %v", fifoGuard)
	}
}

// fifoGuard bounds each step of a test that can block on a FIFO.
const fifoGuard = 60 * time.Second

// within runs fn and fails t, naming what, if it has not returned within
// fifoGuard (a FIFO opened twice would wait for a writer for ever),
// instead of hanging the package.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(fifoGuard):
		t.Fatalf("%s: blocked for %v", what, fifoGuard)
	}
}
