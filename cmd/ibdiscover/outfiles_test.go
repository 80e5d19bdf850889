//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestOutputTargets: the topology file and --cache are written whatever
// the target is: a device or FIFO in place, a symlink followed, a new
// file with 0666 minus the umask, a replaced file keeping its mode, a
// 250-character name; nothing is left beside them.
func TestOutputTargets(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	src := []string{"--sim", fabrics + "loop.net"}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (target, check string) // check: the file that must hold the output
		mode  fs.FileMode                                           // of check; 0: not checked
	}{
		{"new file gets 0666 minus the umask", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "new")
			return p, p
		}, 0o640},
		{"replaced 0600 file stays 0600", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "old")
			os.WriteFile(p, []byte("old"), 0o600)
			return p, p
		}, 0o600},
		{"symlink is followed", func(t *testing.T, dir string) (string, string) {
			os.Mkdir(filepath.Join(dir, "real"), 0o755)
			real := filepath.Join(dir, "real", "f")
			os.WriteFile(real, []byte("old"), 0o644)
			os.Chmod(real, 0o644)
			link := filepath.Join(dir, "link")
			os.Symlink("real/f", link)
			return link, real
		}, 0o644},
		{"250-character name", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, strings.Repeat("n", 250))
			return p, p
		}, 0o640},
	}
	for _, flag := range []string{"topology file", "--cache"} {
		for _, tc := range tests {
			t.Run(flag+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				target, check := tc.setup(t, dir)
				args := append([]string{}, src...)
				if flag == "--cache" {
					args = append(args, "--cache", target)
				} else {
					args = append(args, target)
				}
				_, stderr, code := runOurs(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				b, err := os.ReadFile(check)
				if err != nil || len(b) < 100 {
					t.Fatalf("%s holds %d bytes (%v)", check, len(b), err)
				}
				st, _ := os.Stat(check)
				if tc.mode != 0 && st.Mode().Perm() != tc.mode {
					t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.mode)
				}
				if st, _ := os.Lstat(target); target != check && st.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("%s was replaced instead of followed", target)
				}
				filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if strings.Contains(filepath.Base(p), ".tmp") {
						t.Errorf("left behind: %s", p)
					}
					return nil
				})
			})
		}
	}
	t.Run("/dev/null", func(t *testing.T) {
		for _, args := range [][]string{{"--cache", "/dev/null"}, {"/dev/null"}} {
			_, stderr, code := runOurs(t, append(append([]string{}, src...), args...)...)
			if code != 0 {
				t.Fatalf("%v: exit %d %s", args, code, stderr)
			}
			if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
				t.Fatalf("/dev/null is not a character device any more: %v", st.Mode())
			}
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			clitest.Skip(t, "mkfifo: %v", err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(p)
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- string(b)
		}()
		var stderr []byte
		var code int
		within(t, "ibdiscover --cache FIFO", func() {
			_, stderr, code = runOurs(t, append(append([]string{}, src...), "--cache", p)...)
		})
		if code != 0 {
			t.Fatalf("exit %d %s", code, stderr)
		}
		within(t, "the FIFO's reader", func() {
			if s := <-got; len(s) < 100 {
				t.Errorf("FIFO reader got %d bytes", len(s))
			}
		})
		if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("FIFO replaced: %v", st.Mode())
		}
	})
}

// TestOutputTargetErrors: a target that cannot be written or replaced is
// one line naming it and why, exit 2, before discovery.
func TestOutputTargetErrors(t *testing.T) {
	dir := t.TempDir()
	// A file the caller may write where no file can be made beside it:
	// /proc/version for root, a file in a read-only directory for a user
	// (TestUnprivileged runs this as uid 65534).
	noTemp, noTempDir := "/proc/version", "/proc"
	if os.Geteuid() != 0 {
		noTempDir = filepath.Join(t.TempDir(), "ro")
		os.Mkdir(noTempDir, 0o755)
		noTemp = clitest.WriteFile(t, noTempDir, "f", "x")
		os.Chmod(noTempDir, 0o555)
		defer os.Chmod(noTempDir, 0o755)
	}
	ro := clitest.WriteFile(t, t.TempDir(), "ro", "x")
	os.Chmod(ro, 0o444)
	tests := []struct {
		name  string
		args  []string
		input string
		msg   string
		user  bool // only for a user (root writes any file)
	}{
		{"cannot be replaced", []string{"--sim", fabrics + "loop.net", noTemp}, noTemp,
			"cannot be replaced: no temporary file can be created beside it in " + noTempDir, false},
		{"cache cannot be replaced", []string{"--sim", fabrics + "loop.net", "--cache", noTemp}, "--cache: " + noTemp,
			"cannot be replaced", false},
		{"read-only file", []string{"--sim", fabrics + "loop.net", ro}, ro, "cannot write: permission denied", true},
		{"read-only cache", []string{"--sim", fabrics + "loop.net", "--cache", ro}, "--cache: " + ro, "cannot write: permission denied", true},
		{"missing directory", []string{"--sim", fabrics + "loop.net", filepath.Join(dir, "no", "f")}, filepath.Join(dir, "no", "f"),
			"cannot create: no such file or directory", false},
		{"directory", []string{"--sim", fabrics + "loop.net", "--cache", dir}, dir, "is a directory", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.user && os.Geteuid() == 0 {
				t.Skip("root writes any file: TestUnprivileged runs this as uid 65534")
			}
			stdout, stderr, code := runOurs(t, tc.args...)
			clitest.BadInput(t, "ibdiscover", stdout, stderr, code, tc.input, tc.msg)
		})
	}
	clitest.NoLeftovers(t, dir)
}

// TestBrokenPipe: "ibdiscover --cache c | head -1" ends quietly with 141
// and leaves no temporary file (nor a cache from a run cut short).
func TestBrokenPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTool(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--sim", "fattree:levels=3,radix=16", "--cache", "c.cache")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n') // as head -1
	out.Close()
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if line != "#\n" {
		t.Errorf("first line %q", line)
	}
	// The 1,344-node topology is far more than a pipe holds: the write
	// fails with EPIPE and the run ends quietly, with status 141 or by
	// SIGPIPE itself (what a shell reports as 141 either way).
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	piped := code == cliapp.StatusBrokenPipe || ws.Signaled() && ws.Signal() == syscall.SIGPIPE
	if !piped || stderr.Len() != 0 {
		t.Errorf("exit %d (%v), stderr %q; want %d or SIGPIPE, and nothing on stderr", code, err, stderr.String(), cliapp.StatusBrokenPipe)
	}
	clitest.NoLeftovers(t, dir)
}

// TestFIFOWithoutReader: a FIFO nobody reads does not hang the tool past
// an interruption: it exits 130 naming the FIFO, and the FIFO stays.
func TestFIFOWithoutReader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		clitest.Skip(t, "mkfifo: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		var out bytes.Buffer
		done <- run(ctx, &out, &stderr, []string{"ibdiscover", "--sim", fabrics + "loop.net", "--cache", p})
	}()
	// The tool waits for a reader once discovery is done; cancel at any
	// point: the outcome is the same.
	cancel()
	var code int
	within(t, "ibdiscover --cache FIFO, cancelled", func() { code = <-done })
	if code != exitcode.Interrupted {
		t.Errorf("exit %d, want %d: %s", code, exitcode.Interrupted, stderr.String())
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("FIFO replaced: %v", st.Mode())
	}
}

// TestUnprivileged runs the output-file permission cases again as an
// unprivileged user (uid 65534) when the tests run as root, so both roles
// are tested.
func TestUnprivileged(t *testing.T) {
	clitest.Unprivileged(t, "^(TestOutputTargetErrors|TestOutputTargets)$")
}
