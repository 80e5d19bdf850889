//go:build linux

package clitest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WaitFIFOOpenBlocked returns once a thread of the test process is
// blocked opening a FIFO for want of its other end (the kernel's
// wait_for_partner, read from /proc/self/task/*/wchan), and fails the
// test when none is after timeout. A test calling it must not run
// alongside another that opens a FIFO (no t.Parallel).
func WaitFIFOOpenBlocked(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tasks, _ := filepath.Glob("/proc/self/task/*/wchan")
		for _, task := range tasks {
			if b, err := os.ReadFile(task); err == nil && bytes.Equal(b, []byte("wait_for_partner")) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no thread blocked in a FIFO's open after %v (/proc/self/task/*/wchan never said wait_for_partner)", timeout)
		}
		time.Sleep(time.Millisecond) // a condition polled
	}
}
