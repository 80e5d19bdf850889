//go:build linux

package clitest

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestWaitFIFOOpenBlocked: it returns while an open of a FIFO for
// reading waits for a writer, and fails when nothing opens it.
func TestWaitFIFOOpenBlocked(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var ft fakeTB
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFIFOOpenBlocked(&ft, 50*time.Millisecond)
	}()
	<-done
	if !ft.failed {
		t.Fatal("returned although nothing opened the FIFO")
	}
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	WaitFIFOOpenBlocked(t, time.Minute)
	select {
	case err := <-opened:
		t.Fatalf("the open returned before a writer came: %v", err)
	default:
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader's open still blocked a minute after a writer came")
	}
}

// fakeTB records a failure; Fatalf ends the goroutine as testing's does.
type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}
