package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// roffName is how a flag name is spelled in the man page source.
func roffName(n string) string {
	if len(n) == 1 {
		return `\fB\-` + n + `\fR`
	}
	return `\fB\-\-` + strings.ReplaceAll(n, "-", `\-`) + `\fR`
}

// Every flag of every command, and every alias, is documented in
// man/ibavtrack.8, and so is every exit status.
func TestManPageListsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../man/ibavtrack.8")
	if err != nil {
		t.Fatal(err)
	}
	man := string(b)
	app := newApp(nil, nil)
	app.Setup()
	for _, c := range app.Commands {
		if !strings.Contains(man, ".B ibavtrack "+c.Name+"\n") {
			t.Errorf("man page lacks the synopsis of %s", c.Name)
		}
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				if !strings.Contains(man, roffName(n)) {
					t.Errorf("man/ibavtrack.8 does not document %s (%s)", roffName(n), c.Name)
				}
			}
		}
	}
	for _, code := range []int{exitcode.OK, exitcode.Fatal, exitcode.Usage, exitcode.Partial, exitcode.Problem, exitcode.Interrupted} {
		if !strings.Contains(man, ".B "+strconv.Itoa(code)+"\n") {
			t.Errorf("man page lacks exit status %d", code)
		}
	}
}
