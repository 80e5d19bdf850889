package main

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/completion"
)

// TestCompletion: completions/ holds the bash and zsh completion of every
// option and command (go test -update regenerates it).
func TestCompletion(t *testing.T) {
	completion.Check(t, "../../completions", newApp(nil, nil), completion.File, cliapp.VersionFlag(), cliapp.ColorFlag())
}
