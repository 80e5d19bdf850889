package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

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
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	// A complete write replaces it, mode 0644.
	if err := WriteFile(p, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new" || st.Mode().Perm() != 0o644 {
		t.Errorf("got %q mode %v, want \"new\" 0644", b, st.Mode().Perm())
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(filepath.Join(dir, "no", "such", "dir", "f")); err == nil {
		t.Error("no error for a missing directory")
	}
	if _, err := Create(dir); err == nil {
		t.Error("no error for a directory target")
	}
	o, err := Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	o.Abort()
	o.Abort() // twice is harmless
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("Abort left %v", m)
	}
}
