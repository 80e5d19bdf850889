// Package golden compares test output with golden files. Importing it
// registers the -update test flag: `go test ./... -update` rewrites the
// golden files from the current output.
//
// Files that hold real tools' output (reference vectors captured from
// ibnetdiscover, OpenSM, ...) are not golden files: tests compare with
// them directly and -update must never touch them.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Update is the -update flag.
var Update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Check compares got with the golden file at path; with -update it writes
// got there instead (creating directories).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, LineDiff(string(want), string(got)))
	}
}

// LineDiff describes the first lines (at most 8) where want and got differ.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a == c {
			continue
		}
		fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, a, c)
		if shown++; shown == 8 {
			b.WriteString("...\n")
			break
		}
	}
	return b.String()
}
