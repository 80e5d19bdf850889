package ibsimtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv marks the test binary re-executed by TestSimDiesWithTest.
const childEnv = "IBSIMTEST_PDEATHSIG_CHILD"

// TestSimDiesWithTest: an ibsim started by a test process that is then
// killed (SIGKILL: no cleanup runs) does not outlive it. The child test
// starts ibsim and prints its PID; the parent kills the child and waits
// on a pidfd for ibsim's exit, failing if it is still running 10 s later.
func TestSimDiesWithTest(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		s := Start(t, exampleNet)
		fmt.Printf("IBSIM %d\n", s.PID())
		time.Sleep(time.Minute) // killed long before
		t.Fatal("not killed")
	}
	Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSimDiesWithTest$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pidc := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "IBSIM "); ok {
				n, _ := strconv.Atoi(v)
				pidc <- n
			}
		}
		close(pidc)
	}()
	var pid int
	select {
	case pid = <-pidc:
	case <-time.After(time.Minute):
		t.Fatal("the child test printed no ibsim PID in a minute")
	}
	if pid <= 0 {
		t.Fatal("the child test ended without starting ibsim")
	}
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of ibsim %d: %v", pid, err)
	}
	defer unix.Close(pfd)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 10_000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			unix.Kill(-pid, unix.SIGKILL)
			t.Fatalf("ibsim %d still running 10 s after its test process was killed", pid)
		}
		return
	}
}
