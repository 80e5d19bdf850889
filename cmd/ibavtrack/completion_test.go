package main

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/completion"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/testkit/completiontest"
)

// TestCompletion: completions/ holds the bash, zsh and fish completion
// of every option and command, with the values of --color (go test
// -update regenerates it).
func TestCompletion(t *testing.T) {
	var colors []string
	for _, m := range termout.Modes {
		colors = append(colors, string(m))
	}
	completiontest.Check(t, "../../completions", newApp(nil, nil), completion.None, map[string]completion.Choices{"color": {Words: colors}}, cliapp.VersionFlag(), cliapp.ColorFlag())
}
