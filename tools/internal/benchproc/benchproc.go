//go:build linux

// Package benchproc is the process plumbing the benchmark tools share: a
// private ibsim, one measured run of a process under /usr/bin/time, and
// medians of the samples.
package benchproc

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// TimeBin measures each process on its own: its wall time and the
// kernel's peak RSS of that process alone (ru_maxrss of a child forked by
// a big Go process also counts the parent's pages it had before exec).
const TimeBin = "/usr/bin/time"

// Require returns an error naming the first of bins not installed.
func Require(bins ...string) error {
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not installed (run scripts/install-deps.sh)", b)
		}
	}
	return nil
}

// socketTimeout bounds how long StartIBSim waits for ibsim's socket.
const socketTimeout = 30 * time.Second

// IBSim is an ibsim started by StartIBSim.
type IBSim struct {
	// Sock is its IBSIM_SOCKNAME.
	Sock string
	cmd  *exec.Cmd
	log  bytes.Buffer
	done chan struct{}
}

// StartIBSim starts `ibsim args... netfile` in dir with IBSIM_SOCKNAME
// set to sock and returns once its control socket is up. Stop it with
// Stop.
func StartIBSim(dir, sock, netfile string, args ...string) (*IBSim, error) {
	s := &IBSim{Sock: sock, done: make(chan struct{})}
	s.cmd = exec.Command("ibsim", append(args, netfile)...)
	s.cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	if err := waitSocket(sock, socketTimeout, s.done); err != nil {
		s.Stop()
		return nil, fmt.Errorf("ibsim did not come up: %v\n%s", err, s.log.String())
	}
	return s, nil
}

// Stop kills the ibsim by its PID and waits for it to exit.
func (s *IBSim) Stop() {
	s.cmd.Process.Kill()
	<-s.done
}

// WaitSocket waits up to d until ibsim's control socket @sock:ctl shows
// in /proc/net/unix.
func WaitSocket(sock string, d time.Duration) error {
	return waitSocket(sock, d, nil)
}

func waitSocket(sock string, d time.Duration, exited <-chan struct{}) error {
	want := []byte("@" + sock + ":ctl@")
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/net/unix")
		if err == nil && bytes.Contains(b, want) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("ibsim exited before its socket @%s:ctl was up", sock)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no socket @%s:ctl after %v", sock, d)
}

// Sample is one measured run of a process.
type Sample struct {
	Wall   time.Duration // wall time seen by the caller (finer than time's %e)
	RSSKiB int64         // the process's peak RSS, by TimeBin
	Stdout []byte
	Stderr []byte
}

// ExitError reports a process that ran and exited with a non-zero status.
type ExitError struct {
	Code   int
	Stderr string // its standard error, trimmed
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("exit status %d: %s", e.Code, e.Stderr)
}

// Run runs bin with args in dir, with env added to the environment,
// under TimeBin and returns its sample. A process that exits non-zero
// still gives a full sample, with an *ExitError. Cancelling ctx kills the
// process group.
func Run(ctx context.Context, bin string, args, env []string, dir string) (Sample, error) {
	tf, err := os.CreateTemp(dir, "time*.out")
	if err != nil {
		return Sample{}, err
	}
	tf.Close()
	defer os.Remove(tf.Name())
	cmd := exec.CommandContext(ctx, TimeBin, append([]string{"-f", "%e %M", "-o", tf.Name(), bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	// Kill the measured process too, not only TimeBin.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	runErr := cmd.Run()
	s := Sample{Wall: time.Since(start), Stdout: o.Bytes(), Stderr: e.Bytes()}
	var ee *exec.ExitError
	if (runErr != nil && !errors.As(runErr, &ee)) || ctx.Err() != nil {
		return s, fmt.Errorf("%v: %s", cmp.Or(ctx.Err(), runErr), strings.TrimSpace(e.String()))
	}
	tb, err := os.ReadFile(tf.Name())
	if err != nil {
		return s, err
	}
	// A non-zero status adds a line before the format's.
	lines := strings.Split(strings.TrimSpace(string(tb)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) == 2 {
		s.RSSKiB, err = strconv.ParseInt(f[1], 10, 64)
	}
	if ee != nil {
		return s, &ExitError{Code: ee.ExitCode(), Stderr: strings.TrimSpace(e.String())}
	}
	if len(f) != 2 || err != nil {
		return s, fmt.Errorf("%s wrote %q", TimeBin, tb)
	}
	return s, nil
}

// Median is the median of xs (the upper one of an even count); xs is not
// changed. It panics on an empty xs.
func Median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// WriteFabric generates spec and writes it as a topology file, with
// ibsim console commands that set SymbolErrorCounter on every 37th
// node's port 1 (errors for the reports to show); it returns the node, switch and port counts and a CA to attach to.
func WriteFabric(spec, path string) (nodes, switches, ports int, host string, err error) {
	f, err := sim.Generate(spec, nil)
	if err != nil {
		return
	}
	tr, err := f.Attach("")
	if err != nil {
		return
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16})
	if err != nil {
		return
	}
	w, err := os.Create(path)
	if err != nil {
		return
	}
	bw := bufio.NewWriter(w)
	if err = topology.WriteTopology(bw, res.Fabric, topology.Options{}); err == nil {
		// Errors for the reports to show: every 37th node's port 1.
		for i, n := range res.Fabric.Nodes {
			if i%37 == 0 {
				fmt.Fprintf(bw, "do PerformanceSet %q[1] PortCounters.SymbolErrorCounter=%d\n", smp.NodeID(n.Type(), n.GUID()), i+1)
			}
		}
		err = bw.Flush()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	for _, n := range res.Fabric.Nodes {
		nodes++
		ports += n.NumPorts() + 1
		if n.IsSwitch() {
			switches++
		} else if host == "" {
			host = smp.NodeID(n.Type(), n.GUID())
		}
	}
	return
}

// RunOnce runs bin once under Run, with a 10-minute bound; exit status
// okCode (a tool's "found something" or "partial") is not an error.
func RunOnce(bin string, args, env []string, dir string, okCode int) (Sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := Run(ctx, bin, args, env, dir)
	if ee, ok := err.(*ExitError); ok && ee.Code == okCode {
		err = nil
	}
	return s, err
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg gives them, "?" where it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
