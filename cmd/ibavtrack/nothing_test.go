package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

const fabrics = "../../testdata/fabrics/"

// TestNothingToCheck: links --check, path, watch and errors on a fabric where no
// SM ran say why they checked nothing and exit 5, never 0.
func TestNothingToCheck(t *testing.T) {
	noSM := []string{"--sim", fabrics + "loop.net", "--sim-sm=false"}
	noLFT := []string{"--sim", fabrics + "nolft.topo", "--sim-sm=false"}
	tests := []struct {
		name   string
		args   []string
		reason string // "": exit 0
		json   bool   // stdout is JSON with clean and reason
	}{
		{"links --check", append([]string{"links", "--check"}, noSM...), routing.NoLIDs, false},
		{"links --check --json", append([]string{"links", "--check", "--json"}, noSM...), routing.NoLIDs, true},
		{"links without --check", append([]string{"links"}, noSM...), "", false},
		{"path", append([]string{"path", "h1", "h2"}, noSM...), routing.NoLIDs, false},
		{"path --json", append([]string{"path", "--json", "h1", "h2"}, noSM...), routing.NoLIDs, true},
		{"path without tables", append([]string{"path", "h1", "h2"}, noLFT...), routing.NoTables, false},
		{"watch", append([]string{"watch", "--count", "1", "h2"}, noSM...), routing.NoLIDs, false},
		{"errors", append([]string{"errors"}, noSM...), routing.NoLIDs, false},
		{"errors --json", append([]string{"errors", "--json"}, noSM...), routing.NoLIDs, true},
		{"links --check routed", []string{"links", "--check", "--sim", fabrics + "loop.net"}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runTool(t, tc.args...)
			if tc.reason == "" {
				if code != exitcode.OK {
					t.Errorf("exit %d, want 0\n%s%s", code, out, stderr)
				}
				return
			}
			if code != exitcode.NothingChecked {
				t.Errorf("exit %d, want %d\n%s%s", code, exitcode.NothingChecked, out, stderr)
			}
			if want := "ibavtrack: nothing to check: " + tc.reason + "\n"; string(stderr) != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if !tc.json {
				return
			}
			var doc struct {
				Clean  *bool  `json:"clean"`
				Reason string `json:"reason"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Clean == nil || *doc.Clean || !strings.HasSuffix(doc.Reason, tc.reason) {
				t.Errorf("JSON clean %v reason %q", doc.Clean, doc.Reason)
			}
		})
	}
}

// TestInconsistentStatus: overlapping LIDs on a complete sweep are a
// warning (exit 0), exit 6 with --strict, never 3.
func TestInconsistentStatus(t *testing.T) {
	for _, tc := range []struct {
		strict bool
		code   int
	}{{false, exitcode.OK}, {true, exitcode.Inconsistent}} {
		args := []string{"links", "--sim", fabrics + "overlap.topo", "--sim-sm=false"}
		if tc.strict {
			args = append(args, "--strict")
		}
		out, stderr, code := runTool(t, args...)
		if code != tc.code || len(out) == 0 {
			t.Errorf("strict %v: exit %d, want %d\n%s%s", tc.strict, code, tc.code, out, stderr)
		}
		if !strings.HasPrefix(string(stderr), "ibavtrack: warning: contradiction: LID 4 of port") {
			t.Errorf("strict %v: stderr %q", tc.strict, stderr)
		}
	}
}
