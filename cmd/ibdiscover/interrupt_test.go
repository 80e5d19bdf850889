//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

// slowFabric is a 3-level fat tree (1,344 nodes) behind the latency
// model: 1ms per SMA and a one-packet VL15 buffer make a discovery take
// seconds (4.4s here; 200us per SMA takes only 0.26s with the default
// window of 16), long enough to interrupt it.
const slowFabric = "fattree:levels=3,radix=16;Latency hop=1us sma=1ms vl15=1"

// buildTool returns the ibdiscover binary, built once per test binary.
func buildTool(t *testing.T) string {
	t.Helper()
	return clitest.Build(t, ".")
}

// proc is an ibdiscover process whose stderr is read line by line.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string   // stderr lines, closed at EOF
	eof    chan struct{} // closed when stderr reached EOF
	events chan string   // the test hook's events (cliapp.TestEvent), closed at EOF
	mu     sync.Mutex
	stderr []string
}

// startTool starts bin with args and the test hook enabled
// (cliapp.TestHookEnv); the process is killed at the end of the test if
// it is still running.
func startTool(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan string, 4096), eof: make(chan struct{}), events: make(chan string, 16)}
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = append(append([]string(nil), env...), cliapp.TestHookEnv+"=3")
	p.cmd.Stdout = &p.stdout
	r, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	hr, hw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.ExtraFiles = []*os.File{hw} // fd 3
	err = p.cmd.Start()
	hw.Close()
	if err != nil {
		hr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	go func() {
		defer hr.Close()
		sc := bufio.NewScanner(hr)
		for sc.Scan() {
			p.events <- sc.Text()
		}
		close(p.events)
	}()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, r)
		close(p.lines)
		close(p.eof)
	}()
	return p
}

// waitEvent waits for the test hook's event name; it fails the test if
// the process ends first or nothing comes within a minute.
func (p *proc) waitEvent(t *testing.T, name string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatalf("ibdiscover ended before the %q event; stderr:\n%s", name, strings.Join(p.stderrLines(), "\n"))
			}
			if ev == name {
				return
			}
		case <-timeout:
			t.Fatalf("no %q event within a minute", name)
		}
	}
}

// wait waits for the process (at most a minute) and returns its exit
// status, or -signal when a signal killed it. Stderr is read to its end
// before Wait, which closes the pipe (reading after that loses lines).
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.eof:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		p.cmd.Wait()
		t.Fatal("ibdiscover did not exit within a minute of the signal")
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatal(err)
	return 0
}

func (p *proc) stderrLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stderr...)
}

// Lines of ibnetdiscover's topology format.
var (
	topoComment = regexp.MustCompile(`^#( .*)?$`)
	topoSetting = regexp.MustCompile(`^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x[0-9a-f]+(\([0-9a-f]+\))?$`)
	topoHeader  = regexp.MustCompile(`^(Switch|Ca|Rt)\t(\d+) "([SHR]-[0-9a-f]{16})"\t\t# ".*"( (base|enhanced) port 0 lid \d+ lmc \d+)?$`)
	topoPort    = regexp.MustCompile(`^\[(\d+)\](\([0-9a-f]+\))?\s+"[SHR]-[0-9a-f]{16}"\[\d+\](\([0-9a-f]+\))?\s+# .* lid \d+ (\d+x[A-Z0-9]+|\?+)$`)
	interrupted = regexp.MustCompile(`^ibdiscover: interrupted: partial result printed \((\d+) nodes, \d+ SMPs\)$`)
)

// checkTopology checks that out is a well-formed topology file (every
// line complete and of a known kind, port lines only inside a node block
// and numbered within it, no node twice) and returns its node count.
func checkTopology(t *testing.T, out []byte) int {
	t.Helper()
	if len(out) == 0 || out[len(out)-1] != '\n' {
		t.Fatalf("stdout does not end with a complete line (%d bytes): %q", len(out), tail(out))
	}
	if !bytes.HasPrefix(out, []byte("#\n# Topology file: generated on ")) {
		t.Fatalf("stdout has no topology header:\n%s", head(out))
	}
	nodes := 0
	numPorts := -1 // ports of the current node block; -1: none open
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		switch {
		case line == "":
			numPorts = -1
		case topoComment.MatchString(line), topoSetting.MatchString(line):
		case topoHeader.MatchString(line):
			m := topoHeader.FindStringSubmatch(line)
			if seen[m[3]] {
				t.Errorf("line %d: node %s printed twice", i+1, m[3])
			}
			seen[m[3]] = true
			numPorts, _ = strconv.Atoi(m[2])
			nodes++
		case topoPort.MatchString(line):
			n, _ := strconv.Atoi(topoPort.FindStringSubmatch(line)[1])
			if numPorts < 0 || n < 1 || n > numPorts {
				t.Errorf("line %d: port line outside a node block or out of range: %q", i+1, line)
			}
		default:
			t.Errorf("line %d: not a topology line: %q", i+1, line)
		}
	}
	return nodes
}

func head(b []byte) []byte {
	if len(b) > 400 {
		return b[:400]
	}
	return b
}

func tail(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

// checkInterrupted checks an interrupted run: exit 130, a well-formed
// partial topology on stdout with at least one node and as many nodes as
// the message says, and stderr ending in the one interrupted line after
// nothing but progress lines (progress: -s was given).
func checkInterrupted(t *testing.T, p *proc, code int, progress bool) {
	t.Helper()
	errLines := p.stderrLines()
	all := strings.Join(errLines, "\n")
	if code != exitcode.Interrupted {
		t.Fatalf("exit %d, want %d (interrupted)\nstderr tail:\n%s", code, exitcode.Interrupted, tail([]byte(all)))
	}
	if strings.Contains(all, "panic") || strings.Contains(all, "goroutine ") {
		t.Fatalf("stack trace on stderr:\n%s", tail([]byte(all)))
	}
	if len(errLines) == 0 {
		t.Fatal("stderr empty")
	}
	last := errLines[len(errLines)-1]
	m := interrupted.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last stderr line %q is not the interrupted message", last)
	}
	for _, l := range errLines[:len(errLines)-1] {
		if strings.HasPrefix(l, "ibdiscover: interrupted: ") && (strings.HasSuffix(l, " left as it was") || strings.HasSuffix(l, " left as they were")) {
			continue // an output file the run did not replace
		}
		if !progress || !strings.HasPrefix(l, "DR path ") {
			t.Fatalf("stderr has more than the interrupted line: %q", l)
		}
	}
	nodes := checkTopology(t, p.stdout.Bytes())
	if nodes < 1 {
		t.Fatalf("partial topology has no node block:\n%s", head(p.stdout.Bytes()))
	}
	if want, _ := strconv.Atoi(m[1]); nodes != want {
		t.Errorf("stdout has %d node blocks, stderr says %d nodes", nodes, want)
	}
	t.Logf("interrupted after %d nodes", nodes)
}

// TestInterruptEmbedded: SIGINT (or SIGTERM) in the middle of a slow
// discovery on the embedded simulator prints what was found so far and
// exits 130 with one line on stderr; with an output file, the file keeps
// what it held, the partial topology goes to stdout, and nothing else is
// left in its directory.
func TestInterruptEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTool(t)
	env := os.Environ()
	tests := []struct {
		name     string
		sig      os.Signal
		progress bool // -s: progress lines may precede the interrupted line
		file     bool // write into a topology file
	}{
		{name: "SIGINT", sig: os.Interrupt},
		{name: "SIGTERM", sig: syscall.SIGTERM},
		{name: "SIGINT after progress lines", sig: os.Interrupt, progress: true},
		{name: "SIGINT into a file", sig: os.Interrupt, file: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--sim", slowFabric}
			if tt.progress {
				args = append(args, "-s")
			}
			var outPath, cachePath string
			if tt.file {
				outPath = filepath.Join(t.TempDir(), "topo.txt")
				cachePath = filepath.Join(filepath.Dir(outPath), "c.cache")
				for _, f := range []string{outPath, cachePath} {
					if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				args = append(args, "--cache", cachePath, outPath)
			}
			// Interrupt once discovery is under way: when the test hook
			// says the start node answered (-s lines come only when
			// discovery ends: they are ibnetdiscover's, replayed).
			p := startTool(t, bin, env, args...)
			p.waitEvent(t, "node")
			if err := p.cmd.Process.Signal(tt.sig); err != nil {
				t.Fatalf("signal: %v (exited too early?)", err)
			}
			code := p.wait(t)
			if tt.file {
				// The old file is kept; the partial topology went to
				// stdout; nothing else is left in the directory.
				for _, f := range []string{outPath, cachePath} {
					b, err := os.ReadFile(f)
					if err != nil || string(b) != "old\n" {
						t.Errorf("interrupted run replaced %s: %q %v", f, head(b), err)
					}
				}
				left, _ := filepath.Glob(filepath.Join(filepath.Dir(outPath), "*"))
				hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(outPath), ".*"))
				if len(left) != 2 || len(hidden) != 0 {
					t.Errorf("files left beside the output: %v %v", left, hidden)
				}
			}
			checkInterrupted(t, p, code, tt.progress)
		})
	}
}

// TestInterruptIBSim: SIGINT in the middle of a discovery through a real
// ibsim prints the partial topology, exits 130 and releases the ibsim
// slot: afterwards no client is attached, all ten slots can be taken at
// once, and twelve more runs in a row succeed.
func TestInterruptIBSim(t *testing.T) {
	ibsimtest.Require(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTool(t)
	net := generated(t, "fattree:levels=3,radix=16")
	s := ibsimtest.Start(t, net, ibsimtest.WithConsole(),
		ibsimtest.Nodes(2000), ibsimtest.Switches(500), ibsimtest.Ports(10000))
	env := s.Env()

	for round := range 3 {
		// ibsim answers fast (1,344 nodes in about 0.6s): interrupt
		// when the start node answered.
		p := startTool(t, bin, env, "--ibsim", "--ibsim-sockname", s.SockName, "-s")
		p.waitEvent(t, "node")
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatalf("round %d: signal: %v", round, err)
		}
		code := p.wait(t)
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			checkInterrupted(t, p, code, true)
		})
		if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
			t.Fatalf("round %d: ibsim slot still attached after the interrupt:\n%s", round, out)
		}
	}

	// Every slot is free: ten clients at once.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cs []*ibsim.Client
	for i := range ibsim.MaxClients {
		c, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("client %d of %d at once: %v", i+1, ibsim.MaxClients, err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		c.Close()
	}
	// And more than ten runs in a row.
	for i := range 12 {
		o, e, code := runOurs(t, "--ibsim", "--ibsim-sockname", s.SockName, "-hops", "0")
		if code != 0 {
			t.Fatalf("run %d after the interrupts: exit %d: %s", i+1, code, e)
		}
		if n := checkTopology(t, o); n != 1 {
			t.Fatalf("run %d: -hops 0 printed %d nodes, want 1", i+1, n)
		}
	}
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slots leaked:\n%s", out)
	}
}
