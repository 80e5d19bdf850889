//go:build linux

package cliapp

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// waitCtx waits for ctx to end (up to 20s) and reports whether it did.
func waitCtx(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

// Each of SIGINT, SIGTERM, SIGHUP and SIGQUIT cancels the run's context (and lets
// it finish: the command closes its transport and prints what it has).
func TestSignalCancelsRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			code := runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
				syscall.Kill(os.Getpid(), sig)
				if !waitCtx(ctx) {
					t.Errorf("%v did not cancel the run", sig)
				}
				return 130
			}, io.Discard, io.Discard, []string{"tool"})
			if code != 130 {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

// A second signal exits at once (after the ibsim abort), without waiting
// for the run.
func TestSecondSignalExits(t *testing.T) {
	hard := make(chan struct{})
	defer func(f func()) { hardExit = f }(hardExit)
	hardExit = func() { close(hard) }
	runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		if !waitCtx(ctx) {
			t.Fatal("SIGINT did not cancel the run")
		}
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		select {
		case <-hard:
		case <-time.After(20 * time.Second):
			t.Error("a second SIGINT did not exit")
		}
		return 130
	}, io.Discard, io.Discard, []string{"tool"})
}

// EPIPE on stdout stops the run like SIGPIPE, silences stderr, and the
// status says SIGPIPE (128+13; the process itself dies of SIGPIPE when
// the broken pipe is its real stdout).
func TestBrokenPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close()
	code := runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		if _, err := stdout.Write([]byte("line\n")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("write into a closed pipe: %v", err)
		}
		if !waitCtx(ctx) {
			t.Error("EPIPE did not cancel the run")
		}
		stderr.Write([]byte("tool: write: broken pipe\n"))
		return 1
	}, w, errW, []string{"tool"})
	errW.Close()
	if code != 128+int(syscall.SIGPIPE) {
		t.Errorf("exit %d, want %d", code, 128+int(syscall.SIGPIPE))
	}
	if b, _ := io.ReadAll(errR); len(b) != 0 {
		t.Errorf("stderr after EPIPE: %q", b)
	}
}

// TestSIGPIPEElsewhere: EPIPE on a descriptor that is neither stdout nor
// stderr (a scraper gone from a socket, a child's stdin) fails that write
// and nothing else: the run goes on and ends with its own status.
func TestSIGPIPEElsewhere(t *testing.T) {
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	passed := make(chan struct{}, 8)
	defer func(f func()) { sigpipeElsewhere = f }(sigpipeElsewhere)
	sigpipeElsewhere = func() { passed <- struct{}{} }
	code := runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("write into a closed pipe: %v", err)
		}
		select {
		case <-passed:
		case <-time.After(20 * time.Second):
			t.Error("the SIGPIPE never reached the signal loop")
		}
		if ctx.Err() != nil {
			t.Error("a SIGPIPE from another descriptor cancelled the run")
		}
		if _, err := stdout.Write([]byte("still here\n")); err != nil {
			t.Errorf("stdout: %v", err)
		}
		return 4
	}, outW, io.Discard, []string{"tool"})
	if code != 4 {
		t.Errorf("exit %d, want the run's own 4", code)
	}
}

// SIGABRT releases the ibsim slot (abortExit) at once, without waiting
// for the run and without counting as a first signal.
func TestAbortSignalReleases(t *testing.T) {
	aborted := make(chan struct{})
	defer func(f func()) { abortExit = f }(abortExit)
	abortExit = func() { close(aborted) }
	runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		syscall.Kill(os.Getpid(), syscall.SIGABRT)
		select {
		case <-aborted:
		case <-time.After(20 * time.Second):
			t.Error("SIGABRT did not reach abortExit")
		}
		return 0
	}, io.Discard, io.Discard, []string{"tool"})
}

// A reader that leaves the pipe stops the run without waiting for its
// next write (a watch writing a line a day kept its ibsim slot that
// long after head -1 exited), with the broken-pipe status.
func TestReaderGoneStopsRun(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	code := runWithSignals(func(ctx context.Context, stdout, stderr io.Writer, args []string) int {
		if _, err := stdout.Write([]byte("first line\n")); err != nil {
			t.Errorf("first write: %v", err)
		}
		b := make([]byte, 64)
		if n, _ := r.Read(b); string(b[:n]) != "first line\n" {
			t.Errorf("read %q", b[:n])
		}
		r.Close() // head -1 exits
		if !waitCtx(ctx) {
			t.Error("the reader left and the run went on (no write since)")
		}
		return 130
	}, w, io.Discard, []string{"tool"})
	if code != StatusBrokenPipe {
		t.Errorf("exit %d, want %d", code, StatusBrokenPipe)
	}
}

// TestLocalIBSim: a run is given one processor only when its command line
// asks for an ibsim on this machine.
func TestLocalIBSim(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		server string
		want   bool
	}{
		{[]string{"--ibsim"}, "", true},
		{[]string{"errors", "-ibsim", "-o", "16"}, "", true},
		{[]string{"--ibsim-sockname=ibt1", "links"}, "", true},
		{[]string{"--ibsim"}, "10.0.0.1", false},
		{[]string{"--sim", "demo.net"}, "", false},
		{[]string{"--", "--ibsim"}, "", false},
		{[]string{"--ibsimx"}, "", false},
		{nil, "", false},
	} {
		if got := localIBSim(tt.args, tt.server); got != tt.want {
			t.Errorf("localIBSim(%q, %q) = %v, want %v", tt.args, tt.server, got, tt.want)
		}
	}
}
