package ibdiag_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: every package under pkg/ (the library others import)
// has a package doc whose first sentence, "Package NAME ...", says what
// the package is for, and at least one runnable Example (one with an
// "// Output:" comment, which go test runs and checks).
func TestPackageDocs(t *testing.T) {
	dirs, err := filepath.Glob("pkg/*")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var name, synopsis string
		var tests []*ast.File
		for pname, p := range pkgs {
			for fname, f := range p.Files {
				if strings.HasSuffix(fname, "_test.go") {
					tests = append(tests, f)
					continue
				}
				name = pname
				if f.Doc != nil && synopsis == "" {
					synopsis = doc.Synopsis(f.Doc.Text())
				}
			}
		}
		if name == "" {
			continue // no Go package here
		}
		checked++
		if want := "Package " + name + " "; !strings.HasPrefix(synopsis, want) || len(strings.Fields(synopsis)) < 6 {
			t.Errorf("%s: package doc's first sentence %q: want %q followed by what the package is for", dir, synopsis, want+"...")
		}
		runnable := 0
		for _, ex := range doc.Examples(tests...) {
			if ex.Output != "" || ex.EmptyOutput {
				runnable++
			}
		}
		if runnable == 0 {
			t.Errorf("%s: no runnable Example (an Example function with an // Output: comment in a _test.go file)", dir)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages under pkg/: run from the module root", checked)
	}
}
