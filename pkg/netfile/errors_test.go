package netfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestParseErrorCause: a file that cannot be read is a ParseError that
// carries the cause, so errors.Is finds fs.ErrNotExist behind a missing
// file or a missing include.
func TestParseErrorCause(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.net")
	if err := os.WriteFile(inc, []byte("include \"nosuch.net\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{filepath.Join(dir, "nosuch.net"), inc} {
		_, err := ParseFile(name)
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ParseFile(%s) = %v; want a *ParseError wrapping fs.ErrNotExist", name, err)
		}
	}
	_, err := ParseFS(os.DirFS(dir), "nosuch.net")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ParseFS of a missing file = %v; want an error wrapping fs.ErrNotExist", err)
	}
}

// TestRequireNodes: with ParseOptions.RequireNodes a file that declares
// no node is a ParseError wrapping ErrNoNodes that says what the file
// held; without it such a file is an empty fabric, as ibsim takes it.
func TestRequireNodes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, msg string }{
		{"empty.net", "", "empty file: no nodes"},
		{"comments.net", "# nothing\n\n  # here\n", "only comments and blank lines: no nodes"},
		{"binary.net", "\x00\x01\xfe\xff garbage", "not a text file: no nodes (want an ibsim net file or an ibnetdiscover topology file)"},
		{"text.net", "root:x:0:0:root:/root:/bin/bash\n", "no node lines (Switch, Hca, Ca, Rt): not an ibsim net file or ibnetdiscover topology file"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err := ParseFile(p); err != nil || len(f.Nodes) != 0 {
			t.Errorf("%s without RequireNodes: %v", c.name, err)
		}
		_, err := ParseFileOptions(p, ParseOptions{RequireNodes: true})
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrNoNodes) || pe.Msg != c.msg || pe.File != p {
			t.Errorf("%s: %v; want a ParseError of %s wrapping ErrNoNodes: %s", c.name, err, p, c.msg)
		}
	}
	if _, err := ParseFileOptions("/dev/null", ParseOptions{RequireNodes: true}); !errors.Is(err, ErrNoNodes) ||
		err.Error() != "/dev/null: no nodes (want an ibsim net file or an ibnetdiscover topology file)" {
		t.Errorf("/dev/null: %v", err)
	}
}
