package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// TestOutputTargets: --output follows a symlink, writes /dev/null in
// place, keeps a replaced file's mode, and an interrupted run leaves an
// existing file as it was.
func TestOutputTargets(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.dump")
	os.WriteFile(real, []byte("old\n"), 0o600)
	link := filepath.Join(dir, "link.dump")
	os.Symlink("real.dump", link)

	_, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--output", link)
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("symlink replaced")
	}
	b, _ := os.ReadFile(real)
	st, _ := os.Stat(real)
	if !bytes.HasPrefix(b, []byte("Switch: guid ")) || st.Mode().Perm() != 0o600 {
		t.Errorf("target: %q mode %v, want the dump with mode 0600", b, st.Mode().Perm())
	}

	if _, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--output", "/dev/null"); code != 0 {
		t.Fatalf("/dev/null: exit %d %s", code, stderr)
	}
	if st, _ := os.Stat("/dev/null"); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null replaced: %v", st.Mode())
	}

	// Interrupted: the existing file stays.
	os.WriteFile(real, []byte("old\n"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code = run(ctx, &out, &errb, []string{"ibhops", "--sim", fabrics + "loop.net", "--output", link})
	if code != exitcode.Interrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitcode.Interrupted, errb.String())
	}
	if b, _ := os.ReadFile(real); string(b) != "old\n" {
		t.Errorf("interrupted run replaced the output: %q", b)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 2 {
		t.Errorf("left in %s: %v", dir, left)
	}
}

// TestPartialOutput: a partial run (exit 3) writes --output and says on
// stderr that it holds a partial result.
func TestPartialOutput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.dump")
	_, stderr, code := runOurs(t, "--sim", fabrics+"faults.net", "--retries", "0", "-t", "50", "--output", p)
	if code != exitcode.Partial {
		t.Fatalf("exit %d, want %d: %s", code, exitcode.Partial, stderr)
	}
	if !bytes.Contains(stderr, []byte("ibhops: "+p+" holds a partial result\n")) {
		t.Errorf("stderr does not name the file:\n%s", stderr)
	}
	if b, err := os.ReadFile(p); err != nil || len(b) == 0 {
		t.Errorf("partial output not written: %v", err)
	}
}
