// Package manpage checks that a command's man page documents every flag
// (and every alias) of its urfave/cli app, and the exit statuses.
package manpage

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// RoffName is how a flag name is spelled in man page source: \fB\-x\fR or
// \fB\-\-name\fR.
func RoffName(n string) string {
	if len(n) == 1 {
		return `\fB\-` + n + `\fR`
	}
	return `\fB\-\-` + strings.ReplaceAll(n, "-", `\-`) + `\fR`
}

// CheckFlags fails t for every flag name of flags missing from the man
// page at path, and for every exit status in codes that has no ".B <code>"
// line.
func CheckFlags(t testing.TB, path string, flags []cli.Flag, codes ...int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	man := string(b)
	for _, f := range flags {
		for _, n := range f.Names() {
			if !strings.Contains(man, RoffName(n)) {
				t.Errorf("%s does not document %s", path, RoffName(n))
			}
		}
	}
	for _, c := range codes {
		if !strings.Contains(man, ".B "+strconv.Itoa(c)+"\n") {
			t.Errorf("%s lacks exit status %d", path, c)
		}
	}
}

// CheckQuotes fails t for every .B or .I line of the man page at path
// whose double quotes groff would take as argument delimiters and drop
// (write such text as \fB...\fR on a text line instead). A line whose one
// argument is quoted whole (.B "a b") is fine.
func CheckQuotes(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		arg, ok := strings.CutPrefix(line, ".B ")
		if !ok {
			arg, ok = strings.CutPrefix(line, ".I ")
		}
		if !ok || !strings.Contains(arg, `"`) {
			continue
		}
		if len(arg) >= 2 && arg[0] == '"' && arg[len(arg)-1] == '"' && !strings.Contains(arg[1:len(arg)-1], `"`) {
			continue
		}
		t.Errorf("%s:%d: groff drops the double quotes of %q (use \\fB...\\fR on a text line)", path, i+1, line)
	}
}
