//go:build unix

// Package ibsimtest runs a private ibsim for a test and the C tools
// (infiniband-diags, opensm) against it through libumad2sim.so.
//
// Every simulator gets its own IBSIM_SOCKNAME, is started in its own
// process group and is killed by PID (and group) in t.Cleanup; should the
// test process die first (killed), the kernel kills it too (ProcAttr).
//
// The OpenSM invocation that works under the shim (found by experiment
// with opensm 3.3.23 and ibsim 0.10):
//
//	SIM_HOST=<ca> OSM_TMP_DIR=<dir> OSM_CACHE_DIR=<dir> LD_PRELOAD=libumad2sim.so \
//	    opensm --once -F /dev/null -f <log> -D 0x43 --dump_files_dir <dir>
//
// It sweeps once (LIDs, LFTs, ports Active), writes
// opensm-lid-matrix.dump, opensm-lfts.dump, opensm-subnet.lst, opensm.fdbs
// and opensm.mcfdbs into the dump dir, and exits 0 in well under a second.
// "-F /dev/null" keeps it from reading a system opensm.conf. It must run
// attached to a CA (SIM_HOST): the SM port is the CA's first port.
package ibsimtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Shim is the LD_PRELOAD library that routes libibumad to ibsim.
const Shim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// ExampleNet is the directory of ibsim's example net files.
const ExampleNet = "/usr/share/doc/ibsim-utils/net-examples"

// Programs the harness needs.
var required = []string{"ibsim", "ibnetdiscover", "smpquery", "ibtracert", "saquery", "ibroute", "opensm"}

// Require skips t when ibsim, infiniband-diags, opensm or the shim are
// missing; with CI=true it fails instead, naming scripts/install-deps.sh.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, p := range required {
		if _, err := lookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if _, err := os.Stat(Shim); err != nil {
		missing = append(missing, Shim)
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("ibsim integration test needs %s (run scripts/install-deps.sh)", strings.Join(missing, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// lookPath also searches the sbin directories, where Debian puts the
// infiniband-diags tools, in case PATH lacks them. A tool found is
// remembered for the test binary's life: a package can run thousands of
// tools, and the PATH search (a stat per directory) cost a test binary
// under -race more CPU than parsing the tools' output.
func lookPath(name string) (string, error) {
	if p, ok := lookPathCache.Load(name); ok {
		return p.(string), nil
	}
	p, err := lookPathUncached(name)
	if err == nil {
		lookPathCache.Store(name, p)
	}
	return p, err
}

// lookPathCache maps a tool's name to the path lookPath found.
var lookPathCache sync.Map

func lookPathUncached(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// Option changes how Start runs ibsim.
type Option func(*options)

type options struct {
	console  bool
	args     []string
	timeout  time.Duration
	sockName string
	preload  string
}

// WithPreload sets the Sim's Preload: lib is preloaded before
// libumad2sim.so in every tool and OpenSM run on it (RMPPShim's).
func WithPreload(lib string) Option { return func(o *options) { o.preload = lib } }

// WithConsole runs ibsim with its console on a FIFO so the test can use
// (*Sim).Console.
func WithConsole() Option { return func(o *options) { o.console = true } }

// WithSockName runs ibsim under IBSIM_SOCKNAME name instead of a fresh
// one: a test that restarts ibsim gives the name of the one it stopped.
func WithSockName(name string) Option { return func(o *options) { o.sockName = name } }

// Nodes sets ibsim's node limit (-N).
func Nodes(n int) Option { return flag("-N", n) }

// Switches sets ibsim's switch limit (-S).
func Switches(n int) Option { return flag("-S", n) }

// Ports sets ibsim's port limit (-P).
func Ports(n int) Option { return flag("-P", n) }

// LinearCap sets ibsim's LinearFDBCap (-L); use 49152 to touch LFT blocks
// >= 480 with ibsim 0.10.
func LinearCap(n int) Option { return flag("-L", n) }

// StartTimeout bounds the wait for ibsim's control socket (default 10s).
func StartTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

func flag(f string, n int) Option {
	return func(o *options) { o.args = append(o.args, f, strconv.Itoa(n)) }
}

// Sim is a running ibsim owned by one test.
type Sim struct {
	// SockName is the private IBSIM_SOCKNAME.
	SockName string
	// NetFile is the net file ibsim was started with.
	NetFile string
	// Dir is the test's scratch directory (log, FIFO).
	Dir string
	// LogPath is the file holding ibsim's stdout and stderr.
	LogPath string
	// Preload is a library preloaded before libumad2sim.so in the tools
	// and OpenSMs started after it is set (RMPPShim's).
	Preload string

	cmd     *exec.Cmd
	exited  chan struct{}
	fifo    *os.File
	conMu   sync.Mutex
	logSeen int64
	logBuf  *lockedBuffer // a shared ibsim's output (LogPath is "")

	// a SharedSA's OpenSM: its process, its end, its log
	sm        *exec.Cmd
	smDone    chan struct{}
	smLogPath string
}

var seq atomic.Uint32

// Start runs `ibsim -s -n netfile` (with WithConsole: `ibsim -s netfile`
// reading a FIFO) under a private IBSIM_SOCKNAME, waits until its control
// socket appears in /proc/net/unix, and registers a cleanup that kills it.
// It fails the test if ibsim does not come up.
func Start(t testing.TB, netfile string, opts ...Option) *Sim {
	t.Helper()
	Require(t)
	o := options{timeout: time.Minute} // generous: a busy machine starts ibsim slowly
	for _, f := range opts {
		f(&o)
	}
	dir := t.TempDir()
	s := &Sim{
		Preload:  o.preload,
		SockName: fmt.Sprintf("ibt%d_%d", os.Getpid(), seq.Add(1)),
		NetFile:  netfile,
		Dir:      dir,
		LogPath:  filepath.Join(dir, "ibsim.log"),
		exited:   make(chan struct{}),
	}
	if o.sockName != "" {
		s.SockName = o.sockName
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()

	args := []string{"-s"}
	if !o.console {
		args = append(args, "-n")
	}
	args = append(args, o.args...)
	args = append(args, netfile)
	bin, err := lookPath("ibsim")
	if err != nil {
		t.Fatal(err)
	}
	LogLaunch("ibsim", args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), "IBSIM_SOCKNAME="+s.SockName)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = ProcAttr()
	if o.console {
		fifo := filepath.Join(dir, "console")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		// Read-write: never blocks, never sees EOF (EOF makes ibsim spin).
		s.fifo, err = os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = s.fifo
	}
	if err := cmd.Start(); err != nil {
		if s.fifo != nil {
			s.fifo.Close()
		}
		t.Fatalf("start ibsim: %v", err)
	}
	s.cmd = cmd
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)

	if err := s.waitSocket(o.timeout); err != nil {
		t.Fatal(err)
	}
	if o.console {
		// Wait for the first prompt so Console sees only its own output.
		if _, err := s.waitPrompt(0, o.timeout); err != nil {
			t.Fatalf("ibsim console: %v\n%s", err, s.Log())
		}
	}
	return s
}

// LaunchLogEnv names the environment variable that, set to a file name,
// makes the harness append a line to that file for every process it
// starts ("ibsim <args>", "<tool> <args>"), so that a test run's launches
// can be counted (scripts/test-time.sh does).
const LaunchLogEnv = "IBSIMTEST_LAUNCH_LOG"

// LogLaunch appends "name args..." to the file named by LaunchLogEnv, if
// it is set; tests that start a tool without the harness call it too.
// One write per line with O_APPEND: the test binaries of several
// packages can share the file.
func LogLaunch(name string, args ...string) {
	p := os.Getenv(LaunchLogEnv)
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	line := strings.Join(append([]string{name}, args...), " ")
	f.WriteString(strings.ReplaceAll(line, "\n", " ") + "\n")
}

// hasSocket reports whether /proc/net/unix content b lists path name.
func hasSocket(b []byte, name string) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) >= 8 && string(f[len(f)-1]) == name {
			return true
		}
	}
	return false
}

// stop kills ibsim (process group, then PID) and waits for it.
func (s *Sim) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		pid := s.cmd.Process.Pid
		syscall.Kill(-pid, syscall.SIGKILL)
		s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
	}
	if s.fifo != nil {
		s.fifo.Close()
		s.fifo = nil
	}
}

// Stop kills ibsim now and waits for it to end (the test's cleanup does
// so otherwise).
func (s *Sim) Stop() { s.stop() }

// PID returns ibsim's process id.
func (s *Sim) PID() int { return s.cmd.Process.Pid }

// Alive reports whether ibsim is still running.
func (s *Sim) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Log returns everything ibsim has written so far.
func (s *Sim) Log() string {
	if s.logBuf != nil {
		return s.logBuf.String()
	}
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// Console sends one console command (needs WithConsole) and returns the
// output it produced, without the trailing prompt.
func (s *Sim) Console(t testing.TB, command string) string {
	t.Helper()
	if s.fifo == nil {
		t.Fatal("ibsimtest: Console needs WithConsole()")
	}
	if strings.ContainsAny(command, "\n") || len(command) > 127 {
		t.Fatalf("ibsimtest: bad console command %q", command)
	}
	s.conMu.Lock()
	defer s.conMu.Unlock()
	start := s.logSeen
	if _, err := s.fifo.WriteString(command + "\n"); err != nil {
		t.Fatalf("console %q: %v", command, err)
	}
	out, err := s.waitPrompt(start, time.Minute)
	if err != nil {
		t.Fatalf("console %q: %v\n%s", command, err, s.Log())
	}
	return out
}

const prompt = "sim> "

// waitPrompt waits until the log grows past start and ends with a prompt;
// it returns the new bytes without that prompt.
func (s *Sim) waitPrompt(start int64, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(s.LogPath)
		if err == nil && int64(len(b)) > start {
			nb := b[start:]
			if bytes.HasSuffix(nb, []byte(prompt)) {
				s.logSeen = int64(len(b))
				return string(nb[:len(nb)-len(prompt)]), nil
			}
		}
		if !s.Alive() {
			return "", errors.New("ibsim exited")
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no prompt after %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cleanEnv is the environment without variables that would redirect the
// tools to another simulator.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "IBSIM_SOCKNAME", "IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "SIM_HOST", "SIM_SET_ISSM", "LD_PRELOAD":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Env returns the environment a tool or client needs to reach this ibsim
// (IBSIM_SOCKNAME, no inet-mode variables, no SIM_HOST).
func (s *Sim) Env() []string {
	return append(cleanEnv(), "IBSIM_SOCKNAME="+s.SockName)
}

// toolEnv adds the shim and the attach point.
func (s *Sim) toolEnv(host string) []string {
	preload := Shim
	if s.Preload != "" {
		preload = s.Preload + " " + Shim
	}
	env := append(s.Env(), "LD_PRELOAD="+preload)
	if host != "" {
		env = append(env, "SIM_HOST="+host)
	}
	return env
}

// RunTool runs a C tool (ibnetdiscover, smpquery, ibtracert, saquery,
// ibroute, ...) under libumad2sim.so attached at host ("" = the net file's
// first node), in a private working directory (the shim writes
// ./sys-<pid>/ there). Unless args set one (-t/--timeout), the tool gets
// a generous MAD timeout (DiagTimeoutMS): its default makes a busy
// machine look like a dead fabric ("Failed to resolve self"). It returns
// the output and exit status; it fails the test only if the tool cannot
// be started or runs over 60s.
func (s *Sim) RunTool(t testing.TB, host, name string, args ...string) (stdout, stderr []byte, exit int) {
	t.Helper()
	bin, err := lookPath(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s.run(t, host, nil, bin, WithDiagTimeout(args)...)
}

// DiagTimeoutMS is the MAD timeout (-t) RunTool gives the infiniband-diags
// tools: generous and fixed, since ibsim answers in microseconds unless
// the machine is busy.
const DiagTimeoutMS = 3000

// WithDiagTimeout returns args with "-t DiagTimeoutMS" in front unless
// they already set a timeout (-t N, -tN, --timeout N, --timeout=N).
func WithDiagTimeout(args []string) []string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-t") || a == "--timeout" || strings.HasPrefix(a, "--timeout=") {
			return args
		}
	}
	return append([]string{"-t", strconv.Itoa(DiagTimeoutMS)}, args...)
}

func (s *Sim) run(t testing.TB, host string, extraEnv []string, bin string, args ...string) (stdout, stderr []byte, exit int) {
	t.Helper()
	LogLaunch(filepath.Base(bin), args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(s.toolEnv(host), extraEnv...)
	cmd.Dir = ScratchDir(t)
	cmd.SysProcAttr = ProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out\nstderr:\n%s", bin, args, e.Bytes())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return o.Bytes(), e.Bytes(), exit
}

// RunOpenSM runs one OpenSM sweep (opensm --once) attached at host, which
// must be a CA, to assign LIDs, program LFTs and bring ports Active. The
// dump files land in dumpDir. It returns OpenSM's log and fails the test
// when OpenSM fails.
func (s *Sim) RunOpenSM(t testing.TB, host, dumpDir string, extraArgs ...string) []byte {
	t.Helper()
	bin, err := lookPath("opensm")
	if err != nil {
		t.Fatalf("opensm: %v", err)
	}
	tmp := ScratchDir(t)
	logPath := filepath.Join(tmp, "opensm.log")
	// -t: a MAD timeout five times OpenSM's 200 ms default, so a busy
	// machine does not make it give up on a live node.
	args := []string{"--once", "-F", "/dev/null", "-f", logPath, "-D", "0x43", "-t", OpenSMTimeoutMS, "--dump_files_dir", dumpDir}
	args = append(args, extraArgs...)
	env := []string{"OSM_TMP_DIR=" + tmp, "OSM_CACHE_DIR=" + tmp}
	out, errOut, exit := s.run(t, host, env, bin, args...)
	log, _ := os.ReadFile(logPath)
	if exit != 0 || !bytes.Contains(log, []byte("SUBNET UP")) {
		t.Fatalf("opensm %v: exit %d\nstdout:\n%s\nstderr:\n%s\nlog:\n%s", args, exit, out, errOut, log)
	}
	return log
}

// OpenSMTimeoutMS is the transaction timeout (-t) RunOpenSM gives OpenSM.
const OpenSMTimeoutMS = "1000"

// ScratchDir returns a new directory for a tool run under the shim (its
// working directory, OpenSM's cache), removed when t ends. It is on
// tmpfs (/dev/shm) where there is one: libumad2sim.so builds a fake sysfs
// tree (./sys-<pid>/, some 300 files and directories) in the working
// directory of every process it is preloaded into and removes it at exit,
// which on a disk file system costs ten times the query itself (0.2 s of
// a saquery's 0.22 s on ext4; 0.02 s in all on tmpfs).
func ScratchDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ibsimtest-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// WriteNetFile writes a net file into a fresh temp dir and returns its path.
func WriteNetFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "net")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Args adds command-line arguments for ibsim (before the net file).
func Args(args ...string) Option {
	return func(o *options) { o.args = append(o.args, args...) }
}
