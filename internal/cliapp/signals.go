package cliapp

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/outfile"
)

// RunFunc is a command's testable entry point.
type RunFunc func(ctx context.Context, stdout, stderr io.Writer, args []string) int

// Main runs run with the suite's signal handling and exits the process:
//
//   - SIGINT, SIGTERM, SIGHUP and SIGPIPE cancel run's context: the
//     command stops, prints what it has (flagged partial), closes its
//     transport (an ibsim slot is released) and exits 130;
//   - a second SIGINT, SIGTERM or SIGHUP exits at once with 130, after
//     writing DISCONNECT for any ibsim slot without waiting for ibsim;
//   - after SIGPIPE (stdout or stderr is a pipe nobody reads any more)
//     nothing more is written to stderr and the process ends by SIGPIPE,
//     as a C tool would, once the slot is released.
//
// It also sets the GC target of a one-shot tool (gcPercent) unless GOGC
// is in the environment.
func Main(run RunFunc) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(runWithSignals(run, os.Stdout, os.Stderr, os.Args))
}

// gcPercent is the GC target of a one-shot tool that keeps most of what
// it allocates until it exits: about 8 % less peak RSS than Go's 100 for
// about 15 % more CPU (65k-node fabric).
const gcPercent = 33

// signals holds one run's signal state.
type signals struct {
	ch      chan os.Signal
	cancel  context.CancelFunc
	piped   atomic.Bool // SIGPIPE seen
	stopped chan struct{}
	wg      sync.WaitGroup
}

// hardExit ends the process on the second signal (a variable for tests).
var hardExit = func() {
	outfile.AbortAll()
	attach.Abort()
	os.Exit(exitcode.Interrupted)
}

func runWithSignals(run RunFunc, stdout, stderr io.Writer, args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &signals{ch: make(chan os.Signal, 4), cancel: cancel, stopped: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	s.wg.Add(1)
	go s.loop()
	out := &pipeWatch{w: stdout, s: s}
	errOut := &pipeGuard{w: stderr, piped: &s.piped}
	code := run(ctx, out, errOut, args)
	signal.Stop(s.ch)
	close(s.stopped)
	s.wg.Wait()
	if s.piped.Load() {
		// End by SIGPIPE, as the C tools do, now that the slot is free:
		// the runtime dies of SIGPIPE on EPIPE from stdout or stderr
		// once nobody is notified (it ignores a SIGPIPE from kill).
		signal.Reset(syscall.SIGPIPE)
		for _, w := range []*os.File{out.broken, errOut.broken} {
			if w != nil {
				w.Write([]byte{'\n'})
			}
		}
		return 128 + int(syscall.SIGPIPE)
	}
	return code
}

// loop cancels the run on the first signal and exits on the second
// (SIGPIPE never counts as a second: every write to the dead pipe
// raises one).
func (s *signals) loop() {
	defer s.wg.Done()
	cancelled := false
	for {
		select {
		case <-s.stopped:
			return
		case sig := <-s.ch:
			if sig == syscall.SIGPIPE {
				s.piped.Store(true)
				s.cancel()
				cancelled = true
				continue
			}
			if cancelled {
				hardExit()
				return
			}
			s.cancel()
			cancelled = true
		}
	}
}

// pipeWatch passes writes to stdout and treats EPIPE as SIGPIPE (the
// signal reaches the loop asynchronously, maybe after the run ended).
type pipeWatch struct {
	w      io.Writer
	s      *signals
	broken *os.File // stdout, once a write to it failed with EPIPE
}

func (p *pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.broken = p.File()
		p.s.piped.Store(true)
		p.s.cancel()
	}
	return n, err
}

// File returns the *os.File behind stdout, if it is one (for terminal
// checks).
func (p *pipeWatch) File() *os.File {
	f, _ := p.w.(*os.File)
	return f
}

// pipeGuard drops writes once SIGPIPE was seen: the output went to a
// reader that left, and messages about it would only add noise (or more
// EPIPE).
type pipeGuard struct {
	w      io.Writer
	piped  *atomic.Bool
	broken *os.File // stderr, once a write to it failed with EPIPE
}

func (g *pipeGuard) Write(p []byte) (int, error) {
	if g.piped.Load() {
		return len(p), nil
	}
	n, err := g.w.Write(p)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		g.broken = g.File()
		g.piped.Store(true)
	}
	return n, err
}

// File returns the *os.File behind stderr, if it is one (for terminal
// checks: the progress bar).
func (g *pipeGuard) File() *os.File {
	f, _ := g.w.(*os.File)
	return f
}
