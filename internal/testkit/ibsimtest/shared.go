//go:build unix

package ibsimtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Shared returns the ibsim serving netfile (started with opts) that all
// the tests of this test binary share, starting it on first use. It is
// for tests that only read the fabric: nothing a test does through it
// (console commands, SMP or PMA Sets, an SM) may change what another test
// sees, so WithConsole is refused. Tests that change the fabric start
// their own with Start.
//
// A shared ibsim outlives the test that started it: it is killed when the
// test binary exits, however it exits (the kernel sends it SIGKILL when
// its parent dies), or by StopShared.
func Shared(t testing.TB, netfile string, opts ...Option) *Sim {
	t.Helper()
	return shared(t, netfile, "", nil, opts)
}

// SharedRouted is Shared for a fabric routed by one OpenSM sweep
// (RunOpenSM attached at osmHost with smArgs), run once when the ibsim
// starts; OpenSM's dump files are in the returned directory. Tests share
// it only for reading, as Shared's.
func SharedRouted(t testing.TB, netfile, osmHost string, smArgs []string, opts ...Option) (sim *Sim, dumpDir string) {
	t.Helper()
	s := shared(t, netfile, osmHost, smArgs, opts)
	return s, s.Dir
}

// SharedSA is Shared for a fabric with OpenSM running as a daemon (as
// StartOpenSM: attached at osmHost, with smArgs), started once with the
// ibsim, for the tests that only read it and ask its SA. It returns the
// ibsim and the path of OpenSM's log. OpenSM lives as long as the ibsim.
func SharedSA(t testing.TB, netfile, osmHost string, smArgs []string, opts ...Option) (sim *Sim, osmLog string) {
	t.Helper()
	s := shared(t, netfile, "daemon "+osmHost, smArgs, opts)
	if !s.smAlive() {
		t.Fatalf("shared OpenSM on %s attached at %q is gone:\n%s", netfile, osmHost, s.smLog())
	}
	return s, s.smLogPath
}

// sharedSim is one entry of the shared table: started once, by the first
// test that asks.
type sharedSim struct {
	once sync.Once
	sim  *Sim
	err  error
}

var sharedSims struct {
	sync.Mutex
	m map[string]*sharedSim
}

func shared(t testing.TB, netfile, osmHost string, smArgs []string, opts []Option) *Sim {
	t.Helper()
	Require(t)
	o := options{timeout: time.Minute}
	for _, f := range opts {
		f(&o)
	}
	if o.console {
		t.Fatal("ibsimtest: a shared ibsim has no console (a console command changes the fabric for every test): use Start")
	}
	abs, err := filepath.Abs(netfile)
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("%s %q %q %q %q", abs, o.args, osmHost, smArgs, o.preload)
	sharedSims.Lock()
	if sharedSims.m == nil {
		sharedSims.m = map[string]*sharedSim{}
	}
	e := sharedSims.m[key]
	if e == nil {
		e = &sharedSim{}
		sharedSims.m[key] = e
	}
	sharedSims.Unlock()
	e.once.Do(func() {
		e.sim, e.err = startShared(abs, o)
		if host, ok := strings.CutPrefix(osmHost, "daemon "); ok && e.err == nil {
			e.err = e.sim.startSharedOpenSM(host, smArgs)
		} else if e.err == nil && osmHost != "" {
			e.err = e.sim.runSharedOpenSM(osmHost, smArgs)
		}
	})
	if e.err != nil {
		t.Fatalf("shared ibsim %s: %v", key, e.err)
	}
	if !e.sim.Alive() {
		t.Fatalf("shared ibsim %s exited:\n%s", key, e.sim.Log())
	}
	return e.sim
}

// StopShared kills every shared ibsim and removes their directories; a
// TestMain may call it after m.Run. A later Shared starts them afresh.
func StopShared() {
	sharedSims.Lock()
	defer sharedSims.Unlock()
	for k, e := range sharedSims.m {
		if e.sim != nil {
			e.sim.stopSharedOpenSM()
			e.sim.stop()
			os.RemoveAll(e.sim.Dir)
		}
		delete(sharedSims.m, k)
	}
}

// lockedBuffer is ibsim's output of a shared ibsim.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const sharedDirPrefix = "ibsimtest-shared-"

var sweepShared sync.Once

// sharedDir makes a shared ibsim's directory, named for this process, on
// tmpfs where there is one. With no hook at a test binary's end (short of
// a TestMain calling StopShared), the first one made by a test binary
// removes those of processes that are gone.
func sharedDir() (string, error) {
	parents := []string{"/dev/shm", os.TempDir()}
	sweepShared.Do(func() {
		for _, p := range parents {
			old, _ := filepath.Glob(filepath.Join(p, sharedDirPrefix+"*"))
			for _, d := range old {
				pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), sharedDirPrefix), "-", 2)[0])
				if err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
					os.RemoveAll(d)
				}
			}
		}
	})
	pattern := fmt.Sprintf("%s%d-", sharedDirPrefix, os.Getpid())
	dir, err := os.MkdirTemp(parents[0], pattern)
	if err != nil {
		dir, err = os.MkdirTemp(parents[1], pattern)
	}
	return dir, err
}

// startShared starts a shared ibsim: like Start, but not owned by a test.
// Its directory holds OpenSM's dumps (SharedRouted); its output is kept
// in memory.
func startShared(netfile string, o options) (*Sim, error) {
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	bin, err := lookPath("ibsim")
	if err != nil {
		return nil, err
	}
	s := &Sim{
		Preload:  o.preload,
		SockName: fmt.Sprintf("ibt%d_%d", os.Getpid(), seq.Add(1)),
		NetFile:  netfile,
		Dir:      dir,
		exited:   make(chan struct{}),
		logBuf:   &lockedBuffer{},
	}
	args := append(append([]string{"-s", "-n"}, o.args...), netfile)
	LogLaunch("ibsim", args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), "IBSIM_SOCKNAME="+s.SockName)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = s.logBuf, s.logBuf
	cmd.SysProcAttr = ProcAttr()
	// Started from a thread that lives as long as the process: the
	// parent-death signal follows the thread that forked, not the process.
	onLauncherThread(func() { err = cmd.Start() })
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start ibsim: %w", err)
	}
	s.cmd = cmd
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitSocket(o.timeout); err != nil {
		s.stop()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// waitSocket waits until ibsim's control socket appears in /proc/net/unix.
func (s *Sim) waitSocket(timeout time.Duration) error {
	want := "@" + s.SockName + ":ctl@"
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile("/proc/net/unix"); err == nil && hasSocket(b, want) {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("ibsim %s exited during startup: %v\n%s", s.NetFile, s.cmd.ProcessState, s.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ibsim %s: %s did not appear in /proc/net/unix within %v\n%s", s.NetFile, want, timeout, s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runSharedOpenSM is RunOpenSM for a shared ibsim: its dumps go to s.Dir.
func (s *Sim) runSharedOpenSM(host string, smArgs []string) error {
	t := &setupT{}
	done := make(chan struct{})
	// RunOpenSM reports through t: run it where t.Fatal can end it.
	go func() {
		defer close(done)
		s.RunOpenSM(t, host, s.Dir, smArgs...)
	}()
	<-done
	t.cleanup()
	if t.failed {
		return fmt.Errorf("opensm on %s attached at %q: %s", s.NetFile, host, strings.Join(t.msgs, "\n"))
	}
	return nil
}

// startSharedOpenSM is StartOpenSM for a shared ibsim: OpenSM is started
// from the launcher thread (its parent-death signal then comes only when
// the test binary ends), logs to s.Dir and is killed with the ibsim.
func (s *Sim) startSharedOpenSM(host string, smArgs []string) error {
	bin, err := lookPath("opensm")
	if err != nil {
		return err
	}
	s.smLogPath = filepath.Join(s.Dir, "opensm.log")
	args := append([]string{"-F", "/dev/null", "-f", s.smLogPath, "-D", "0x43", "-d2", "-t", OpenSMTimeoutMS, "--dump_files_dir", s.Dir}, smArgs...)
	LogLaunch("opensm", args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(s.toolEnv(host), "OSM_TMP_DIR="+s.Dir, "OSM_CACHE_DIR="+s.Dir)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = ProcAttr()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	onLauncherThread(func() { err = cmd.Start() })
	if err != nil {
		return fmt.Errorf("start opensm: %w", err)
	}
	done := make(chan struct{})
	s.sm, s.smDone = cmd, done
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(2 * time.Minute) // a condition polled, generously
	for {
		b, _ := os.ReadFile(s.smLogPath)
		if bytes.Contains(b, []byte("SUBNET UP")) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("opensm %v exited:\n%s\nlog:\n%s", args, out, b)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("opensm %v: no SUBNET UP after 2 minutes\nlog:\n%s", args, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// smAlive reports whether s has a shared OpenSM still running.
func (s *Sim) smAlive() bool {
	if s.sm == nil {
		return false
	}
	select {
	case <-s.smDone:
		return false
	default:
		return true
	}
}

// smLog is the shared OpenSM's log, for a failure message.
func (s *Sim) smLog() string {
	b, _ := os.ReadFile(s.smLogPath)
	return string(b)
}

// stopSharedOpenSM kills the shared OpenSM of s, if it has one.
func (s *Sim) stopSharedOpenSM() {
	if s.sm == nil || s.sm.Process == nil {
		return
	}
	syscall.Kill(-s.sm.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.smDone:
	case <-time.After(10 * time.Second):
	}
}

// setupT is the testing.TB a shared ibsim's setup runs RunOpenSM with:
// it belongs to no test (the first test that asked must not own what all
// the others use), collects failures and runs cleanups at once.
type setupT struct {
	testing.TB // nil: only the methods below are used
	mu         sync.Mutex
	failed     bool
	msgs       []string
	cleanups   []func()
}

func (t *setupT) Helper() {}

func (t *setupT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *setupT) TempDir() string {
	dir, err := os.MkdirTemp("", "ibsimtest-setup-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *setupT) Fatal(args ...any) {
	t.mu.Lock()
	t.failed = true
	t.msgs = append(t.msgs, fmt.Sprint(args...))
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *setupT) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }

func (t *setupT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

var launcher struct {
	once sync.Once
	reqs chan func()
}

// onLauncherThread runs f on a goroutine locked to an OS thread that
// never exits.
func onLauncherThread(f func()) {
	launcher.once.Do(func() {
		launcher.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives until the process ends
			for f := range launcher.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	launcher.reqs <- func() { f(); close(done) }
	<-done
}
