package clitest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// UnprivilegedEnv is set in the environment of a test binary that
// Unprivileged started as an unprivileged user.
const UnprivilegedEnv = "IBDIAG_TEST_UNPRIVILEGED"

// NobodyUID is the unprivileged user (and group) Unprivileged runs as.
const NobodyUID = 65534

// IsUnprivilegedChild reports whether this test binary is the child
// Unprivileged started.
func IsUnprivilegedChild() bool { return os.Getenv(UnprivilegedEnv) == "1" }

// Unprivileged runs the tests matching run (a -test.run pattern) of this
// test binary again as the unprivileged user 65534 (nobody), in a child
// process, when the tests run as root: permission checks that root
// bypasses are then tested in both roles. The child's failures fail t,
// with its output. As any other user it does nothing: the tests ran
// unprivileged already.
func Unprivileged(t *testing.T, run string) {
	t.Helper()
	if IsUnprivilegedChild() || os.Geteuid() != 0 {
		return
	}
	if runtime.GOOS != "linux" {
		Skip(t, "dropping privileges in a child is tested on Linux")
	}
	// The test binary lives in a directory only root may enter: copy it
	// where the unprivileged user can run it.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o111)
		}
		if d == os.TempDir() {
			break
		}
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", run, "-test.count=1", "-test.v")
	// A -race child would sleep a second before exiting (GORACE
	// atexit_sleep_ms, 1000 by default) after its tests ran.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), UnprivilegedEnv+"=1", "HOME="+dir, "TMPDIR="+os.TempDir(), "GORACE="+gorace)
	cmd.SysProcAttr = nobodyAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests %s as uid %d: %v\n%s", run, NobodyUID, err, out)
	}
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the tests %s as uid %d ran nothing:\n%s", run, NobodyUID, out)
	}
	t.Logf("as uid %d:\n%s", NobodyUID, out)
}
