package mcjoin

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestToolsNeverJoin: no command (cmd/*, its non-test files) and no
// package under pkg/ imports this helper: the tools are read-only, only
// tests join and leave.
func TestToolsNeverJoin(t *testing.T) {
	const self = "github.com/ibfabric/ibdiag/internal/testkit/mcjoin"
	var files []string
	for _, pat := range []string{"../../../cmd/*/*.go", "../../../pkg/*/*.go"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				t.Errorf("%s imports %s: a tool would send a join", f, self)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files checked: wrong paths?", checked)
	}
}
