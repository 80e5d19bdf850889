//go:build linux

package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// errorsFixture starts the errors fabric with a live OpenSM (ibqueryerrors
// asks its SA for SLs) and deterministic counters on switch and CA ports,
// and returns it with an empty threshold file.
func errorsFixture(t *testing.T) (*ibsimtest.Sim, string) {
	t.Helper()
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, mustAbs(t, errorsNet), ibsimtest.WithConsole())
	s.StartOpenSM(t, "H-h1")
	for _, c := range []string{
		`PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "S-sw1"[0] PortCounters.LinkDownedCounter=2`,
		`PerformanceSet "S-sw2"[3] PortCounters.PortXmitDiscards=4`,
		`PerformanceSet "S-sw2"[4] PortCounters.ExcessiveBufferOverrunErrors=15`,
		`PerformanceSet "S-sw2"[1] PortCounters.PortRcvSwitchRelayErrors=3`,
		`PerformanceSet "H-h3"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "H-h4"[2] PortCounters.PortXmitWait=99`,
		`PerformanceSet "H-h2"[1] PortCounters.VL15Dropped=1`,
		`PerformanceSet "H-h2"[1] PortCounters.PortXmitData=123456`,
		`PerformanceSet "H-h2"[1] PortCounters.PortRcvPkts=4321`,
	} {
		if out := s.Console(t, c); !strings.Contains(out, "has been set") {
			t.Fatalf("%s: %s", c, out)
		}
	}
	return s, writeFile(t, "none", "# no thresholds\n")
}

// TestCompatErrorsSuppressOrder: repeated -s lists and -c add up in the
// order of the command line, repeats included, as ibqueryerrors' option
// handler adds them: what is judged and the "Suppressed:" line are
// ibqueryerrors' byte for byte.
func TestCompatErrorsSuppressOrder(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, args := range [][]string{
		{"-c", "-s", "PortXmitWait"},
		{"-s", "SymbolErrorCounter", "-s", "PortXmitDiscards,VL15Dropped"},
		{"-s", "VL15Dropped", "-c", "-s", "PortXmitDiscards", "-c"},
		{"-s", "PortXmitWait,PortXmitWait", "-s", "LinkDownedCounter"},
		{"--suppress", "PortXmitWait", "--suppress", "LinkDownedCounter"},
		{"-s", "PortXmitWait", "--suppress", "LinkDownedCounter", "-s", "VL15Dropped"}, // two forms of one option
		{"--suppress=SymbolErrorCounter", "-c", "-s", "PortXmitDiscards"},
		{"--suppress-common", "-s", "ExcessiveBufferOverrunErrors,PortRcvErrors"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		compareErrors(t, s, "H-h1", a, a...)
	}
}

// dataValue is a data or packet counter as ibqueryerrors prints it.
var dataValue = regexp.MustCompile(`\[(Port(Xmit|Rcv)(Data|Pkts)|Port(Unicast|Multicast)(Xmit|Rcv)Pkts) == (\d+) \(([^)]*)\)\]`)

// maskData replaces the values of the data and packet counters: ibsim
// counts the MADs of each tool's own discovery on the ports they cross,
// so two runs never read the same values (portcounters' tests compare
// their formatting with ibqueryerrors').
func maskData(b []byte) string {
	return dataValue.ReplaceAllString(string(b), "[$1 == N]")
}

// TestCompatErrorsDataOptions: --data (the data counters of each port
// reported), --counters (every port's data counters, no error judged),
// and the options that change nothing in the output (--skip-sl, -R) give
// ibqueryerrors' output, alone and with other options: byte for byte
// but for the values of the data counters, which move with each tool's
// own traffic (their formatting is compared in TestDataFormatLive).
func TestCompatErrorsDataOptions(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, args := range [][]string{
		{"--data"}, {"--data", "-c"}, {"--data", "--ca"}, {"--data", "--switch"},
		{"--counters"}, {"--counters", "--ca"}, {"--counters", "--switch", "-s", "VL15Dropped"},
		{"--skip-sl"}, {"-R"}, {"--GNDN", "--data", "--skip-sl"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		theirs, terr, tcode := s.RunTool(t, "H-h1", "ibqueryerrors", a...)
		theirs = dropIBWarn(theirs)
		ours, oerr, code := runTool(t, append([]string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1"}, a...)...)
		if o, th := maskData(ours), maskData(theirs); o != th || !strings.Contains(th, "## Summary:") {
			t.Errorf("ibavtrack errors %v differs from ibqueryerrors:\n%s\n--- ours (exit %d):\n%s%s--- theirs (exit %d):\n%s", args, golden.LineDiff(th, o), code, ours, oerr, tcode, terr)
		}
		if strings.Contains(strings.Join(args, " "), "--") && !strings.Contains(string(theirs), " == ") {
			t.Errorf("ibqueryerrors %v printed no counter: the case tests nothing\n%s", args, theirs)
		}
	}
}

// TestCompatErrorsDetails: --details prints the detail counters after
// PortRcvErrors and PortXmitDiscards as ibqueryerrors does, byte for byte
// (its field names swapped between the two attributes included), also
// with suppressed counters, --data and --ca.
func TestCompatErrorsDetails(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, c := range []string{
		`PerformanceSet "H-h3"[1] PortRcvErrorDetails.PortLocalPhysicalErrors=5`,
		`PerformanceSet "H-h3"[1] PortRcvErrorDetails.PortBufferOverrunErrors=6`,
		`PerformanceSet "H-h3"[1] PortRcvErrorDetails.PortLoopingErrors=9`,
		`PerformanceSet "H-h3"[1] PortXmitDiscardDetails.PortInactiveDiscards=8`,
		`PerformanceSet "S-sw2"[3] PortXmitDiscardDetails.PortNeighborMTUDiscards=3`,
		`PerformanceSet "S-sw2"[3] PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards=11`,
		`PerformanceSet "S-sw2"[3] PortRcvErrorDetails.PortVLMappingErrors=2`,
	} {
		if out := s.Console(t, c); !strings.Contains(out, "has been set") {
			t.Fatalf("%s: %s", c, out)
		}
	}
	for _, args := range [][]string{
		{"--details"}, {"--details", "-s", "PortXmitDiscards"}, {"--details", "--ca"}, {"--details", "-c", "-s", "PortRcvErrors"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		out, _, _ := compareErrors(t, s, "H-h1", a, a...)
		if len(args) == 1 && !strings.Contains(string(out), "[PortInactiveDiscards == ") {
			t.Errorf("--details printed no detail:\n%s", out)
		}
	}
	a := []string{"--threshold-file", empty, "--details", "--data"}
	theirs, _, _ := s.RunTool(t, "H-h1", "ibqueryerrors", a...)
	ours, _, _ := runTool(t, append([]string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1"}, a...)...)
	if o, th := maskData(ours), maskData(dropIBWarn(theirs)); o != th {
		t.Errorf("--details --data differs from ibqueryerrors:\n%s", golden.LineDiff(th, o))
	}
}

// TestCompatErrorsDetailsClear: -k --details resets the detail counters
// too, as ibqueryerrors -k --details: afterwards ibqueryerrors --details
// finds none.
func TestCompatErrorsDetailsClear(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, c := range []string{
		`PerformanceSet "H-h3"[1] PortRcvErrorDetails.PortLocalPhysicalErrors=5`,
		`PerformanceSet "S-sw2"[3] PortXmitDiscardDetails.PortNeighborMTUDiscards=3`,
	} {
		if out := s.Console(t, c); !strings.Contains(out, "has been set") {
			t.Fatalf("%s: %s", c, out)
		}
	}
	if out, stderr, code := runTool(t, "errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1", "--threshold-file", empty, "--details", "-k"); code != 0 {
		t.Fatalf("-k --details: exit %d\n%s%s", code, out, stderr)
	}
	// the error counters are 0 now: make them count again to see details
	for _, c := range []string{
		`PerformanceSet "H-h3"[1] PortCounters.PortRcvErrors=1`,
		`PerformanceSet "S-sw2"[3] PortCounters.PortXmitDiscards=1`,
	} {
		s.Console(t, c)
	}
	theirs, _, _ := s.RunTool(t, "H-h1", "ibqueryerrors", "--threshold-file", empty, "--details")
	if strings.Contains(string(theirs), "[PortLocalPhysicalErrors") || strings.Contains(string(theirs), "[PortInactiveDiscards") ||
		strings.Contains(string(theirs), "[PortNeighborMTUDiscards") || strings.Contains(string(theirs), "[PortMalformed") {
		t.Errorf("detail counters not reset:\n%s", theirs)
	}
	if !strings.Contains(string(theirs), "[PortRcvErrors == 1]") {
		t.Errorf("the test did not make PortRcvErrors count again:\n%s", theirs)
	}
}

// TestCompatErrorsOneNode: -G/--port-guid and -S (CA ports, decimal and
// hex) and -D (a directed route to a switch, to a CA) report only that
// node as ibqueryerrors does, byte for byte, also with other options.
// (ibqueryerrors 44 -G of a switch's GUID does not finish under ibsim:
// there -G must print what -D to the same switch prints.)
func TestCompatErrorsOneNode(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, args := range [][]string{
		{"--port-guid", "0x100005"}, {"-S", "0x100005"}, {"-G", "0x100008"},
		{"-G", "1048584"}, {"-G", "0x100003", "-s", "VL15Dropped"}, {"-G", "0x100005", "--details"},
		{"-D", "0,1"}, {"--Direct", "0,1,3"}, {"-D", "0,1,3,4"}, {"-D", "0,1,2", "--ca"}, {"-D", "0,1,3", "--switch"},
		{"-D", "0,1,3", "-c", "--details"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		out, _, _ := compareErrors(t, s, "H-h1", a, a...)
		if !strings.Contains(string(out), " 1 nodes checked") && !strings.Contains(string(out), " 0 nodes checked") {
			t.Errorf("%v: not one node:\n%s", args, out)
		}
	}
	base := []string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1", "--threshold-file", empty}
	byGUID, _, _ := runTool(t, append(base, "-G", "0x200001")...)
	byPath, _, _ := runTool(t, append(base, "-D", "0,1,3")...)
	if string(byGUID) != string(byPath) || !strings.Contains(string(byGUID), `Errors for 0x200001 "sw2"`) {
		t.Errorf("-G of sw2 differs from -D to it:\n%s\n%s", byGUID, byPath)
	}
	if _, stderr, code := runTool(t, append(base, "-G", "0x1234")...); code != exitcode.Usage || !strings.Contains(string(stderr), "-G 0x1234") {
		t.Errorf("-G of an unknown GUID: exit %d: %s", code, stderr)
	}
}

// TestCompatErrorsLoadCache: --load-cache takes the fabric from a cache
// of ibnetdiscover's and reads the counters from the live fabric by its
// LIDs, as ibqueryerrors --load-cache: byte for byte, also with -G, -c,
// --ca and --details; refused with -D (as ibqueryerrors refuses it).
func TestCompatErrorsLoadCache(t *testing.T) {
	s, empty := errorsFixture(t)
	cache := filepath.Join(t.TempDir(), "fabric.cache")
	if _, e, code := s.RunTool(t, "H-h1", "ibnetdiscover", "--cache", cache); code != 0 {
		t.Fatalf("ibnetdiscover --cache: exit %d: %s", code, e)
	}
	for _, args := range [][]string{
		{}, {"-c"}, {"--ca"}, {"--details"}, {"-G", "0x100005"}, {"--switch", "-s", "PortXmitDiscards"},
	} {
		a := append([]string{"--threshold-file", empty, "--load-cache", cache}, args...)
		compareErrors(t, s, "H-h1", a, a...)
	}
	base := []string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1", "--threshold-file", empty, "--load-cache", cache}
	if _, stderr, code := runTool(t, append(base, "-D", "0,1")...); code != exitcode.Usage {
		t.Errorf("--load-cache with -D: exit %d: %s", code, stderr)
	}
	if _, _, tcode := s.RunTool(t, "H-h1", "ibqueryerrors", "--load-cache", cache, "-D", "0,1"); tcode == 0 {
		t.Errorf("ibqueryerrors takes --load-cache with -D")
	}
}

// TestCompatErrorsReportPort: -r adds ibqueryerrors' "Link info" line
// after each port line, byte for byte: switch ports (port 0 of an
// enhanced switch, with no peer), CA ports, a 2-port CA's second port,
// with --counters, --data (masked) and -G.
func TestCompatErrorsReportPort(t *testing.T) {
	s, empty := errorsFixture(t)
	for _, args := range [][]string{
		{"-r"}, {"--report-port", "-c"}, {"-r", "--ca"}, {"-r", "-G", "0x100008"}, {"-r", "-S", "0x100005"}, {"-r", "-D", "0,1,3"}, {"-r", "-D", "0,1,3,3"},
		{"-r", "--counters"}, {"-r", "--data"},
	} {
		a := append([]string{"--threshold-file", empty}, args...)
		theirs, _, tcode := s.RunTool(t, "H-h1", "ibqueryerrors", a...)
		theirs = dropIBWarn(theirs)
		ours, oerr, code := runTool(t, append([]string{"errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", "H-h1"}, a...)...)
		if o, th := maskData(ours), maskData(theirs); o != th || !strings.Contains(th, "Link info:") {
			t.Errorf("ibavtrack errors %v differs from ibqueryerrors:\n%s\n--- ours (exit %d): %s--- theirs (exit %d)", args, golden.LineDiff(th, o), code, oerr, tcode)
		}
	}
}

// TestErrorsWindow: without -o, errors has at most errorsOutstanding MADs
// in flight (discovery and reads); -o is taken as given.
func TestErrorsWindow(t *testing.T) {
	for _, tc := range []struct {
		set     bool
		o, want int
	}{
		{false, 1024, 32}, // the default -o
		{false, 8, 8},
		{true, 64, 64},
		{true, 1024, 1024},
		{true, 4, 4},
	} {
		if got := errorsWindow(tc.set, tc.o); got != tc.want {
			t.Errorf("errorsWindow(%v, %d) = %d, want %d", tc.set, tc.o, got, tc.want)
		}
	}
}
