package main

import (
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/manpage"
)

// Every flag of every command, and every alias, is documented in
// man/ibavtrack.8, and so is every exit status.
func TestManPageListsEveryFlag(t *testing.T) {
	const path = "../../man/ibavtrack.8"
	app := newApp(nil, nil)
	app.Setup()
	codes := []int{exitcode.OK, exitcode.Fatal, exitcode.Usage, exitcode.Partial, exitcode.Problem, exitcode.NothingChecked, exitcode.Inconsistent, exitcode.Interrupted}
	for _, c := range app.Commands {
		manpage.CheckFlags(t, path, c.Flags, codes...)
	}
	manpage.CheckFlags(t, path, []cli.Flag{cliapp.VersionFlag(), cliapp.ColorFlag()})
	man := readFile(t, path)
	for _, c := range app.Commands {
		if !strings.Contains(man, ".B ibavtrack "+c.Name+"\n") {
			t.Errorf("man page lacks the synopsis of %s", c.Name)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The man page keeps its quotes when rendered (groff drops the double
// quotes of a .B line's argument).
func TestManPageQuotes(t *testing.T) {
	manpage.CheckQuotes(t, "../../man/ibavtrack.8")
}
