package main

import (
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/completion"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/testkit/completiontest"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// TestCompletion: completions/ holds the bash, zsh and fish completion
// of every option, with the keys of --diffcheck and the values of
// --color (go test -update regenerates it).
func TestCompletion(t *testing.T) {
	var colors []string
	for _, m := range termout.Modes {
		colors = append(colors, string(m))
	}
	keys := strings.Split(topology.DiffKeys(1<<6-1).String(), ",")
	choices := map[string]completion.Choices{"diffcheck": {Words: keys, List: true}, "color": {Words: colors}}
	completiontest.Check(t, "../../completions", newApp(nil, nil), completion.File, choices, cliapp.VersionFlag(), cliapp.ColorFlag())
}
