//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
)

// dropIBWarn removes the libumad2sim/libibmad chatter ibqueryerrors
// prints on stdout under the shim (nothing, normally).
func dropIBWarn(b []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("ibwarn:")) {
			out = append(out, l...)
		}
	}
	return out
}

// compareErrors runs ibqueryerrors and `ibavtrack errors` on the same
// ibsim, attached at the same node, and requires byte-identical output.
// It returns our stdout, stderr and exit status.
func compareErrors(t *testing.T, s *ibsimtest.Sim, host string, theirArgs []string, ourArgs ...string) ([]byte, []byte, int) {
	t.Helper()
	theirs, terr, tcode := s.RunTool(t, host, "ibqueryerrors", theirArgs...)
	theirs = dropIBWarn(theirs)
	if !bytes.Contains(theirs, []byte("## Summary:")) {
		t.Fatalf("ibqueryerrors %v printed no summary (exit %d):\n%s%s", theirArgs, tcode, theirs, terr)
	}
	args := append([]string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host}, ourArgs...)
	ours, oerr, code := runTool(t, args...)
	if !bytes.Equal(ours, theirs) {
		t.Errorf("ibavtrack %v differs from ibqueryerrors %v\n--- ours (exit %d):\n%s%s--- ibqueryerrors (exit %d):\n%s%s",
			args, theirArgs, code, ours, oerr, tcode, theirs, terr)
	}
	return ours, oerr, code
}

// TestCompatErrors compares `ibavtrack errors` with ibqueryerrors under
// ibsim and a live OpenSM (ibqueryerrors asks its SA for path SLs):
// counters injected with PerformanceSet on switch (port 0 of an enhanced
// switch included) and CA ports, PortRcvErrors moved by Error drops,
// AllPortSelect sums on switches, a threshold file, and a PMA that never
// answers PortCounters (partial result, exit 3, named).
func TestCompatErrors(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, mustAbs(t, errorsNet), ibsimtest.WithConsole())
	const host = "H-h1"
	s.StartOpenSM(t, host)

	// Drops: half of what enters sw2 port 1 is lost (and counted there)
	// while ibnetdiscover walks the fabric; then the link is clean again.
	s.Console(t, `Error "S-sw2"[1] 50`)
	for range 3 {
		s.RunTool(t, host, "ibnetdiscover")
	}
	s.Console(t, `Error "S-sw2"[1] 0`)
	for _, c := range []string{
		`PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "S-sw1"[0] PortCounters.LinkDownedCounter=2`,
		`PerformanceSet "S-sw2"[3] PortCounters.PortXmitDiscards=4`,
		`PerformanceSet "S-sw2"[4] PortCounters.ExcessiveBufferOverrunErrors=15`,
		`PerformanceSet "H-h3"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "H-h4"[2] PortCounters.PortXmitWait=99`,
		`PerformanceSet "H-h2"[1] PortCounters.VL15Dropped=1`,
	} {
		if out := s.Console(t, c); !strings.Contains(out, "has been set") {
			t.Fatalf("%s: %s", c, out)
		}
	}

	empty := writeFile(t, "none", "# no thresholds\n")
	out, _, code := compareErrors(t, s, host, []string{"--threshold-file", empty}, "--threshold-file", empty)
	if code != exitcode.OK {
		t.Errorf("exit %d without --check", code)
	}
	for _, want := range []string{
		`GUID 0x200001 port 1: [PortRcvErrors == `, // moved by the drops
		`GUID 0x200000 port ALL:`,
		`GUID 0x200000 port 0: [LinkDownedCounter == 2]`,
		`GUID 0x100008 port 2: [PortXmitWait == 99]`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := runTool(t, "errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host, "--threshold-file", empty, "--check"); code != exitcode.Problem {
		t.Errorf("--check: exit %d, want %d", code, exitcode.Problem)
	}

	for _, args := range [][]string{
		{"-s", "PortXmitDiscards,VL15Dropped,PortXmitData", "-c"},
		{"-s", "SymbolErrorCounter"}, // sw1's sum then no longer exceeds
		{"--switch"},
		{"--ca"},
		{"--ca", "--router"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		compareErrors(t, s, host, a, a...)
	}

	names := writeFile(t, "names.map", "0x200000 \"spine A\"\n0x100004 h3-renamed\n")
	out, _, _ = compareErrors(t, s, host, []string{"--threshold-file", empty, "--node-name-map", names}, "--threshold-file", empty, "--node-name-map", names)
	if !bytes.Contains(out, []byte(`Errors for 0x200000 "spine A"`)) {
		t.Errorf("node name map not used:\n%s", out)
	}

	th := writeFile(t, "thresholds", "# thresholds\nSymbolErrorCounter=10\nPortXmitWait=100\nVL15Dropped=1\nLinkDownedCounter=5\nPortRcvErrors=6\n")
	text, _, _ := compareErrors(t, s, host, []string{"--threshold-file", th}, "--threshold-file", th)

	// JSON: the schema, and the numbers of the text summary.
	js, jerr, code := runTool(t, "errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host, "--threshold-file", th, "--json")
	if code != exitcode.OK {
		t.Fatalf("--json: exit %d\n%s", code, jerr)
	}
	validateErrorsJSON(t, js)
	var rep portcounters.JSONReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	// The drops' PortRcvErrors count is random: take the port lines of
	// the text output as the reference.
	badPorts := bytes.Count(text, []byte(" port ")) - bytes.Count(text, []byte(" port ALL:"))
	if rep.Summary.NodesChecked != 6 || rep.Summary.BadPorts != badPorts || badPorts < 3 || rep.Thresholds["SymbolErrorCounter"] != 10 {
		t.Errorf("JSON summary %+v thresholds %v", rep.Summary, rep.Thresholds)
	}

	// Clearing is explicit, a Set, and ibqueryerrors sees its effect.
	if out, errb, code := runTool(t, "errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host, "--threshold-file", empty, "--clear-errors"); code != exitcode.OK {
		t.Fatalf("--clear-errors: exit %d\n%s%s", code, out, errb)
	}
	theirs, _, _ := s.RunTool(t, host, "ibqueryerrors", "--threshold-file", empty)
	if !bytes.Contains(theirs, []byte(" 0 ports have errors beyond threshold")) {
		t.Errorf("after --clear-errors ibqueryerrors still finds errors:\n%s", theirs)
	}

	// A PMA that never answers PortCounters: same output as
	// ibqueryerrors (its failure counted), exit 3, the port named.
	s.Console(t, `Error "H-h2"[1] 100 0x12`)
	_, stderr, code := compareErrors(t, s, host, []string{"--threshold-file", th}, "--threshold-file", th, "--retries", "1", "-t", "200")
	if code != exitcode.Partial || !bytes.Contains(stderr, []byte(`PortCounters query failed on "h2 mlx5_0"`)) {
		t.Errorf("silent PMA: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestCompatErrorsNoLID: a port that joined after the SM ran has no LID;
// both tools count its PMA queries as failed.
func TestCompatErrorsNoLID(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, mustAbs(t, errorsNet), ibsimtest.WithConsole())
	const host = "H-h1"
	s.Console(t, `Unlink "H-h3"[1]`)
	s.RunOpenSM(t, host, t.TempDir())
	s.Console(t, `Link "H-h3"[1] "S-sw2"[3]`)
	s.Console(t, `PerformanceSet "S-sw2"[2] PortCounters.SymbolErrorCounter=3`)
	empty := writeFile(t, "none", "")
	// No live SM: ibqueryerrors skips its SA PathRecord query.
	out, stderr, code := compareErrors(t, s, host, []string{"--skip-sl", "--threshold-file", empty}, "--threshold-file", empty)
	if code != exitcode.Partial || !bytes.Contains(out, []byte("2 PMA query failures")) || !bytes.Contains(stderr, []byte("no LID")) {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
}

// TestErrorsSimMatchesIBSim: the embedded simulator's PMA gives the same
// report as ibsim's for a net file whose do-lines set counters.
func TestErrorsSimMatchesIBSim(t *testing.T) {
	ibsimtest.Require(t)
	b, err := os.ReadFile(errorsNet)
	if err != nil {
		t.Fatal(err)
	}
	net := writeFile(t, "errors.net", string(b)+`
do PerformanceSet "S-sw1"[2] PortCounters.PortRcvRemotePhysicalErrors=21
do PerformanceSet "S-sw2"[1] PortCounters.LocalLinkIntegrityErrors=3
do PerformanceSet "H-h4"[2] PortCounters.SymbolErrorCounter=65535
`)
	s := ibsimtest.Start(t, net)
	const host = "H-h1"
	s.RunOpenSM(t, host, t.TempDir())
	empty := writeFile(t, "none", "")
	theirs, terr, _ := s.RunTool(t, host, "ibqueryerrors", "--skip-sl", "--threshold-file", empty)
	ours, oerr, code := runTool(t, "errors", "--sim", net, "--sim-host", host, "--threshold-file", empty)
	if code != exitcode.OK || !bytes.Equal(ours, dropIBWarn(theirs)) {
		t.Errorf("--sim (exit %d):\n%s%s\nibqueryerrors on ibsim:\n%s%s", code, ours, oerr, theirs, terr)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
