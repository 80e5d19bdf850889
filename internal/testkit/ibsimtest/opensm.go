//go:build unix

package ibsimtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// StartOpenSM runs a continuously running OpenSM (its SA answers queries)
// under libumad2sim.so attached at host (a CA), waits for "SUBNET UP" in
// its log and registers a cleanup that kills it by process group. -d2
// makes OpenSM flush its log after every message: without it "SUBNET UP"
// stays in the stdio buffer although the SM is up. It returns the log's
// path.
func (s *Sim) StartOpenSM(t testing.TB, host string, extraArgs ...string) string {
	t.Helper()
	bin, err := lookPath("opensm")
	if err != nil {
		t.Fatal(err)
	}
	dir := ScratchDir(t) // tmpfs: libumad2sim's fake sysfs is cheaper there
	logPath := filepath.Join(dir, "opensm.log")
	args := append([]string{"-F", "/dev/null", "-f", logPath, "-D", "0x43", "-d2", "-t", OpenSMTimeoutMS, "--dump_files_dir", dir}, extraArgs...)
	LogLaunch("opensm", args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(s.toolEnv(host), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = ProcAttr() // dies with the test process
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	deadline := time.Now().Add(2 * time.Minute) // a condition polled, generously
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("SUBNET UP")) {
			return logPath
		}
		select {
		case <-done:
			t.Fatalf("opensm %v exited:\n%s\nlog:\n%s", args, out.Bytes(), b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("opensm %v: no SUBNET UP after 2 minutes\nlog:\n%s", args, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
