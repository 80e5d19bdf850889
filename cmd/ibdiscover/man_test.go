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

// Every flag of the app, and every alias, is documented in man/ibdiscover.8,
// and so is every exit status.
func TestManPageListsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../man/ibdiscover.8")
	if err != nil {
		t.Fatal(err)
	}
	man := string(b)
	app := newApp(nil, nil)
	app.Setup()
	for _, f := range app.Flags {
		for _, n := range f.Names() {
			if !strings.Contains(man, roffName(n)) {
				t.Errorf("man/ibdiscover.8 does not document %s", roffName(n))
			}
		}
	}
	for _, code := range []int{exitcode.OK, exitcode.Fatal, exitcode.Usage, exitcode.Partial, exitcode.Interrupted} {
		if !strings.Contains(man, ".B "+strconv.Itoa(code)+"\n") {
			t.Errorf("man page lacks exit status %d", code)
		}
	}
}
