//go:build !windows

package sim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// startIbsimConsole runs ibsim with its console on a FIFO and returns the
// socket name and a function that types one console command.
func startIbsimConsole(t *testing.T, netfile string) (string, func(string)) {
	t.Helper()
	requireTool(t, "ibsim")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "console")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	con, err := os.OpenFile(fifo, os.O_RDWR, 0) // never blocks, never EOF
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	name := fmt.Sprintf("gocon%d_%d", os.Getpid(), ibsimSeq.Add(1))
	abs, _ := filepath.Abs(netfile)
	cmd := exec.Command("ibsim", "-s", abs)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+name)
	cmd.Stdin = con
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for i := 0; ; i++ {
		b, _ := os.ReadFile("/proc/net/unix")
		if bytes.Contains(b, []byte("@"+name+":ctl@")) {
			break
		}
		if i > 200 {
			t.Fatalf("ibsim did not come up: %s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return name, func(c string) {
		if _, err := con.WriteString(c + "\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let ibsim's select loop take it
	}
}

// TestConsoleWithIbsim applies the same console commands at run time to
// ibsim and to the simulator and compares every probe on every route after
// each one.
func TestConsoleWithIbsim(t *testing.T) {
	f := load(t, "loop")
	sock, console := startIbsimConsole(t, fabricPath("loop"))
	rc := dialIbsim(t, sock, "h1")
	ep := attach(t, f, "h1")
	tid := uint64(0x20000)
	for _, c := range []string{
		``,
		`Unlink "sw1"[2]`,
		`Error "sw2"[1] 100`,
		`ReLink "sw1"`,
		`Error "sw2"[1] 0`,
		`Error "sw3" 100 21`,
		`Link "sw1"[5] "sw2"[6]`,
		`Baselid "h2"[1] 9 1`,
		`Guid "h3" 0x777`,
		`Unlink "sw3"`,
		`Clear "sw2"[1]`,
		`ReLink "sw3"[2]`,
	} {
		if c != "" {
			console(c)
			if err := f.Exec(c); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
		}
		for _, p := range drPaths(f, ep.port) {
			for _, pr := range probes(9) {
				tid++
				compare(t, rc, ep, 0xffff, buildMAD(p, pr, tid), fmt.Sprintf("after %q: path %s attr %#x mod %#x", c, p, pr.attr, pr.mod))
			}
		}
	}
}
