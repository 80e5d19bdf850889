//go:build unix

package infile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

const guard = 30 * time.Second

func readAll(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		return string(b), err
	}
}

// TestLoadCancelled: a load blocked opening a FIFO nobody writes returns
// once ctx is cancelled, with an error naming the flag and the file that
// wraps context.Canceled.
func TestLoadCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		clitest.Skip(t, "mkfifo: %v", err)
	}
	for _, early := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if early { // cancelled before the open is reached
			cancel()
		}
		done := make(chan error, 1)
		go func() {
			_, err := Load(ctx, "--flag", fifo, readAll(fifo))
			done <- err
		}()
		if !early {
			cancel()
		}
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "--flag "+fifo+": ") {
				t.Errorf("err = %v, want one naming --flag %s wrapping context.Canceled", err, fifo)
			}
		case <-time.After(guard):
			t.Fatalf("Load still blocked %v after the cancellation", guard)
		}
	}
}

// TestLoadWriter: with a writer the FIFO is read as usual, and a regular
// file is not watched at all.
func TestLoadWriter(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		clitest.Skip(t, "mkfifo: %v", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			io.WriteString(w, "data")
			w.Close()
		}
	}()
	done := make(chan struct{})
	var got string
	var err error
	go func() {
		defer close(done)
		got, err = Load(context.Background(), "--flag", fifo, readAll(fifo))
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatalf("Load of a FIFO with a writer blocked for %v", guard)
	}
	if err != nil || got != "data" {
		t.Errorf("got %q, %v", got, err)
	}
	f := clitest.WriteFile(t, dir, "f", "file")
	if got, err := Load(context.Background(), "--flag", f, readAll(f)); err != nil || got != "file" {
		t.Errorf("regular file: %q, %v", got, err)
	}
	// a cancelled run reading a regular file (or no file) gets the
	// loader's result: the cancellation is the caller's to report
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := Load(ctx, "--flag", f, readAll(f)); err != nil || got != "file" {
		t.Errorf("regular file, cancelled: %q, %v", got, err)
	}
	if _, err := Load(ctx, "--flag", "", func() (int, error) { return 1, nil }); err != nil {
		t.Errorf("no file, cancelled: %v", err)
	}
}
