//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

// TestSharedIBSim treats one ibsim as a shared peer (issue 13): whatever
// the three tools go through (a stopped ibsim, the console's X, signals
// of every kind, a reader that leaves the pipe, -t 1), ibsim stays up
// and every client slot comes back. It builds the three commands once
// and serves a 560-node fat tree, whose topology (172 KB) is more than
// a pipe holds (64 KiB), so that a run into "head -1" is still writing
// when its reader leaves. A run is caught under way by the test hook
// that holds it at its first answer until the signal comes
// (cliapp.TestHoldEnv), not by the machine being slow, so the fabric
// need not be big for that. (It was a 2,144-node tree; the 33 complete
// runs of the tool on it were most of the test's CPU.)
func TestSharedIBSim(t *testing.T) {
	ibsimtest.Require(t)
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	t.Parallel() // its own ibsim and binaries
	bins := buildTools(t, "ibdiscover", "ibhops", "ibavtrack")
	net := generated(t, "fattree:levels=2,radix=32")
	s := ibsimtest.Start(t, net, ibsimtest.WithConsole(),
		ibsimtest.Nodes(3000), ibsimtest.Switches(500), ibsimtest.Ports(20000))
	env := s.Env()
	ibsimArgs := []string{"--ibsim", "--ibsim-sockname", s.SockName}

	// afterwards checks that ibsim is up with every slot free.
	afterwards := func(t *testing.T, what string) {
		t.Helper()
		if !s.Alive() {
			t.Fatalf("%s: ibsim exited:\n%s", what, s.Log())
		}
		if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
			t.Fatalf("%s: slots still taken:\n%s", what, out)
		}
	}

	t.Run("head -1", func(t *testing.T) {
		for i := range 12 {
			code := runIntoClosedPipe(t, bins["ibdiscover"], env, ibsimArgs...)
			if code != -int(syscall.SIGPIPE) {
				t.Fatalf("run %d: exit %d, want death by SIGPIPE as a C tool", i+1, code)
			}
		}
		afterwards(t, "12 runs into head -1")
		p := startTool(t, bins["ibdiscover"], env, ibsimArgs...)
		if code := p.wait(t); code != 0 {
			t.Fatalf("full run after the head -1 runs: exit %d\n%s", code, strings.Join(p.stderrLines(), "\n"))
		}
		if n := checkTopology(t, p.stdout.Bytes()); n != 560 {
			t.Fatalf("full run found %d nodes, want 560", n)
		}
	})

	// watch | head -1: the reader leaves after the first change line; the
	// watch ends then (by SIGPIPE, as a C tool would), not at its next
	// change line an hour later, and its slot comes back.
	// (An ibsim of its own, where OpenSM has run: watch needs LIDs.)
	t.Run("watch head -1", func(t *testing.T) {
		ws := ibsimtest.Start(t, ibsimtest.ExampleNet+"/net.2sw2path4hca", ibsimtest.WithConsole())
		ws.RunOpenSM(t, "Hca1", t.TempDir())
		args := []string{"watch", "--ibsim", "--ibsim-sockname", ws.SockName, "--interval", "3600", "2", "3"}
		if code := runIntoClosedPipe(t, bins["ibavtrack"], ws.Env(), args...); code != -int(syscall.SIGPIPE) {
			t.Fatalf("exit %d, want death by SIGPIPE", code)
		}
		if out := ws.Console(t, "Attached"); strings.Contains(out, "Client") {
			t.Fatalf("slot still taken after watch | head -1:\n%s", out)
		}
	})

	// held: the tools' environment with the test hook that holds a run
	// at its first answer until it is cancelled (cliapp.TestHoldEnv), so
	// a signal surely finds the run under way, on a fast machine too.
	held := append(append([]string(nil), env...), cliapp.TestHoldEnv+"=answer")

	// Each tool, stopped mid-run by each signal while ibsim is stopped
	// (SIGSTOP): it must end (130) without ibsim's help, and its
	// DISCONNECT must free the slot once ibsim continues.
	tools := [][]string{
		{"ibdiscover"},
		{"ibhops"},
		{"ibavtrack", "links"},
		{"ibavtrack", "path", "1", "2"},
		{"ibavtrack", "watch", "1", "2"},
	}
	for _, tool := range tools {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
			name := strings.Join(tool, " ") + " " + sig.String()
			t.Run(name, func(t *testing.T) {
				args := append(append(append([]string{}, tool[1:]...), ibsimArgs...), "-t", "60000")
				p := startTool(t, bins[tool[0]], held, args...)
				p.waitEvent(t, "hold") // attached, an SMP answered, held until the signal
				if attachedSlot(t, s) < 0 {
					t.Fatalf("%s held mid-run, but ibsim lists no client", tool[0])
				}
				syscall.Kill(s.PID(), syscall.SIGSTOP)
				p.cmd.Process.Signal(sig)
				code := p.wait(t)
				syscall.Kill(s.PID(), syscall.SIGCONT)
				if code != exitcode.Interrupted {
					t.Fatalf("exit %d, want %d\n%s", code, exitcode.Interrupted, strings.Join(p.stderrLines(), "\n"))
				}
				t.Logf("stderr: %s", strings.Join(p.stderrLines(), "\n"))
				afterwards(t, name)
			})
		}
	}

	// Two SIGINTs against a stopped ibsim: the second exits at once; the
	// one DISCONNECT (written by whichever got there first) frees the
	// slot once ibsim continues.
	t.Run("second SIGINT", func(t *testing.T) {
		p := startTool(t, bins["ibdiscover"], held, append(ibsimArgs, "-t", "60000")...)
		p.waitEvent(t, "hold")
		syscall.Kill(s.PID(), syscall.SIGSTOP)
		p.cmd.Process.Signal(os.Interrupt)
		// Signals of one kind merge while pending: send the second
		// once the first was taken.
		p.waitEvent(t, "signal")
		p.cmd.Process.Signal(os.Interrupt)
		code := p.wait(t)
		syscall.Kill(s.PID(), syscall.SIGCONT)
		if code != exitcode.Interrupted {
			t.Fatalf("exit %d, want %d\n%s", code, exitcode.Interrupted, strings.Join(p.stderrLines(), "\n"))
		}
		afterwards(t, "two SIGINTs")
	})

	// SIGABRT (kill -ABRT) mid-run, ibsim stopped: the tool still dies
	// of it (the runtime's dump, status 2, or the signal itself), but
	// writes DISCONNECT first, so the slot comes back once ibsim
	// continues (it used to stay taken).
	t.Run("SIGABRT", func(t *testing.T) {
		p := startTool(t, bins["ibdiscover"], held, append(ibsimArgs, "-t", "60000")...)
		p.waitEvent(t, "hold")
		syscall.Kill(s.PID(), syscall.SIGSTOP)
		p.cmd.Process.Signal(syscall.SIGABRT)
		code := p.wait(t)
		syscall.Kill(s.PID(), syscall.SIGCONT)
		if code != 2 && code != -int(syscall.SIGABRT) {
			t.Fatalf("exit %d, want the runtime's SIGABRT exit (2) or death by SIGABRT\n%s", code, strings.Join(p.stderrLines(), "\n"))
		}
		waitNoClient(t, s)
		afterwards(t, "SIGABRT")
	})

	// ibsim stopped before the tool starts: the tool gives up on its
	// CONNECT at SIGINT (or SIGQUIT, Ctrl-\, which would otherwise kill
	// a Go program at once); ibsim, continued, must not find the tool's
	// socket gone (it used to exit), and the slot comes back.
	t.Run("CONNECT to a stopped ibsim", func(t *testing.T) {
		for i, tool := range tools {
			sig := os.Signal(os.Interrupt)
			if i%2 == 1 {
				sig = syscall.SIGQUIT
			}
			syscall.Kill(s.PID(), syscall.SIGSTOP)
			args := append(append([]string{}, tool[1:]...), ibsimArgs...)
			p := startTool(t, bins[tool[0]], env, args...)
			p.waitEvent(t, "connect") // the CONNECT waits in the stopped ibsim's queue
			p.cmd.Process.Signal(sig)
			code := p.wait(t)
			syscall.Kill(s.PID(), syscall.SIGCONT)
			if code != exitcode.Interrupted {
				t.Fatalf("%s: exit %d, want %d\n%s", tool[0], code, exitcode.Interrupted, strings.Join(p.stderrLines(), "\n"))
			}
			waitNoClient(t, s)
			afterwards(t, strings.Join(tool, " "))
		}
	})

	// The console's X takes the slot away in the middle of a run: ibsim
	// no longer reads the tool's requests. SIGINT still ends the run.
	t.Run("console X", func(t *testing.T) {
		p := startTool(t, bins["ibdiscover"], held, append(ibsimArgs, "-s", "-t", "60000")...)
		p.waitEvent(t, "hold")
		slot := attachedSlot(t, s)
		if slot < 0 {
			t.Fatal("ibdiscover held mid-run, but ibsim lists no client")
		}
		s.Console(t, fmt.Sprintf("X %d", slot))
		p.cmd.Process.Signal(os.Interrupt)
		code := p.wait(t)
		checkInterrupted(t, p, code, true)
		afterwards(t, "X")
	})

	// -t 1: the old client gave up on CONNECT after 1 ms and closed its
	// socket before ibsim answered, and ibsim exited. Runs in a row and
	// four at once.
	t.Run("-t 1", func(t *testing.T) {
		for i := range 8 {
			p := startTool(t, bins["ibdiscover"], env, append(ibsimArgs, "-t", "1")...)
			checkShortTimeoutRun(t, p, fmt.Sprintf("run %d", i+1))
		}
		for round := range 3 {
			var ps []*proc
			for range 4 {
				ps = append(ps, startTool(t, bins["ibdiscover"], env, append(ibsimArgs, "-t", "1")...))
			}
			for _, p := range ps {
				checkShortTimeoutRun(t, p, fmt.Sprintf("round %d", round))
			}
		}
		afterwards(t, "-t 1 runs")
	})

	// Every slot is free: ten clients at once, and an eleventh is told
	// why it cannot have one.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cs []*ibsim.Client
	for i := range ibsim.MaxClients {
		c, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("client %d of %d at once: %v", i+1, ibsim.MaxClients, err)
		}
		cs = append(cs, c)
	}
	p := startTool(t, bins["ibdiscover"], env, ibsimArgs...)
	code := p.wait(t)
	if msg := strings.Join(p.stderrLines(), "\n"); code != exitcode.Fatal || !strings.Contains(msg, "ibsim has no free client slot: 10 in use") {
		t.Errorf("11th client: exit %d: %s", code, msg)
	}
	for _, c := range cs {
		c.Close()
	}
	afterwards(t, "ten clients")
}

// checkShortTimeoutRun checks a run with -t 1: on a busy machine SMPs,
// even the first, may time out, so complete, partial and "start node did
// not answer" are all fine; anything else is not.
func checkShortTimeoutRun(t *testing.T, p *proc, what string) {
	t.Helper()
	code := p.wait(t)
	msg := strings.Join(p.stderrLines(), "\n")
	switch {
	case code == 0, code == exitcode.Partial:
	case code == exitcode.Fatal && strings.Contains(msg, "start node did not answer"):
	default:
		t.Fatalf("%s: exit %d\n%s", what, code, msg)
	}
}

// buildTools returns the named commands (siblings of this package),
// each built once per test binary.
func buildTools(t *testing.T, names ...string) map[string]string {
	t.Helper()
	bins := map[string]string{}
	for _, name := range names {
		bins[name] = clitest.Build(t, "../"+name)
	}
	return bins
}

// runIntoClosedPipe runs bin with stdout into a pipe whose reader takes
// one line and leaves (like "| head -1"); it returns the exit status or
// -signal.
func runIntoClosedPipe(t *testing.T, bin string, env []string, args ...string) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if line == "" {
		t.Errorf("no line on stdout")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the tool did not end within 30s of its reader leaving")
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr after the reader left: %q", stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

var attachedLine = regexp.MustCompile(`(?m)^Client (\d+): pid (\d+) `)

// attachedSlot returns the slot of the only attached client, or -1.
func attachedSlot(t *testing.T, s *ibsimtest.Sim) int {
	t.Helper()
	m := attachedLine.FindStringSubmatch(s.Console(t, "Attached"))
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitNoClient waits (up to 20s) until ibsim lists no client: the
// lingerer of a given-up CONNECT released the slot.
func waitNoClient(t *testing.T, s *ibsimtest.Sim) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if !strings.Contains(s.Console(t, "Attached"), "Client") {
			return
		}
	}
	t.Fatalf("a slot stayed taken for 20s:\n%s", s.Console(t, "Attached"))
}
