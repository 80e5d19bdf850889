package main

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/completion"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/testkit/completiontest"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestCompletion: completions/ holds the bash, zsh and fish completion
// of every option, with the values of --routing-engine and --color (go
// test -update regenerates it).
func TestCompletion(t *testing.T) {
	var engines, colors []string
	for _, e := range routing.Engines {
		engines = append(engines, string(e))
	}
	for _, m := range termout.Modes {
		colors = append(colors, string(m))
	}
	choices := map[string]completion.Choices{"routing-engine": {Words: engines}, "color": {Words: colors}}
	completiontest.Check(t, "../../completions", newApp(nil, nil), completion.None, choices, cliapp.VersionFlag(), cliapp.ColorFlag())
}
