package main

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/manpage"
)

// Every flag of the app, and every alias, is documented in man/ibcheck.8,
// and so is every exit status.
func TestManPageListsEveryFlag(t *testing.T) {
	app := newApp(nil, nil)
	app.Setup()
	manpage.CheckFlags(t, "../../man/ibcheck.8", append(app.Flags, cliapp.VersionFlag(), cliapp.ColorFlag()),
		exitcode.OK, exitcode.Fatal, exitcode.Usage, exitcode.Partial, exitcode.Problem, exitcode.NothingChecked, exitcode.Inconsistent, exitcode.Interrupted)
}

// The man page keeps its quotes when rendered.
func TestManPageQuotes(t *testing.T) {
	manpage.CheckQuotes(t, "../../man/ibcheck.8")
}

// Every flag of ibcheck serve is documented in man/ibcheck.8 too.
func TestManPageListsServeFlags(t *testing.T) {
	app := newApp(nil, nil)
	app.Setup()
	serve := app.Command("serve")
	if serve == nil {
		t.Fatal("no serve command")
	}
	manpage.CheckFlags(t, "../../man/ibcheck.8", serve.Flags)
}
