package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// portLIDs maps "<port guid>/<port number>" to the LID of every port in
// ibdiscover's JSON.
func portLIDs(t *testing.T, out []byte) map[string]int {
	t.Helper()
	var doc struct {
		Nodes []struct {
			Ports []struct {
				Number int    `json:"number"`
				GUID   string `json:"guid"`
				LID    int    `json:"lid"`
			} `json:"ports"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	m := map[string]int{}
	for _, n := range doc.Nodes {
		for _, p := range n.Ports {
			m[fmt.Sprintf("%s/%d", p.GUID, p.Number)] = p.LID
		}
	}
	return m
}

// TestLIDPlanMatchesOpenSM: a fabric file that gives LIDs has the same
// LIDs under the embedded SM (--sim --sim-sm) as under OpenSM on ibsim,
// which keeps the LIDs the ports have: one LID plan per file.
func TestLIDPlanMatchesOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	for _, tc := range []struct{ name, host string }{
		{"demo", "H-0c42a10300300100"},
		{"mixed", "H-0c42a10300000a00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net, err := filepath.Abs("../../testdata/fabrics/" + tc.name + ".net")
			if err != nil {
				t.Fatal(err)
			}
			s := ibsimtest.Start(t, net)
			s.RunOpenSM(t, tc.host, t.TempDir())
			theirs, stderr, code := runOurs(t, "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", tc.host, "--json")
			if code != 0 {
				t.Fatalf("--ibsim: exit %d: %s", code, stderr)
			}
			ours, stderr, code := runOurs(t, "--sim", net, "--sim-sm", "--sim-host", tc.host, "--json")
			if code != 0 {
				t.Fatalf("--sim --sim-sm: exit %d: %s", code, stderr)
			}
			want, got := portLIDs(t, theirs), portLIDs(t, ours)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("%d ports under OpenSM, %d under the embedded SM", len(want), len(got))
			}
			for k, l := range want {
				if got[k] != l {
					t.Errorf("port %s: LID %d under the embedded SM, %d under OpenSM", k, got[k], l)
				}
			}
		})
	}
}
