//go:build unix

package outfile

import (
	"context"
	"errors"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftovers returns the temporary files left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old file and no temporary behind.
	err := WriteFile(p, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("no error from a failing writer")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target changed to %q", b)
	}
	if m := leftovers(t, dir); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	if err := WriteFile(p, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("got %q, want \"new\"", b)
	}
	if Pending() != 0 {
		t.Errorf("Pending() = %d after commit and abort", Pending())
	}
}

// TestModes: a new file gets 0666 minus the umask, a replaced file keeps
// its mode.
func TestModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	tests := []struct {
		name  string
		umask int
		old   os.FileMode // 0: no file yet
		want  os.FileMode
	}{
		{"new, umask 022", 0o022, 0, 0o644},
		{"new, umask 077", 0o077, 0, 0o600},
		{"new, umask 002", 0o002, 0, 0o664},
		{"new, umask 000", 0, 0, 0o666},
		{"replaced 0600", 0o022, 0o600, 0o600},
		{"replaced 0640, umask 077", 0o077, 0o640, 0o640},
		{"replaced 0666, umask 022", 0o022, 0o666, 0o666},
		{"replaced 0755", 0o022, 0o755, 0o755},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.cache")
			if tc.old != 0 {
				if err := os.WriteFile(p, []byte("old"), tc.old); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, tc.old); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			syscall.Umask(tc.umask)
			err := WriteFile(p, writeString("new"))
			syscall.Umask(0o022)
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tc.want {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.want)
			}
		})
	}
}

// TestSymlinks: a symlink is followed and the file it points to replaced;
// the link stays a link.
func TestSymlinks(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (link, target string)
	}{
		{"absolute link to existing file", func(t *testing.T, dir string) (string, string) {
			sub := filepath.Join(dir, "real")
			os.Mkdir(sub, 0o755)
			target := filepath.Join(sub, "c.cache")
			os.WriteFile(target, []byte("old"), 0o600)
			link := filepath.Join(dir, "c.cache")
			os.Symlink(target, link)
			return link, target
		}},
		{"relative link chain", func(t *testing.T, dir string) (string, string) {
			sub := filepath.Join(dir, "a", "b")
			os.MkdirAll(sub, 0o755)
			target := filepath.Join(sub, "t")
			os.WriteFile(target, []byte("old"), 0o640)
			os.Symlink("b/t", filepath.Join(dir, "a", "l2"))
			link := filepath.Join(dir, "l1")
			os.Symlink("a/l2", link)
			return link, target
		}},
		{"dangling link: the target is created", func(t *testing.T, dir string) (string, string) {
			sub := filepath.Join(dir, "real")
			os.Mkdir(sub, 0o755)
			target := filepath.Join(sub, "new")
			link := filepath.Join(dir, "l")
			os.Symlink("real/new", link)
			return link, target
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			link, target := tc.setup(t, dir)
			var oldMode os.FileMode = 0o644
			if st, err := os.Stat(target); err == nil {
				oldMode = st.Mode().Perm()
			}
			if err := WriteFile(link, writeString("new")); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a symlink (%v)", link, err)
			}
			b, err := os.ReadFile(target)
			if err != nil || string(b) != "new" {
				t.Errorf("target holds %q (%v), want \"new\"", b, err)
			}
			if st, _ := os.Stat(target); st.Mode().Perm() != oldMode {
				t.Errorf("target mode %v, want %v", st.Mode().Perm(), oldMode)
			}
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if strings.Contains(filepath.Base(p), ".tmp") {
					t.Errorf("left behind: %s", p)
				}
				return nil
			})
		})
	}
	t.Run("symlink loop", func(t *testing.T) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.Symlink(b, a)
		os.Symlink(a, b)
		_, err := Create(a)
		if err == nil || !strings.HasPrefix(err.Error(), a+": ") {
			t.Errorf("err = %v, want one naming %s", err, a)
		}
	})
}

// TestLongNames: a legal name never fails because the temporary name is
// longer; no temporary name exceeds NAME_MAX.
func TestLongNames(t *testing.T) {
	for _, n := range []int{1, 200, 240, 250, 251, 255} {
		dir := t.TempDir()
		p := filepath.Join(dir, strings.Repeat("x", n))
		o, err := Create(p)
		if err != nil {
			t.Fatalf("%d characters: %v", n, err)
		}
		if m := leftovers(t, dir); len(m) != 0 {
			t.Errorf("a temporary file exists before the first write: %v", m)
		}
		io.WriteString(o, "x")
		if l := len(filepath.Base(o.tmp)); l > MaxNameLen || o.tmp == "" {
			t.Errorf("%d characters: temporary name %q is %d bytes", n, filepath.Base(o.tmp), l)
		}
		if err := o.Commit(); err != nil {
			t.Fatalf("%d characters: %v", n, err)
		}
	}
	// multi-byte characters are cut at a character boundary
	long := strings.Repeat("é", 127) // 254 bytes
	got := tempName(long, "0123456789ab")
	if len(got) > MaxNameLen || !strings.HasPrefix(got, ".") || !strings.HasSuffix(got, ".tmp0123456789ab") {
		t.Errorf("tempName = %q (%d bytes)", got, len(got))
	}
	if !utf8Valid(got) {
		t.Errorf("tempName cut a character: %q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// guard bounds every step of a test that can block (a FIFO's open).
const guard = 30 * time.Second

// within runs fn and fails t with a message naming what if it has not
// returned within guard, instead of hanging the package.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatalf("%s: blocked for %v", what, guard)
	}
}

// TestInPlace: targets that are not regular files are written in place,
// never replaced.
func TestInPlace(t *testing.T) {
	t.Run("/dev/null", func(t *testing.T) {
		if err := WriteFile("/dev/null", writeString("data")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat("/dev/null")
		if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("/dev/null is no longer a character device: %v %v", st.Mode(), err)
		}
	})
	t.Run("FIFO with a reader", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "fifo")
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
		within(t, "WriteFile to a FIFO with a reader", func() {
			if err := WriteFile(p, writeString("through the fifo")); err != nil {
				t.Error(err)
			}
		})
		select {
		case s := <-got:
			if s != "through the fifo" {
				t.Errorf("reader got %q", s)
			}
		case <-time.After(guard):
			t.Fatalf("the FIFO's reader got no EOF in %v", guard)
		}
		if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("%s is no longer a FIFO: %v", p, st.Mode())
		}
		if m := leftovers(t, dir); len(m) != 0 {
			t.Errorf("left behind: %v", m)
		}
	})
	t.Run("FIFO without a reader: cancelled", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			clitest.Skip(t, "mkfifo: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var o *File
		var err error
		within(t, "CreateContext of a FIFO without a reader", func() {
			o, err = CreateContext(ctx, p) // must not wait for a reader
		})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		within(t, "a cancelled write to a FIFO without a reader", func() {
			if _, err := o.Write([]byte("x")); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
				t.Errorf("write to a FIFO nobody reads, cancelled: err = %v", err)
			}
		})
		o.Abort()
		if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("%s is no longer a FIFO", p)
		}
	})
	t.Run("socket", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "s")
		l, err := net.Listen("unix", p)
		if err != nil {
			clitest.Skip(t, "unix socket: %v", err)
		}
		defer l.Close()
		_, err = Create(p)
		if err == nil || !strings.Contains(err.Error(), "socket") {
			t.Errorf("err = %v, want a socket error", err)
		}
		if st, _ := os.Lstat(p); st.Mode()&fs.ModeSocket == 0 {
			t.Errorf("socket replaced")
		}
	})
}

// TestErrors: errors name the target, never the temporary file.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.WriteFile(ro, []byte("x"), 0o444)
	// A file the caller may write in a directory where no new file can
	// be made: /proc/version for root (who writes any file but cannot
	// create one in /proc), a writable file in a read-only directory for
	// a user (TestUnprivileged runs this as uid 65534).
	noTemp, noTempDir := "/proc/version", "/proc"
	if os.Geteuid() != 0 {
		noTempDir = filepath.Join(dir, "rodir")
		os.Mkdir(noTempDir, 0o755)
		noTemp = filepath.Join(noTempDir, "f")
		os.WriteFile(noTemp, []byte("x"), 0o644)
		os.Chmod(noTempDir, 0o555)
		defer os.Chmod(noTempDir, 0o755)
	}
	tests := []struct {
		name, path, want string
		root             bool // the case holds for root too
	}{
		{"missing directory", filepath.Join(dir, "no", "such", "f"), "cannot create: no such file or directory", true},
		{"directory", dir, "is a directory", true},
		{"cannot be replaced", noTemp, "cannot be replaced: no temporary file can be created beside it in " + noTempDir, true},
		{"read-only file", ro, "permission denied", false},
		{"empty name", "", "empty output file name", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.root && os.Geteuid() == 0 {
				t.Skip("root writes anything")
			}
			o, err := Create(tc.path)
			if err == nil {
				o.Abort()
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
			if tc.path != "" && !strings.HasPrefix(err.Error(), tc.path+": ") {
				t.Errorf("err = %q does not start with the target", err)
			}
			if strings.Contains(err.Error(), ".tmp") {
				t.Errorf("err = %q names the temporary file", err)
			}
		})
	}
}

// TestAbort: Abort and AbortAll leave nothing behind, and the target as
// it was.
func TestAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	o, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(o, "new")
	o.Abort()
	o.Abort() // twice is harmless
	if err := o.Commit(); err != nil {
		t.Errorf("Commit after Abort: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target is %q after Abort", b)
	}
	// AbortAll: what a signal path runs.
	a, _ := Create(filepath.Join(dir, "a"))
	io.WriteString(a, "x")
	b, _ := Create(p)
	io.WriteString(b, "partial")
	c, _ := Create(filepath.Join(dir, "c")) // nothing written: no temporary file yet
	if n := AbortAll(); n != 2 {
		t.Errorf("AbortAll removed %d files, want 2", n)
	}
	c.Abort()
	if m := leftovers(t, dir); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	a.Abort()
	b.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target is %q after AbortAll", b)
	}
	for _, n := range []string{"a", "c"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("a new target %s was created by an aborted file", n)
		}
	}
}

// TestCommitEmpty: a file committed with nothing written is created
// empty (ibdiscover -p leaves the topology file empty, as ibnetdiscover).
func TestCommitEmpty(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty")
	o, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 0 {
		t.Errorf("stat %v %v", st, err)
	}
}

// TestAbortAllConcurrent: AbortAll, as a signal handler's goroutine calls
// it, races with nothing (run with -race).
func TestAbortAllConcurrent(t *testing.T) {
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			o, err := Create(filepath.Join(dir, "f"+strconv.Itoa(i)))
			if err != nil {
				t.Error(err)
				return
			}
			io.WriteString(o, "x")
			if i%2 == 0 {
				o.Commit()
			} else {
				o.Abort()
			}
		}
	}()
	for range 50 {
		AbortAll()
	}
	<-done
	AbortAll()
	if m := leftovers(t, dir); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}
