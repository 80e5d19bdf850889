//go:build linux

package outfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// stickyDir makes a sticky world-writable directory (mode 1777) owned by
// uid, as /tmp.
func stickyDir(t *testing.T, uid int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if uid != os.Geteuid() {
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestProtectedSymlinks: a symbolic link in a sticky world-writable
// directory is followed only when its owner is the caller or the
// directory's owner (the kernel's fs.protected_symlinks rule, applied
// whatever the system's setting); otherwise the output is refused with
// one line naming the link and the file it points to is left alone.
// Run as root, with links made by an unprivileged user (uid 65534).
func TestProtectedSymlinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a link owned by another user needs root; the refusal protects root")
	}
	const nobody = clitest.NobodyUID
	tests := []struct {
		name      string
		dirOwner  int  // owner of the directory holding the link
		sticky    bool // the directory is 1777 (else 0777)
		linkOwner int
		dangling  bool // the link points to a file that does not exist
		follow    bool
	}{
		{"planted by another user in sticky dir", 0, true, nobody, false, false},
		{"dangling link planted by another user", 0, true, nobody, true, false},
		{"link owned by the caller", 0, true, 0, false, true},
		{"link owned by the directory's owner", nobody, true, nobody, false, true},
		{"dangling link owned by the directory's owner", nobody, true, nobody, true, true},
		{"non-sticky world-writable dir", 0, false, nobody, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secretDir := t.TempDir()
			secret := filepath.Join(secretDir, "secret")
			if !tc.dangling {
				if err := os.WriteFile(secret, []byte("root's secret"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var dir string
			if tc.sticky {
				dir = stickyDir(t, tc.dirOwner)
			} else {
				dir = filepath.Join(t.TempDir(), "open")
				os.Mkdir(dir, 0o755)
				os.Chmod(dir, 0o777)
			}
			link := filepath.Join(dir, "fabric.cache")
			if err := os.Symlink(secret, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, tc.linkOwner, tc.linkOwner); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(link, writeString("the cache"))
			b, rerr := os.ReadFile(secret)
			if tc.follow {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if string(b) != "the cache" {
					t.Errorf("the file the link points to holds %q (%v)", b, rerr)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnsafeLink) {
				t.Fatalf("err = %v, want %v", err, ErrUnsafeLink)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, link+": ") || strings.Contains(msg, "\n") ||
				!strings.Contains(msg, "uid 65534") || !strings.Contains(msg, dir) {
				t.Errorf("err = %q, want one line naming the link %s, its owner and the directory", msg, link)
			}
			if tc.dangling {
				if rerr == nil {
					t.Errorf("%s was created through a planted link", secret)
				}
			} else if string(b) != "root's secret" {
				t.Errorf("%s now holds %q", secret, b)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link was replaced")
			}
			clitest.NoLeftovers(t, dir, "fabric.cache")
		})
	}
	t.Run("planted link behind a link that may be followed", func(t *testing.T) {
		// the rule holds for every link on the way, in any component
		dir := stickyDir(t, 0)
		secret := filepath.Join(t.TempDir(), "secret")
		os.WriteFile(secret, []byte("root's secret"), 0o600)
		planted := filepath.Join(dir, "planted")
		os.Symlink(secret, planted)
		os.Lchown(planted, nobody, nobody)
		mine := filepath.Join(t.TempDir(), "mine")
		os.Symlink(planted, mine)
		err := WriteFile(mine, writeString("x"))
		if !errors.Is(err, ErrUnsafeLink) || !strings.HasPrefix(err.Error(), mine+": "+planted+": ") {
			t.Errorf("err = %v, want one naming %s and the planted link %s", err, mine, planted)
		}
		// a planted link to a directory, as a directory component
		sub := t.TempDir()
		dlink := filepath.Join(dir, "d")
		os.Symlink(sub, dlink)
		os.Lchown(dlink, nobody, nobody)
		err = WriteFile(filepath.Join(dlink, "f"), writeString("x"))
		if !errors.Is(err, ErrUnsafeLink) {
			t.Errorf("through a planted directory link: err = %v", err)
		}
		if _, err := os.Stat(filepath.Join(sub, "f")); err == nil {
			t.Errorf("a file was created through a planted directory link")
		}
	})
}

// fdName is /dev/fd/N for f.
func fdName(f *os.File) string { return "/dev/fd/" + strconv.Itoa(int(f.Fd())) }

// TestDescriptorNames: /dev/fd/N, /proc/self/fd/N (and a link to one)
// mean the descriptor already open: written in place, appending where it
// was opened O_APPEND, at its offset otherwise, never renamed over; a
// pipe is written as a FIFO is; a closed or read-only descriptor is
// refused naming the name.
func TestDescriptorNames(t *testing.T) {
	t.Run("O_APPEND keeps the content", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "app.log")
		os.WriteFile(p, []byte("earlier\n"), 0o644)
		before, _ := os.Stat(p)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, name := range []string{fdName(f), "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))} {
			if err := WriteFile(name, writeString(name+"\n")); err != nil {
				t.Fatal(err)
			}
		}
		f.WriteString("the descriptor still works\n")
		b, _ := os.ReadFile(p)
		want := "earlier\n" + fdName(f) + "\n/proc/self/fd/" + strconv.Itoa(int(f.Fd())) + "\nthe descriptor still works\n"
		if string(b) != want {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
		if after, _ := os.Stat(p); !os.SameFile(before, after) {
			t.Errorf("%s was replaced", p)
		}
		clitest.NoLeftovers(t, filepath.Dir(p), "app.log")
	})
	t.Run("O_TRUNC: written at the descriptor's offset", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "so.txt")
		os.WriteFile(p, []byte("old content that goes"), 0o644)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.WriteString("listing\n") // what the tool printed on stdout first
		if err := WriteFile(fdName(f), writeString("cache\n")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "listing\ncache\n" {
			t.Errorf("%s holds %q", p, b)
		}
	})
	t.Run("a link to a descriptor name", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "log")
		f, _ := os.Create(p)
		defer f.Close()
		l := filepath.Join(dir, "out")
		os.Symlink(fdName(f), l)
		if err := WriteFile(l, writeString("via link")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "via link" {
			t.Errorf("%s holds %q", p, b)
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); got <- string(b) }()
		o, err := Create(fdName(w))
		if err != nil {
			t.Fatal(err)
		}
		if !o.InPlace() {
			t.Errorf("a pipe is not written in place")
		}
		io.WriteString(o, "through the pipe")
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		w.Close() // the pipe's last writer: the reader sees EOF
		select {
		case s := <-got:
			if s != "through the pipe" {
				t.Errorf("reader got %q", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the pipe's reader saw no EOF in 10 s: a descriptor was left open")
		}
	})
	t.Run("closed descriptor", func(t *testing.T) {
		f, _ := os.Create(filepath.Join(t.TempDir(), "x"))
		name := fdName(f)
		f.Close()
		_, err := Create(name)
		if !errors.Is(err, ErrClosedDescriptor) || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("err = %v, want %v naming %s", err, ErrClosedDescriptor, name)
		}
	})
	t.Run("read-only descriptor", func(t *testing.T) {
		f, _ := os.Open("/dev/null")
		defer f.Close()
		_, err := Create(fdName(f))
		if err == nil || !strings.Contains(err.Error(), "only for reading") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestSet: a Set replaces its files only when all are ready: one that
// fails (a full disk at its flush) leaves every target as it was and no
// temporary file; one file named twice, by any name, is refused.
func TestSet(t *testing.T) {
	dir := t.TempDir()
	topo, cache := filepath.Join(dir, "topo.txt"), filepath.Join(dir, "c.cache")
	os.WriteFile(topo, []byte("old topo"), 0o644)
	os.WriteFile(cache, []byte("old cache"), 0o644)
	var s Set
	a, err := s.Create(context.Background(), topo)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(a, "new topo")
	io.WriteString(b, "new cache")
	testHook = func(step, tmp string) error {
		if step == "sync" && strings.Contains(tmp, "c.cache") {
			return syscall.ENOSPC
		}
		return nil
	}
	err = s.Commit()
	testHook = nil
	if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), cache+": ") {
		t.Errorf("err = %v, want ENOSPC naming %s", err, cache)
	}
	for p, want := range map[string]string{topo: "old topo", cache: "old cache"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s holds %q after a failed commit, want %q", p, got, want)
		}
	}
	clitest.NoLeftovers(t, dir, "topo.txt", "c.cache")
	if Pending() != 0 {
		t.Errorf("%d files pending", Pending())
	}

	t.Run("the same file twice", func(t *testing.T) {
		dir := t.TempDir()
		f := filepath.Join(dir, "f")
		os.WriteFile(f, nil, 0o644)
		os.Link(f, filepath.Join(dir, "hard"))
		os.Symlink("f", filepath.Join(dir, "soft"))
		os.Mkdir(filepath.Join(dir, "sub"), 0o755)
		for _, second := range []string{f, filepath.Join(dir, "hard"), filepath.Join(dir, "soft"), filepath.Join(dir, "sub", "..", "f")} {
			var s Set
			if _, err := s.Create(context.Background(), f); err != nil {
				t.Fatal(err)
			}
			_, err := s.Create(context.Background(), second)
			if !errors.Is(err, ErrSameFile) || !strings.HasPrefix(err.Error(), second+": ") {
				t.Errorf("%s after %s: err = %v, want %v", second, f, err, ErrSameFile)
			}
			s.Abort()
		}
		// two new files of one name
		var s Set
		n := filepath.Join(dir, "new")
		s.Create(context.Background(), n)
		if _, err := s.Create(context.Background(), filepath.Join(dir, "sub", "..", "new")); !errors.Is(err, ErrSameFile) {
			t.Errorf("one new file twice: err = %v", err)
		}
		// distinct files and devices written in place are fine
		if _, err := s.Create(context.Background(), filepath.Join(dir, "other")); err != nil {
			t.Error(err)
		}
		for range 2 {
			if _, err := s.Create(context.Background(), "/dev/null"); err != nil {
				t.Error(err)
			}
		}
		s.Abort()
	})
}

// TestCommitOrder: a replaced file's temporary file gets its mode after
// the last write and is flushed (fsync) before it is renamed over the
// target.
func TestCommitOrder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("old"), 0o644)
	var steps []string
	testHook = func(step, tmp string) error {
		steps = append(steps, step)
		return nil
	}
	defer func() { testHook = nil }()
	if err := WriteFile(p, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"chmod", "sync", "rename"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
}

// TestKeepSetID: a replaced file keeps its set-user-ID, set-group-ID and
// sticky bits (as root and, through TestUnprivileged, as a user, whose
// writes the kernel strips set-id bits on).
func TestKeepSetID(t *testing.T) {
	for _, mode := range []fs.FileMode{0o755 | fs.ModeSetuid, 0o755 | fs.ModeSetgid, 0o644 | fs.ModeSticky, 0o755 | fs.ModeSetuid | fs.ModeSetgid} {
		t.Run(mode.String(), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tool")
			os.WriteFile(p, []byte("old"), 0o600)
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(p); st.Mode() != mode {
				clitest.Skip(t, "this file system does not keep mode %v (%v)", mode, st.Mode())
			}
			if err := WriteFile(p, writeString("new binary")); err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(p); st.Mode() != mode {
				t.Errorf("mode %v after replace, want %v", st.Mode(), mode)
			}
		})
	}
}

// TestStaleTemps: creating a target removes the temporary files a
// process killed outright left beside it, and only those: our exact name
// pattern for this target, owned by the caller, whose maker (the PID in
// the name) is dead or started after the file was written.
func TestStaleTemps(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		clitest.Skip(t, "true: %v", err)
	}
	deadPID := dead.Process.Pid
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		clitest.Skip(t, "sleep: %v", err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	livePID := live.Process.Pid

	dir := t.TempDir()
	target := filepath.Join(dir, "c.cache")
	hexs := "0123456789ab"
	name := func(base string, pid int) string { return tempName(base, fmt.Sprintf("%d-%s", pid, hexs)) }
	hour := time.Now().Add(-time.Hour)
	files := []struct {
		name   string
		mtime  time.Time // zero: now
		chown  bool      // owned by another user (root only)
		remove bool
	}{
		{name("c.cache", deadPID), hour, false, true},
		{name("c.cache", livePID), hour, false, true},                                                   // the PID was reused by a later process
		{tempName("c.cache", fmt.Sprintf("%d-%s", deadPID, "cccccccccccc")), time.Time{}, false, false}, // written just now
		{name("c.cache", os.Getpid()), hour, false, false},                                              // ours
		{name("other", deadPID), hour, false, false},                                                    // another target's
		{".c.cache.tmp" + hexs, hour, false, false},                                                     // not our pattern
		{".c.cache.tmp" + strconv.Itoa(deadPID) + "-" + hexs + "x", hour, false, false},
		{"c.cache.tmp" + strconv.Itoa(deadPID) + "-" + hexs, hour, false, false},
	}
	if os.Geteuid() == 0 {
		files = append(files, struct {
			name   string
			mtime  time.Time
			chown  bool
			remove bool
		}{tempName("c.cache", fmt.Sprintf("%d-%s", deadPID, "ba9876543210")), hour, true, false})
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("stale"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !f.mtime.IsZero() {
			os.Chtimes(p, f.mtime, f.mtime)
		}
		if f.chown {
			os.Chown(p, clitest.NobodyUID, clitest.NobodyUID)
		}
	}
	o, err := Create(target)
	if err != nil {
		t.Fatal(err)
	}
	o.Abort()
	for _, f := range files {
		_, err := os.Lstat(filepath.Join(dir, f.name))
		if gone := err != nil; gone != f.remove {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.remove)
		}
	}

	// A live maker's file is kept even when old enough to be taken: the
	// live process started before the file was written.
	defer func(a time.Duration) { staleAge = a }(staleAge)
	staleAge = 0
	alive := filepath.Join(dir, tempName("c.cache", fmt.Sprintf("%d-%s", livePID, "aaaaaaaaaaaa")))
	if err := os.WriteFile(alive, []byte("being written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if start, ok := processStart(livePID); !ok || start.After(time.Now()) {
		clitest.Skip(t, "the start of process %d is not known: %v", livePID, start)
	}
	if o, err := Create(target); err == nil {
		o.Abort()
	}
	if _, err := os.Lstat(alive); err != nil {
		t.Errorf("the temporary file of a live process was removed")
	}
	fresh := filepath.Join(dir, files[2].name) // kept above only for its age
	if _, err := os.Lstat(fresh); err == nil {
		t.Errorf("%s: kept once old enough", files[2].name)
	}
}

// TestUnprivileged runs the permission cases again as an unprivileged
// user (uid 65534) when the tests run as root, so both roles are tested.
func TestUnprivileged(t *testing.T) {
	clitest.Unprivileged(t, "^(TestErrors|TestModes|TestKeepSetID|TestCommitOrder|TestSet|TestDescriptorNames|TestWriteFileAtomic|TestSymlinks|TestStaleTemps)$")
}
