//go:build linux

package ibsimtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShared: one ibsim per net file and options, whichever test asks;
// the routed one is another ibsim, swept once by OpenSM, with its dumps.
func TestShared(t *testing.T) {
	a := Shared(t, exampleNet)
	b := Shared(t, exampleNet)
	if a != b {
		t.Fatal("two shared ibsims for the same net file")
	}
	if c := Shared(t, exampleNet, Nodes(100)); c == a {
		t.Fatal("other options, same shared ibsim")
	}
	out, errOut, exit := a.RunTool(t, "Hca2", "smpquery", "-D", "portinfo", "0")
	if exit != 0 || !strings.Contains(string(out), "LinkState:.......................Initialize") {
		t.Fatalf("unrouted shared ibsim: exit %d\n%s%s", exit, out, errOut)
	}
	r, dump := SharedRouted(t, exampleNet, "Hca1", nil)
	if r2, _ := SharedRouted(t, exampleNet, "Hca1", nil); r2 != r || r == a {
		t.Fatal("SharedRouted: not one ibsim of its own")
	}
	if fi, err := os.Stat(filepath.Join(dump, "opensm-lid-matrix.dump")); err != nil || fi.Size() == 0 {
		t.Errorf("no OpenSM dump: %v", err)
	}
	out, errOut, exit = r.RunTool(t, "Hca2", "ibtracert", "3", "1")
	if exit != 0 {
		t.Fatalf("ibtracert on the routed shared ibsim: exit %d\n%s%s", exit, out, errOut)
	}
}

// TestSharedDiesWithTheTestBinary: a test binary killed by SIGKILL (no
// cleanup, no TestMain) leaves no shared ibsim behind.
func TestSharedDiesWithTheTestBinary(t *testing.T) {
	if os.Getenv("IBSIMTEST_SHARED_CHILD") == "1" {
		s := Shared(t, exampleNet)
		os.Stdout.WriteString("ibsim pid " + strconv.Itoa(s.PID()) + "\n")
		time.Sleep(time.Minute) // killed by the parent long before
		return
	}
	Require(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestSharedDiesWithTheTestBinary$")
	cmd.Env = append(os.Environ(), "IBSIMTEST_SHARED_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "ibsim pid "); ok {
				line <- p
				return
			}
		}
		close(line)
	}()
	var pid int
	select {
	case p, ok := <-line:
		if pid, err = strconv.Atoi(p); !ok || err != nil {
			t.Fatalf("the child printed no ibsim PID (%q)", p)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the child did not start its shared ibsim within 2 minutes")
	}
	// a pidfd turns readable when ibsim exits (gone, or a zombie nobody
	// reaps): the test waits for that, not for time
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of the shared ibsim %d: %v", pid, err)
	}
	defer unix.Close(pfd)
	cmd.Process.Kill()
	cmd.Wait()
	fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 30_000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("poll on the pidfd of ibsim %d: %v", pid, err)
		}
		if n == 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("shared ibsim %d still running 30 s after its test binary was killed", pid)
		}
		return
	}
}

// TestSharedDirSweep: a shared ibsim's directory is named for its
// process, and one left by a process that is gone (killed, no StopShared)
// is removed by the next test binary's first shared ibsim.
func TestSharedDirSweep(t *testing.T) {
	stale, err := os.MkdirTemp("/dev/shm", sharedDirPrefix+strconv.Itoa(1<<30)+"-") // above any pid_max
	if err != nil {
		stale, err = os.MkdirTemp("", sharedDirPrefix+strconv.Itoa(1<<30)+"-")
		if err != nil {
			t.Fatal(err)
		}
	}
	sweepShared = sync.Once{} // as in a new test binary
	dir, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !strings.HasPrefix(filepath.Base(dir), sharedDirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("%s is not named for this process", dir)
	}
	if _, err := os.Stat(stale); err == nil {
		os.RemoveAll(stale)
		t.Errorf("%s, a gone process's directory, was not removed", stale)
	}
}
