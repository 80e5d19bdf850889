//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// TestEmptyFabricFIFO: an empty fabric given through a FIFO is read once
// and reported, never opened again (which would wait for a writer).
func TestEmptyFabricFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fabric.net")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
		if err == nil {
			err = w.Close() // nothing written: EOF
		}
		done <- err
	}()
	_, stderr, code := runOurs(t, "--sim", fifo)
	want := "ibdiscover: --sim " + fifo + ": no nodes (want an ibsim net file or an ibnetdiscover topology file)\n"
	if code != exitcode.Usage || string(stderr) != want {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitcode.Usage, want)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
