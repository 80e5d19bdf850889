//go:build linux

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// loopCache is ibdiscover's cache of loop.net (what --cache writes).
func loopCache(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.cache")
	if _, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--cache", p); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDescriptorOutputs: /dev/stdout and /dev/fd/N as an output name are
// the descriptor already open, written in place through the built tool:
// ">> app.log" keeps app.log's content, "> so.txt" keeps the listing
// printed before the cache, a pipe ("| cat") and an inherited pipe
// (process substitution, ">(gzip > c.gz)" is /dev/fd/63) get the cache.
func TestDescriptorOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTool(t)
	cache := loopCache(t)
	list, _, code := runOurs(t, "--sim", fabrics+"loop.net", "-l")
	if code != 0 {
		t.Fatal("ibdiscover -l failed")
	}
	dir := t.TempDir()
	runWith := func(stdout *os.File, extra []*os.File, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--sim", fabrics + "loop.net"}, args...)...)
		if stdout != nil {
			cmd.Stdout = stdout
		}
		cmd.ExtraFiles = extra
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: still running after 60 s", args)
		}
		return stderr.String(), cmd.ProcessState.ExitCode()
	}

	t.Run(">> app.log", func(t *testing.T) {
		p := filepath.Join(dir, "app.log")
		os.WriteFile(p, []byte("earlier line\n"), 0o644)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		stderr, code := runWith(f, nil, "-l", "--cache", "/dev/stdout")
		f.Close()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		got, _ := os.ReadFile(p)
		want := append(append([]byte("earlier line\n"), list...), cache...)
		if !bytes.Equal(got, want) {
			t.Errorf("app.log holds %d bytes, want %d (earlier line, listing, cache); starts %q", len(got), len(want), got[:min(len(got), 40)])
		}
	})
	t.Run("> so.txt", func(t *testing.T) {
		p := filepath.Join(dir, "so.txt")
		os.WriteFile(p, []byte("old content, truncated by the shell"), 0o644)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		stderr, code := runWith(f, nil, "-l", "--cache", "/dev/stdout")
		f.Close()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, append(append([]byte{}, list...), cache...)) {
			t.Errorf("so.txt holds %d bytes, want the listing (%d) then the cache (%d)", len(got), len(list), len(cache))
		}
	})
	pipeTo := func(t *testing.T, args func(w *os.File) ([]string, *os.File, []*os.File)) []byte {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r); got <- b }()
		a, stdout, extra := args(w)
		stderr, code := runWith(stdout, extra, a...)
		w.Close()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		select {
		case b := <-got:
			return b
		case <-time.After(30 * time.Second):
			t.Fatal("the pipe's reader saw no EOF in 30 s")
		}
		return nil
	}
	t.Run("| cat", func(t *testing.T) {
		b := pipeTo(t, func(w *os.File) ([]string, *os.File, []*os.File) {
			return []string{"-l", "--cache", "/dev/stdout"}, w, nil
		})
		if !bytes.Equal(b, append(append([]byte{}, list...), cache...)) {
			t.Errorf("the pipe got %d bytes, want the listing (%d) then the cache (%d)", len(b), len(list), len(cache))
		}
	})
	t.Run("process substitution (/dev/fd/3)", func(t *testing.T) {
		b := pipeTo(t, func(w *os.File) ([]string, *os.File, []*os.File) {
			return []string{"--cache", "/dev/fd/3", "-l"}, nil, []*os.File{w}
		})
		if !bytes.Equal(b, cache) {
			t.Errorf("the pipe got %d bytes, want the %d-byte cache", len(b), len(cache))
		}
	})
}

// TestFailedRunKeepsOutputs: when the cache cannot be written (a full
// disk), the topology file of the same run is not replaced either, and no
// temporary file is left: through a fault injected into the cache's
// writes, and (as root) on a small tmpfs that fills up.
func TestFailedRunKeepsOutputs(t *testing.T) {
	check := func(t *testing.T, topo string, stderr []byte, code int) {
		t.Helper()
		if code != exitcode.Fatal || !strings.Contains(string(stderr), "no space left on device") {
			t.Errorf("exit %d, stderr %q; want %d and ENOSPC", code, stderr, exitcode.Fatal)
		}
		if b, _ := os.ReadFile(topo); string(b) != "old topology\n" {
			t.Errorf("the topology file was replaced (%d bytes) by a run that failed", len(b))
		}
	}
	for _, extra := range [][]string{nil, {"-p"}, {"-l"}} {
		t.Run(strings.TrimSpace("injected ENOSPC "+strings.Join(extra, " ")), func(t *testing.T) {
			dir := t.TempDir()
			topo := clitest.WriteFile(t, dir, "topo.txt", "old topology\n")
			cache := clitest.WriteFile(t, dir, "c.cache", "old cache")
			defer outfile.SetWriteFault("c.cache", syscall.ENOSPC)()
			_, stderr, code := runOurs(t, append([]string{"--sim", fabrics + "loop.net", "--cache", cache, topo}, extra...)...)
			check(t, topo, stderr, code)
			if b, _ := os.ReadFile(cache); string(b) != "old cache" {
				t.Errorf("the cache was replaced")
			}
			clitest.NoLeftovers(t, dir, "topo.txt", "c.cache")
		})
	}
	t.Run("full tmpfs", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a tmpfs needs root; the injected fault covers a user")
		}
		full := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", full).CombinedOutput(); err != nil {
			clitest.Skip(t, "mount tmpfs: %v %s", err, out)
		}
		defer exec.Command("umount", full).Run()
		dir := t.TempDir()
		topo := clitest.WriteFile(t, dir, "topo.txt", "old topology\n")
		// a 3-level radix-8 fat tree's cache is far more than 16 KiB
		_, stderr, code := runOurs(t, "--sim", "fattree:levels=3,radix=8", "--cache", filepath.Join(full, "c.cache"), topo)
		check(t, topo, stderr, code)
		clitest.NoLeftovers(t, dir, "topo.txt")
		clitest.NoLeftovers(t, full)
	})
}

// TestOutputNames: an empty name for any output, and one file named for
// two outputs (by any of its names), are refused with one line before
// anything is written.
func TestOutputNames(t *testing.T) {
	dir := t.TempDir()
	x := clitest.WriteFile(t, dir, "x", "old")
	os.Link(x, filepath.Join(dir, "hard"))
	os.Symlink("x", filepath.Join(dir, "soft"))
	src := []string{"--sim", fabrics + "loop.net"}
	tests := []struct {
		name       string
		args       []string
		input, msg string
	}{
		{"--cache \"\"", []string{"--cache", ""}, `--cache ""`, "empty file name"},
		{"--cache= ", []string{"--cache="}, `--cache ""`, "empty file name"},
		{"empty topology file", []string{""}, `topology-file ""`, "empty file name"},
		{"--cache X X", []string{"--cache", x, x}, "--cache: " + x, "the same file as another output, " + x},
		{"hard link", []string{"--cache", filepath.Join(dir, "hard"), x}, "--cache: " + filepath.Join(dir, "hard"), "the same file as another output"},
		{"symlink", []string{"--cache", filepath.Join(dir, "soft"), x}, "--cache: " + filepath.Join(dir, "soft"), "the same file as another output"},
		{"new file twice", []string{"--cache", filepath.Join(dir, "n"), filepath.Join(dir, ".", "n")}, "--cache: ", "the same file as another output"},
		{"descriptor not open", []string{"--cache", "/dev/fd/97"}, "--cache: /dev/fd/97", "descriptor not open: descriptor 97"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runOurs(t, append(append([]string{}, src...), tc.args...)...)
			clitest.BadInput(t, "ibdiscover", stdout, stderr, code, tc.input, tc.msg)
			if b, _ := os.ReadFile(x); string(b) != "old" {
				t.Errorf("%s was written", x)
			}
		})
	}
	clitest.NoLeftovers(t, dir, "x", "hard", "soft")
}

// TestPlantedLinks: as root, a link planted in a sticky world-writable
// directory by another user (uid 65534) is not followed for any output:
// one line naming the link, exit 2, the file it points to untouched.
func TestPlantedLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a link owned by another user needs root; the refusal protects root")
	}
	sticky := filepath.Join(t.TempDir(), "tmp")
	os.Mkdir(sticky, 0o755)
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	secret := clitest.WriteFile(t, t.TempDir(), "secret", "root's secret")
	link := filepath.Join(sticky, "fabric.cache")
	os.Symlink(secret, link)
	if err := os.Lchown(link, clitest.NobodyUID, clitest.NobodyUID); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--cache", link}, {link}} {
		stdout, stderr, code := runOurs(t, append([]string{"--sim", fabrics + "loop.net"}, args...)...)
		clitest.BadInput(t, "ibdiscover", stdout, stderr, code, link, "symbolic link not followed: it is owned by uid 65534")
		if b, _ := os.ReadFile(secret); string(b) != "root's secret" {
			t.Errorf("%v: %s was replaced", args, secret)
		}
	}
	// the link's owner may: the same link owned by root is followed
	os.Lchown(link, 0, 0)
	if _, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--cache", link); code != 0 {
		t.Errorf("a link owned by the caller: exit %d %s", code, stderr)
	}
}

// TestStaleTempRemoved: a temporary file that a process killed during a
// write (SIGKILL) left beside the cache is removed by the next run that
// writes the cache; another process's live one stays.
func TestStaleTempRemoved(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		clitest.Skip(t, "true: %v", err)
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		clitest.Skip(t, "sleep: %v", err)
	}
	defer func() { running.Process.Kill(); running.Wait() }()
	dir := t.TempDir()
	stale := clitest.WriteFile(t, dir, ".c.cache.tmp"+strconv.Itoa(dead.Process.Pid)+"-0123456789ab", "half a cache")
	// (left an hour ago: a file written in the last 30 s may be another
	// PID namespace's live one)
	os.Chtimes(stale, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	live := clitest.WriteFile(t, dir, ".c.cache.tmp"+strconv.Itoa(running.Process.Pid)+"-0123456789ab", "being written")
	if _, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--cache", filepath.Join(dir, "c.cache")); code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary file %s is still there", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's temporary file was removed")
	}
}
