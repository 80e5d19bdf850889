//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type fullDoc struct {
	doc
	Findings []struct {
		Check, Kind, Severity, Message string
		Evidence                       []string
		Place                          struct {
			Node     string
			NodeGUID string `json:"node_guid"`
			PortGUID string `json:"port_guid"`
			Port     *int
			LID      int
		}
	}
}

func ibsimCheck(t *testing.T, s *ibsimtest.Sim, host string, args ...string) (fullDoc, int, string) {
	t.Helper()
	out, stderr, code := runTool(t, append([]string{"--ibsim-sockname", s.SockName, "--sim-host", host, "--json"}, args...)...)
	var d fullDoc
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	json.Unmarshal(out, &d.doc)
	return d, code, string(out) + string(stderr)
}

// TestCreditLoopsOpenSM: on a 4x4 torus, OpenSM's min-hop routes have a
// credit loop; its up/down routes (rooted at s00) are deadlock-free in
// one VL by construction (no route turns from down to up), so the same
// torus under updn has none; LASH and DFSSSP route with loops in the
// forwarding tables that their SLs (from the SA's PathRecords) and the
// SLtoVL tables put on different VLs: none per VL. OpenSM's log says which
// engine routed.
func TestCreditLoopsOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	for _, tc := range []struct {
		engine string
		status string
		code   int
		// the kind of information the passed check adds ("" none)
		info string
	}{
		{"minhop", "failed", exitcode.Problem, ""},
		{"updn", "passed", exitcode.OK, ""},
		{"lash", "passed", exitcode.OK, "credit-loop-broken-by-vls"},
		{"dfsssp", "passed", exitcode.OK, "credit-loop-broken-by-vls"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			s := ibsimtest.Start(t, abs(t, fabrics+"torus.net"))
			roots := clitest.WriteFile(t, t.TempDir(), "roots", "0x0000000000300000\n")
			log := s.StartOpenSM(t, "h00", "-R", tc.engine, "-a", roots)
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(tc.engine+" tables configured on all switches")) {
				t.Fatalf("OpenSM did not route with %s:\n%s", tc.engine, b)
			}
			// updn routes are longer than min-hop by design: compare
			// with its own hop counts
			d, code, out := ibsimCheck(t, s, "h11", "--checks", "routes,credit-loops", "--routing-engine", tc.engine)
			if code != tc.code || d.status("credit-loops") != tc.status || d.status("routes") != "passed" {
				t.Fatalf("exit %d credit-loops %s routes %s, want %d %s passed\n%s", code, d.status("credit-loops"), d.status("routes"), tc.code, tc.status, out)
			}
			info := ""
			for _, f := range d.Findings {
				if f.Check == "credit-loops" && f.Severity == "info" {
					info = f.Kind
				}
			}
			if info != tc.info {
				t.Fatalf("information %q, want %q\n%s", info, tc.info, out)
			}
		})
	}
}

// TestSMOpenSM: one OpenSM on ibsim: the sm check finds it master, with
// the GUID, priority and state sminfo (infiniband-diags) prints; without
// an SM (no port advertises IsSM, no LIDs) the check fails with no-sm.
func TestSMOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, abs(t, fabrics+"fattree2.net"))
	d, code, out := ibsimCheck(t, s, "H0", "--checks", "sm")
	if code != exitcode.Problem || d.status("sm") != "failed" || len(d.Findings) != 1 || d.Findings[0].Kind != "no-sm" {
		t.Fatalf("no SM: exit %d, sm %s\n%s", code, d.status("sm"), out)
	}

	s.StartOpenSM(t, "H3", "-p", "7")
	d, code, out = ibsimCheck(t, s, "H0", "--checks", "sm")
	if code != exitcode.OK || d.status("sm") != "passed" || len(d.Findings) != 1 || d.Findings[0].Kind != "sm" {
		t.Fatalf("one OpenSM: exit %d, sm %s\n%s", code, d.status("sm"), out)
	}
	f := d.Findings[0]
	// sminfo: "sminfo: sm lid 5 sm guid 0x..., activity count 123 priority 7 state 3 SMINFO_MASTER"
	sm, stderr, scode := s.RunTool(t, "H0", "sminfo")
	if scode != 0 {
		t.Fatalf("sminfo: exit %d: %s", scode, stderr)
	}
	m := regexp.MustCompile(`sm lid (\d+) sm guid (0x[0-9a-f]+), activity count \d+ priority (\d+) state (\d+)`).FindStringSubmatch(string(sm))
	if m == nil {
		t.Fatalf("sminfo printed %q", sm)
	}
	lid, _ := strconv.Atoi(m[1])
	guid, _ := strconv.ParseUint(m[2], 0, 64)
	want := fmt.Sprintf("subnet manager 0x%016x: master, priority %s", guid, m[3])
	if m[4] != "3" || f.Message != want || f.Place.LID != lid || f.Place.PortGUID != fmt.Sprintf("0x%016x", guid) {
		t.Fatalf("finding %+v\nwant %q at LID %d; sminfo: %s", f, want, lid, sm)
	}
	if !strings.Contains(f.Place.Node, "H3") {
		t.Errorf("the SM is placed on %q, want H3", f.Place.Node)
	}
}

// TestCountersIBQueryErrors: with counters injected through ibsim's
// console (PerformanceSet) and a live OpenSM, the counters check flags
// exactly the ports ibqueryerrors (infiniband-diags) lists, with the
// counters it names; under a threshold file, for both.
func TestCountersIBQueryErrors(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, abs(t, fabrics+"fattree2.net"), ibsimtest.WithConsole())
	s.StartOpenSM(t, "H0")
	for _, c := range []string{
		`PerformanceSet "L0"[5] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "S1"[2] PortCounters.LinkDownedCounter=2`,
		`PerformanceSet "H5"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "H9"[1] PortCounters.LinkErrorRecoveryCounter=3`,
	} {
		if out := s.Console(t, c); !strings.Contains(out, "has been set") {
			t.Fatalf("%s: %s", c, out)
		}
	}
	th := clitest.WriteFile(t, t.TempDir(), "th", "SymbolErrorCounter=20\nPortRcvErrors=6\n")
	line := regexp.MustCompile(`GUID (0x[0-9a-f]+) port (\d+): (.*)`)
	for _, args := range [][]string{nil, {"--threshold-file", th}} {
		theirs, terr, _ := s.RunTool(t, "H0", "ibqueryerrors", args...)
		want := map[string]bool{}
		for _, m := range line.FindAllStringSubmatch(string(theirs), -1) {
			g, _ := strconv.ParseUint(m[1], 0, 64)
			for _, c := range regexp.MustCompile(`\[(\w+) ==`).FindAllStringSubmatch(m[3], -1) {
				want[fmt.Sprintf("0x%016x port %s %s", g, m[2], c[1])] = true
			}
		}
		if len(want) == 0 {
			t.Fatalf("ibqueryerrors %v listed nothing:\n%s%s", args, theirs, terr)
		}
		d, code, out := ibsimCheck(t, s, "H0", append([]string{"--checks", "counters"}, args...)...)
		if code != exitcode.Problem {
			t.Fatalf("exit %d\n%s", code, out)
		}
		got := map[string]bool{}
		for _, f := range d.Findings {
			for _, e := range f.Evidence {
				name, _, _ := strings.Cut(e, " ")
				got[fmt.Sprintf("%s port %d %s", f.Place.PortGUID, *f.Place.Port, name)] = true
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("threshold %v: ibcheck flags %v, ibqueryerrors %v\n%s\n%s", args, got, want, theirs, out)
		}
	}
}
