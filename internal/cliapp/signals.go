package cliapp

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
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
//   - SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE cancel run's context: the
//     command stops, prints what it has (flagged partial), closes its
//     transport (an ibsim slot is released) and exits 130;
//   - a second SIGINT, SIGTERM, SIGHUP or SIGQUIT exits at once with 130, after
//     writing DISCONNECT for any ibsim slot without waiting for ibsim;
//   - SIGABRT (kill -ABRT, or a debugger's "abort") still aborts the
//     process with the Go runtime's goroutine dump (and a core file under
//     GOTRACEBACK=crash), but first writes DISCONNECT for any ibsim slot,
//     as a second signal does, so that the slot does not stay taken;
//   - when standard output is a pipe (or FIFO) whose reader has gone, the
//     run is stopped at once, as by SIGPIPE, without waiting for its next
//     write (watch | head -1 frees its ibsim slot when head exits, not
//     at the next change line);
//   - after SIGPIPE (stdout or stderr is a pipe nobody reads any more;
//     the signal is caught, so the write fails with EPIPE instead of
//     killing the process before it cleans up) nothing more is written
//     to stderr and the process ends by SIGPIPE, as a C tool would, once
//     the slot is released and run has returned (Run makes that run's
//     status StatusBrokenPipe, with no output file written).
//
// Main is the binaries' entry point; tests call run (and so Run)
// directly, where no signal handling is installed.
//
// It also tunes the GC for a one-shot tool (no collection before
// gcFloor, then the target gcPercent) unless GOGC or GOMEMLIMIT is in the
// environment, and runs the tool on one processor when it reaches an
// ibsim on this machine (localIBSim) unless GOMAXPROCS is.
func Main(run RunFunc) {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		tuneGC()
	}
	if os.Getenv("GOMAXPROCS") == "" && localIBSim(os.Args[1:], os.Getenv("IBSIM_SERVER_NAME")) {
		runtime.GOMAXPROCS(1)
	}
	if TestHooked() {
		attach.ConnectSent = func() { TestEvent("connect") }
		if os.Getenv(TestHoldEnv) == "answer" {
			attach.Answered = func(ctx context.Context) {
				TestEvent("hold")
				<-ctx.Done()
			}
		}
	}
	os.Exit(runWithSignals(run, os.Stdout, os.Stderr, os.Args))
}

// localIBSim reports whether the command line asks for an ibsim on this
// machine (--ibsim or --ibsim-sockname, and no IBSIM_SERVER_NAME: ibsim's
// unix socket). Such a run is given one processor from the start: ibsim
// answers one MAD at a time on one thread, so a second processor for the
// tool only takes the core ibsim needs, and each one costs memory (on the
// 2,144-node tree, ibavtrack errors peaks 0.3-0.5 MB lower and takes less
// time; docs/performance.md). Set at start, before the runtime has used
// the second processor: set later, it saves nothing.
func localIBSim(args []string, serverName string) bool {
	if serverName != "" {
		return false
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if isOption(a) {
			if n := optName(a); n == "ibsim" || n == "ibsim-sockname" {
				return true
			}
		}
	}
	return false
}

// StatusBrokenPipe is the status of a run whose standard output was
// closed by its reader: what a shell reports for a death by SIGPIPE.
const StatusBrokenPipe = 128 + int(syscall.SIGPIPE)

// gcPercent is the GC target of a one-shot tool that keeps most of what
// it allocates until it exits: about 8 % less peak RSS than Go's 100 for
// about 15 % more CPU (65k-node fabric).
const gcPercent = 33

// signals holds one run's signal state.
type signals struct {
	ch      chan os.Signal
	cancel  context.CancelFunc
	piped   atomic.Bool // stdout or stderr found broken
	stopped chan struct{}
	wg      sync.WaitGroup
	stdio   []*pipeWriter // stdout and stderr, checked on SIGPIPE
}

// sigpipeElsewhere is called (tests) when a SIGPIPE is let pass because
// neither stdout nor stderr is broken.
var sigpipeElsewhere = func() {}

// hardExit ends the process on the second signal (a variable for tests).
var hardExit = func() {
	outfile.AbortAll()
	attach.Abort()
	os.Exit(exitcode.Interrupted)
}

// abortExit ends the process on SIGABRT (a variable for tests): the
// slot and temporary files first, then the runtime's own SIGABRT.
var abortExit = func() {
	outfile.AbortAll()
	attach.Abort()
	signal.Reset(syscall.SIGABRT)
	raiseAbort()
}

func runWithSignals(run RunFunc, stdout, stderr io.Writer, args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &signals{ch: make(chan os.Signal, 4), cancel: cancel, stopped: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGABRT)
	out := &pipeWriter{w: stdout, s: s}
	errOut := &pipeWriter{w: stderr, s: s, quiet: true}
	s.stdio = []*pipeWriter{out, errOut}
	s.wg.Add(1)
	go s.loop()
	stopWatch := out.watchReader()
	code := run(ctx, out, errOut, args)
	stopWatch()
	signal.Stop(s.ch)
	close(s.stopped)
	s.wg.Wait()
	if s.piped.Load() {
		// End by SIGPIPE, as the C tools do, now that the slot is free:
		// the runtime dies of SIGPIPE on EPIPE from stdout or stderr
		// once nobody is notified (it ignores a SIGPIPE from kill).
		signal.Reset(syscall.SIGPIPE)
		for _, w := range []*os.File{out.broken.Load(), errOut.broken.Load()} {
			if w != nil {
				w.Write([]byte{'\n'})
			}
		}
		return StatusBrokenPipe
	}
	return code
}

// loop cancels the run on the first signal and exits on the second
// (SIGPIPE never counts as a second: every write to the dead pipe
// raises one). A SIGPIPE stops the run only when stdout or stderr is the
// broken pipe: one from another descriptor (a scraper gone from the
// exporter's socket, a Graphviz child that died) is left to the write
// that failed with EPIPE, which reports it.
func (s *signals) loop() {
	defer s.wg.Done()
	cancelled := false
	for {
		select {
		case <-s.stopped:
			return
		case sig := <-s.ch:
			if sig == syscall.SIGPIPE {
				if s.stdioBroken() {
					s.brokenPipe()
					cancelled = true
				} else {
					sigpipeElsewhere()
				}
				continue
			}
			if sig == syscall.SIGABRT {
				abortExit()
				return
			}
			if cancelled {
				hardExit()
				return
			}
			s.cancel()
			cancelled = true
			TestEvent("signal")
		}
	}
}

// stdioBroken reports whether stdout or stderr is a pipe or socket
// whose reader has gone, recording which; where that cannot be told (not
// a file, or no poll), it reports true, as every SIGPIPE was taken
// before.
func (s *signals) stdioBroken() bool {
	found := false
	for _, p := range s.stdio {
		switch f := p.File(); {
		case f == nil:
			continue
		case readerGone(f):
			p.broken.Store(f)
			found = true
		}
	}
	return found || !canTellReaderGone
}

// brokenPipe records that stdout or stderr is a pipe nobody reads any
// more and cancels the run.
func (s *signals) brokenPipe() {
	s.piped.Store(true)
	s.cancel()
}

// pipeWriter passes writes to stdout or stderr and treats EPIPE as
// SIGPIPE (the signal reaches the loop asynchronously, maybe after the
// run ended). A quiet one (stderr) drops writes once the pipe broke: the
// output went to a reader that left, and messages about it would only
// add noise (or more EPIPE).
type pipeWriter struct {
	w      io.Writer
	s      *signals
	quiet  bool
	broken atomic.Pointer[os.File] // the file behind w, once its reader is known gone
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	if p.quiet && p.s.piped.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.broken.Store(p.File())
		p.s.brokenPipe()
	}
	return n, err
}

// File returns the *os.File behind the writer, if it is one (for
// terminal checks: the progress bar, colours).
func (p *pipeWriter) File() *os.File {
	f, _ := p.w.(*os.File)
	return f
}
