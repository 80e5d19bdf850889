package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestNothingToCheck: --check-routes on a fabric before any SM ran (no
// LIDs), or with LIDs but no forwarding tables, says why it checked
// nothing and exits 5, never "clean" with 0; JSON says "clean": false
// with a reason.
func TestNothingToCheck(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		reason string
		code   int
	}{
		{"no LIDs", []string{"--sim", fabrics + "loop.net", "--sim-sm=false"}, routing.NoLIDs, exitcode.NothingChecked},
		{"no forwarding tables", []string{"--sim", fabrics + "nolft.topo", "--sim-sm=false"}, routing.NoTables, exitcode.NothingChecked},
		{"routed", []string{"--sim", fabrics + "loop.net"}, "", exitcode.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runOurs(t, append(tc.args, "--check-routes")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, stderr)
			}
			last := lastLine(string(out))
			if tc.reason == "" {
				if last != "Result: clean" || len(stderr) != 0 {
					t.Errorf("last line %q, stderr %q", last, stderr)
				}
			} else {
				if want := "Result: nothing to check: " + tc.reason; last != want {
					t.Errorf("last line %q, want %q", last, want)
				}
				if want := "ibhops: nothing to check: " + tc.reason + "\n"; string(stderr) != want {
					t.Errorf("stderr %q, want %q", stderr, want)
				}
			}
			out, _, code = runOurs(t, append(tc.args, "--check-routes", "--json")...)
			if code != tc.code {
				t.Errorf("--json: exit %d, want %d", code, tc.code)
			}
			var doc struct {
				Summary struct {
					Clean  bool    `json:"clean"`
					Reason *string `json:"reason"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Summary.Clean != (tc.reason == "") {
				t.Errorf("--json: clean %v", doc.Summary.Clean)
			}
			if (doc.Summary.Reason != nil) != (tc.reason != "") || (doc.Summary.Reason != nil && !strings.HasSuffix(*doc.Summary.Reason, tc.reason)) {
				t.Errorf("--json: reason %v, want %q", doc.Summary.Reason, tc.reason)
			}
		})
	}
}

// TestTraceWithoutLIDs: --trace before any SM ran says there is nothing
// to follow (exit 5); a LID asked for on such a fabric says why it is
// not in it.
func TestTraceWithoutLIDs(t *testing.T) {
	_, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--sim-sm=false", "--trace", "h1", "h2")
	if want := "ibhops: --trace: nothing to check: " + routing.NoLIDs + "\n"; code != exitcode.NothingChecked || string(stderr) != want {
		t.Errorf("exit %d stderr %q, want %d %q", code, stderr, exitcode.NothingChecked, want)
	}
	// --json says why too, in a document of the trace schema.
	out, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--sim-sm=false", "--trace", "h1", "h2", "--json")
	var doc struct {
		Schema string `json:"schema"`
		Clean  *bool  `json:"clean"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.Schema != "ibdiag.trace/v1" || doc.Clean == nil || *doc.Clean ||
		doc.Reason != "nothing to check: "+routing.NoLIDs {
		t.Errorf("--json: %v %s", err, out)
	}
	if want := "ibhops: --trace: nothing to check: " + routing.NoLIDs + "\n"; code != exitcode.NothingChecked || string(stderr) != want {
		t.Errorf("--json: exit %d stderr %q, want %d %q", code, stderr, exitcode.NothingChecked, want)
	}
	_, stderr, code = runOurs(t, "--sim", fabrics+"nolft.topo", "--sim-sm=false", "--trace", "h1", "h2")
	if code != exitcode.NothingChecked || !strings.Contains(string(stderr), routing.NoTables) {
		t.Errorf("no tables: exit %d stderr %q", code, stderr)
	}
	_, stderr, code = runOurs(t, "--sim", fabrics+"loop.net", "--sim-sm=false", "3", "h2")
	if want := "ibhops: LID 3: not in the fabric (" + routing.NoLIDs + ")\n"; code != exitcode.Usage || string(stderr) != want {
		t.Errorf("exit %d stderr %q, want %q", code, stderr, want)
	}
}

// TestInconsistentStatus: overlapping LIDs on a complete discovery are a
// warning (exit 0, as ibnetdiscover), exit 6 with --strict, never 3.
func TestInconsistentStatus(t *testing.T) {
	for _, tc := range []struct {
		strict bool
		code   int
	}{{false, exitcode.OK}, {true, exitcode.Inconsistent}} {
		args := []string{"--sim", fabrics + "overlap.topo", "--sim-sm=false", "h1", "h3"}
		if tc.strict {
			args = append(args, "--strict")
		}
		out, stderr, code := runOurs(t, args...)
		if code != tc.code || len(out) == 0 {
			t.Errorf("strict %v: exit %d, want %d\n%s%s", tc.strict, code, tc.code, out, stderr)
		}
		if !strings.HasPrefix(string(stderr), "ibhops: warning: contradiction: LID 4 of port") {
			t.Errorf("strict %v: stderr %q", tc.strict, stderr)
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestNothingToCheckIBSim: through a real ibsim, --check-routes before
// any SM ran checks nothing and says so (exit 5); after OpenSM routed the
// fabric it is clean (exit 0).
func TestNothingToCheckIBSim(t *testing.T) {
	ibsimtest.Require(t)
	net, err := filepath.Abs(fabrics + "loop.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, net)
	args := []string{"--ibsim", "--ibsim-sockname", s.SockName, "--check-routes"}
	out, stderr, code := runOurs(t, args...)
	if code != exitcode.NothingChecked || lastLine(string(out)) != "Result: nothing to check: "+routing.NoLIDs {
		t.Errorf("before OpenSM: exit %d\n%s%s", code, out, stderr)
	}
	s.RunOpenSM(t, "", t.TempDir())
	out, stderr, code = runOurs(t, args...)
	if code != exitcode.OK || lastLine(string(out)) != "Result: clean" {
		t.Errorf("after OpenSM: exit %d\n%s%s", code, out, stderr)
	}
}
