package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// TestCheckRoutesLongerIsAProblem: a fabric whose only problem is a
// route longer than min-hop is not clean: --check-routes reports it,
// says PROBLEMS FOUND and exits 4, in text and in JSON.
func TestCheckRoutesLongerIsAProblem(t *testing.T) {
	b := newBrokenSim(t, fabrics+"loop.net")
	// sw2 reaches sw1 through sw3 (port 4): 2 hops instead of 1; every
	// route still arrives.
	b.setLFT(t, "sw2", b.lid(t, "sw1"), 4)

	out, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--check-routes")
	if code != exitcode.Problem {
		t.Errorf("exit %d, want %d (a longer route is a problem)\n%s%s", code, exitcode.Problem, out, stderr)
	}
	for _, want := range []string{
		"longer-than-min-hop: ",
		"Broken routes: 0 ",
		"Longer than min-hop: 1\n",
		"Result: PROBLEMS FOUND\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = runOurs(t, "--sim", fabrics+"loop.net", "--check-routes", "--json")
	if code != exitcode.Problem {
		t.Errorf("--json: exit %d, want %d", code, exitcode.Problem)
	}
	var jc jsonCheck
	if err := json.Unmarshal(out, &jc); err != nil {
		t.Fatal(err)
	}
	if jc.Summary.Clean || jc.Summary.Longer != 1 || jc.Summary.Broken != 0 || len(jc.Findings) != 1 || jc.Findings[0].Kind != "longer-than-min-hop" {
		t.Errorf("summary %+v, findings %+v", jc.Summary, jc.Findings)
	}
}
