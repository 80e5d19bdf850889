//go:build linux

package main

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestRoutesCheckNueRouted: on a fabric OpenSM routed with nue, whose
// search backtracked and fell back to its escape paths there
// (pkg/routing's testdata/nue-impasse.net), ibcheck --routing-engine nue
// finds no route longer than nue's: the routes are judged by the hops
// they program, as ibhops --check-routes does (nue's matrix, which holds
// its search's counts there and left-over counts for switch LIDs, gave
// dozens of "route of 5 hops, nue has 0").
func TestRoutesCheckNueRouted(t *testing.T) {
	ibsimtest.Require(t)
	net, err := filepath.Abs("../../pkg/routing/testdata/nue-impasse.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, net)
	s.RunOpenSM(t, "H0-0", t.TempDir(), "-R", "nue")
	out, errb, code := runTool(t, "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H0-0", "--routing-engine", "nue")
	if !regexp.MustCompile(`(?m)^\s*routes\s+passed$`).Match(out) || regexp.MustCompile(`routes/`).Match(out) {
		t.Errorf("exit %d: the routes check is not clean:\n%s\n%s", code, out, errb)
	}
}
