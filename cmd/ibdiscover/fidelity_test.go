package main

import (
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
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// fidelityCheck says what compareWithIBNetDiscover compares besides the
// topology (-m -f) and the -s lines.
type fidelityCheck struct {
	host  string // where both tools attach ("" = the net file's first node)
	sim   bool   // ibdiscover --sim on the net file must print the same
	cache bool   // the --cache files must be byte-identical
	code  int    // ibdiscover's exit status (ibnetdiscover's is 0)
}

// compareWithIBNetDiscover runs ibdiscover and ibnetdiscover -o 1 on
// sim and compares the topology with -m -f (max hops, the MAD count),
// the -s lines, the SMP count, and as fc asks the embedded simulator's
// output and the cache bytes. ibdiscover --json must agree with the
// topology: its max_hops with "max hops discovered" and its connected
// ports' speeds with the port lines'. It returns ibnetdiscover's topology.
func compareWithIBNetDiscover(t *testing.T, sim *ibsimtest.Sim, stage string, fc fidelityCheck) string {
	t.Helper()
	ours, stderr, code := runOurs(t, append(ibsimArgs(sim, fc.host), "-m", "-f", "-s", "--fixed-timeout")...)
	if code != fc.code {
		t.Fatalf("%s: ibdiscover exit %d: %s", stage, code, stderr)
	}
	theirs, terr, tcode := sim.RunTool(t, fc.host, "ibnetdiscover", "-o", "1", "-m", "-f", "-s")
	if tcode != 0 {
		t.Fatalf("%s: ibnetdiscover exit %d: %s", stage, tcode, terr)
	}
	theirLines, theirs := splitProgress(theirs)
	ourLines, _ := splitProgress(stderr)
	th := stripDate(theirs)
	if o := stripDate(ours); o != th {
		t.Errorf("%s: ibdiscover differs from ibnetdiscover -o 1:\n%s", stage, golden.LineDiff(th, o))
	}
	if ourLines != theirLines {
		t.Errorf("%s: -s lines differ from ibnetdiscover -o 1 -s:\n%s", stage, golden.LineDiff(theirLines, ourLines))
	}
	if oc, tc := smpsSent(t, stderr), madsUsed(theirs); oc > tc {
		t.Errorf("%s: ibdiscover used %d SMPs, ibnetdiscover %d", stage, oc, tc)
	}
	if fc.sim {
		args := []string{"--sim", sim.NetFile, "-m", "-f"}
		if fc.host != "" {
			args = append(args, "--sim-host", fc.host)
		}
		out, e, code := runOurs(t, args...)
		if code != fc.code {
			t.Fatalf("%s: ibdiscover --sim exit %d: %s", stage, code, e)
		}
		if s := stripDate(out); s != th {
			t.Errorf("%s: ibdiscover --sim differs from ibnetdiscover on ibsim:\n%s", stage, golden.LineDiff(th, s))
		}
	}
	if fc.cache {
		dir := t.TempDir()
		oc, tc := filepath.Join(dir, "ours.cache"), filepath.Join(dir, "theirs.cache")
		if _, e, code := runOurs(t, append(ibsimArgs(sim, fc.host), "--cache", oc)...); code != fc.code {
			t.Fatalf("%s: ibdiscover --cache: exit %d: %s", stage, code, e)
		}
		if _, e, code := sim.RunTool(t, fc.host, "ibnetdiscover", "-o", "1", "--cache", tc); code != 0 {
			t.Fatalf("%s: ibnetdiscover --cache: exit %d: %s", stage, code, e)
		}
		ob, tb := mustRead(t, oc), mustRead(t, tc)
		if ob != tb {
			t.Errorf("%s: our cache (%d bytes) differs from ibnetdiscover's (%d bytes)", stage, len(ob), len(tb))
		}
	}
	js, e, code := runOurs(t, append(ibsimArgs(sim, fc.host), "--json")...)
	if code != fc.code {
		t.Fatalf("%s: ibdiscover --json: exit %d: %s", stage, code, e)
	}
	var doc struct {
		Summary struct {
			MaxHops int `json:"max_hops"`
		} `json:"summary"`
		Nodes []struct {
			Ports []struct {
				Width  string          `json:"width_active"`
				Speed  string          `json:"speed_active"`
				Remote json.RawMessage `json:"remote"`
			} `json:"ports"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("%s: --json: %v", stage, err)
	}
	if want := reportedMaxHops(t, th); doc.Summary.MaxHops != want {
		t.Errorf("%s: --json max_hops %d, ibnetdiscover reports %d", stage, doc.Summary.MaxHops, want)
	}
	// Every connected port has a port line.
	jsonSpeeds, lineSpeeds := map[string]int{}, map[string]int{}
	for _, n := range doc.Nodes {
		for _, p := range n.Ports {
			if len(p.Remote) > 0 && string(p.Remote) != "null" {
				jsonSpeeds[p.Width+p.Speed]++
			}
		}
	}
	for _, m := range portSpeed.FindAllStringSubmatch(th, -1) {
		lineSpeeds[m[1]]++
	}
	if fmt.Sprint(jsonSpeeds) != fmt.Sprint(lineSpeeds) {
		t.Errorf("%s: --json connected ports' speeds %v, ibnetdiscover's port lines %v", stage, jsonSpeeds, lineSpeeds)
	}
	return th
}

var (
	portSpeed   = regexp.MustCompile(`(?m)^\[\d+\].* lid \d+ (\d+x[A-Z0-9]+) s=`)
	maxHopsLine = regexp.MustCompile(`(?m)^# Reported max hops discovered: (\d+)$`)
)

// reportedMaxHops is the "max hops discovered" of an -m topology.
func reportedMaxHops(t *testing.T, topo string) int {
	t.Helper()
	m := maxHopsLine.FindStringSubmatch(topo)
	if m == nil {
		t.Fatalf("no max hops line in:\n%s", topo)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// epiDevice is a vendor/device ID pair.
type epiDevice struct{ vendor, device uint32 }

// epiDevices are libibnetdisc's whole rule (rdma-core v44): every
// Mellanox ID whatever the vendor, every Bull ID under Bull's vendor ID,
// and the IDs next to them, Bull's under other vendors.
var epiDevices = []epiDevice{
	// Mellanox switches, any vendor
	{0x2c9, 0xc738}, {0x8f1, 0xc739}, {0x2c9, 0xc73a}, {0x119f, 0xc73b},
	{0x2c9, 0xc839}, {0x8f1, 0xcb20}, {0x2c9, 0xcf08}, {0x2c9, 0xcf09}, {0x66a, 0xd2f0},
	{0x2c9, 0xc737}, {0x2c9, 0xc73c}, {0x2c9, 0xcb21}, {0x2c9, 0xd2f1},
	// Mellanox HCAs, any vendor
	{0x2c9, 0x1003}, {0x8f1, 0x1010}, {0x2c9, 0x101b}, {0x119f, 0xa2d2},
	{0x2c9, 0x1002}, {0x2c9, 0x101c}, {0x2c9, 0xa2d3},
	// Bull switches: SwitchX, Switch-IB 1/2, Quantum
	{0x119f, 0x1b02}, {0x119f, 0x1b50}, {0x119f, 0x1ba0}, {0x119f, 0x1bd0},
	{0x119f, 0x1bd3}, {0x119f, 0x1bd5}, {0x119f, 0x1bf0},
	{0x119f, 0x1bcf}, {0x119f, 0x1bd6}, {0x2c9, 0x1b02}, {0x2c9, 0x1bd0}, {0x8f1, 0x1bf0},
	// Bull HCAs: ConnectX-3, Connect-IB, ConnectX-4, Sequana HDR/HDR100
	{0x119f, 0x1b33}, {0x119f, 0x1b73}, {0x119f, 0x1b40}, {0x119f, 0x1b41},
	{0x119f, 0x1b60}, {0x119f, 0x1b61}, {0x119f, 0x1b83}, {0x119f, 0x1b93},
	{0x119f, 0x1b94}, {0x119f, 0x1bb4}, {0x119f, 0x1bb5}, {0x119f, 0x1bc4},
	{0x119f, 0x1bc5}, {0x119f, 0x1bc6},
	{0x119f, 0x1b34}, {0x119f, 0x1bc3}, {0x119f, 0x1bc7}, {0x2c9, 0x1b33}, {0x2c9, 0x1bc6},
}

// epiNet is a chain of switches, each with one CA; every device ID of
// devs is used once by a switch and once by a CA, every port enables
// FDR10 (a link runs FDR10, shown as QDR unless the ExtendedPortInfo is
// read).
func epiNet(devs []epiDevice) string {
	var b strings.Builder
	for i, d := range devs {
		fmt.Fprintf(&b, "vendid=%#x\ndevid=%#x\nswitchguid=%#x\nSwitch\t4 \"S%d\"\t\t# \"sw%d\" enhanced port 0 lid 0 lmc 0\n", d.vendor, d.device, 0x0a00000000001000+i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "[1]\t\"S%d\"[2]\t\t# lid 0 4xFDR10\n", i-1)
		}
		if i < len(devs)-1 {
			fmt.Fprintf(&b, "[2]\t\"S%d\"[1]\t\t# lid 0 4xFDR10\n", i+1)
		}
		fmt.Fprintf(&b, "[3]\t\"H%d\"[1]\t\t# lid 0 4xFDR10\n\n", i)
		c := devs[len(devs)-1-i] // the CA of the other end of the list
		fmt.Fprintf(&b, "vendid=%#x\ndevid=%#x\ncaguid=%#x\nCa\t1 \"H%d\"\t\t# \"ca%d\"\n[1](%x)\t\"S%d\"[3]\t\t# lid 0 lmc 0 \"sw%d\" lid 0 4xFDR10\n\n",
			c.vendor, c.device, 0x0b00000000002000+i, i, i, 0x0b00000000002000+i, i, i)
	}
	return b.String()
}

// TestCompatMlnxEPIVendors: on a fabric of every device and vendor ID of
// libibnetdisc's ExtendedPortInfo rule (and the IDs next to them),
// ibdiscover prints the FDR10 links, node order, -s lines and MAD count
// as ibnetdiscover 44 does, writes the same cache bytes, and its JSON
// agrees; before OpenSM (links Init) and after (Active).
func TestCompatMlnxEPIVendors(t *testing.T) {
	ibsimtest.Require(t)
	net := ibsimtest.WriteNetFile(t, epiNet(epiDevices))
	sim := ibsimtest.Start(t, net)
	for _, host := range []string{"", "S20"} {
		compareWithIBNetDiscover(t, sim, "before OpenSM, host "+host, fidelityCheck{host: host, sim: true, cache: true})
	}
	sim.RunOpenSM(t, "H0", t.TempDir())
	th := compareWithIBNetDiscover(t, sim, "after OpenSM", fidelityCheck{cache: true})
	// The fabric must show both sides of the rule.
	if fdr10, qdr := strings.Count(th, "4xFDR10 s="), strings.Count(th, "4xQDR s="); fdr10 == 0 || qdr == 0 {
		t.Fatalf("ibnetdiscover shows %d FDR10 and %d QDR port lines: the fabric does not test the rule", fdr10, qdr)
	}
}

// chainNet is a chain of n 3-port switches with a CA at each end (HA at
// S0, HB at the last).
func chainNet(n int) string {
	var b strings.Builder
	b.WriteString("vendid=0x2c9\ndevid=0x1003\ncaguid=0x0b00000000000100\nCa\t1 \"HA\"\t\t# \"hA\"\n[1](b00000000000101)\t\"S0\"[1]\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "vendid=0x2c9\ndevid=0xc738\nswitchguid=%#x\nSwitch\t3 \"S%d\"\t\t# \"s%d\" enhanced port 0 lid 0 lmc 0\n", 0x0a00000000001000+i, i, i)
		if i == 0 {
			b.WriteString("[1]\t\"HA\"[1]\n")
		} else {
			fmt.Fprintf(&b, "[1]\t\"S%d\"[2]\n", i-1)
		}
		if i < n-1 {
			fmt.Fprintf(&b, "[2]\t\"S%d\"[1]\n\n", i+1)
		} else {
			b.WriteString("[2]\t\"HB\"[1]\n\n")
		}
	}
	fmt.Fprintf(&b, "vendid=0x2c9\ndevid=0x1003\ncaguid=0x0b00000000000200\nCa\t1 \"HB\"\t\t# \"hB\"\n[1](b00000000000201)\t\"S%d\"[2]\n", n-1)
	return b.String()
}

// TestCompatPast63Hops: on chains of 62 to 70 switches (nodes up to 71
// hops away), -m's max hops and MAD count, the -s lines, the cache's
// max-hops byte and JSON max_hops are ibnetdiscover's, which stops
// extending directed routes at 63 hops. Past 63 hops ibdiscover says the
// result is partial (exit 3); ibnetdiscover prints an error and exits 0.
func TestCompatPast63Hops(t *testing.T) {
	ibsimtest.Require(t)
	for _, n := range []int{62, 63, 64, 70} {
		sim := ibsimtest.Start(t, ibsimtest.WriteNetFile(t, chainNet(n)))
		for _, host := range []string{"", "HB", "S5"} {
			code := 0
			if n+1 > 63 && host != "S5" || n > 63+5 {
				code = 3
			}
			th := compareWithIBNetDiscover(t, sim, fmt.Sprintf("chain of %d, host %q", n, host), fidelityCheck{host: host, sim: true, cache: true, code: code})
			if host == "" && n == 70 && reportedMaxHops(t, th) != 63 {
				t.Errorf("chain of 70: ibnetdiscover reports %d max hops, the test expects 63", reportedMaxHops(t, th))
			}
		}
	}
}

// TestPartialCachesSurviveIBNetDiscover: caches ibdiscover writes from
// partial discoveries (a switch whose PortInfo answers are lost, a leaf's,
// a dead switch, random drops) on fat trees whose spines have unused
// ports survive every use of ibnetdiscover 44: it loads them (topology,
// -p, -l, -g) and runs --diff of them against a clean cache of its own,
// in either order, with every --diffcheck, printing what ibdiscover
// prints. (ibnetdiscover 44's --diff follows the NULL remote port of a
// port that one cache holds unlinked and the other does not hold.)
func TestPartialCachesSurviveIBNetDiscover(t *testing.T) {
	ibsimtest.Require(t)
	dir := t.TempDir()
	for _, tree := range []string{"fattree:levels=2,radix=8,leaves=2", "fattree:levels=2,radix=16,leaves=4"} {
		sim := ibsimtest.Start(t, generated(t, tree))
		clean := filepath.Join(dir, "clean.cache")
		if _, e, code := sim.RunTool(t, "", "ibnetdiscover", "-o", "1", "--cache", clean); code != 0 {
			t.Fatalf("%s: ibnetdiscover --cache: exit %d: %s", tree, code, e)
		}
		for i, fault := range []string{`Error "S0" 100 21`, `Error "L1" 100 21`, `Kill "S1"`, "Drop 10", "Drop 15", "Drop 20"} {
			spec := tree + ";" + fault
			partial := filepath.Join(dir, fmt.Sprintf("partial%d.cache", i))
			_, e, code := runOurs(t, "--sim", spec, "-t", "20", "--retries", "1", "--fixed-timeout", "--cache", partial)
			if code != 3 && code != 0 {
				t.Fatalf("%s: ibdiscover --cache: exit %d: %s", spec, code, e)
			}
			// (the simulator's drops are seeded: the same SMPs every run)
			if code != 3 {
				t.Fatalf("%s: discovery complete: the case tests nothing", spec)
			}
			runs := [][]string{{"--load-cache", partial}, {"--load-cache", partial, "-p"}, {"--load-cache", partial, "-l"}, {"--load-cache", partial, "-g"}}
			for _, dc := range []string{"", "sw,port", "port", "sw,ca,router,port", "sw,ca,router,port,lid,nodedesc", "sw,port,nodedesc", "ca,port"} {
				for _, pair := range [][2]string{{partial, clean}, {clean, partial}} {
					args := []string{"--load-cache", pair[0], "--diff", pair[1]}
					if dc != "" {
						args = append(args, "--diffcheck", dc)
					}
					runs = append(runs, args)
				}
			}
			for _, args := range runs {
				theirs, terr, tcode := ibnetdiscoverLoad(t, args...)
				if tcode != 0 {
					t.Errorf("%s: ibnetdiscover %v: exit %d: %s", spec, args, tcode, terr)
					continue
				}
				ours, oerr, code := runOurs(t, args...)
				if code != 0 {
					t.Errorf("%s: ibdiscover %v: exit %d: %s", spec, args, code, oerr)
					continue
				}
				if o, th := stripDate(ours), stripDate(theirs); o != th {
					t.Errorf("%s %v: ibdiscover differs from ibnetdiscover:\n%s", spec, args, golden.LineDiff(th, o))
				}
			}
		}
	}
}

// bigSwitchNet is a switch of n ports with CAs on ports 1 and n and a
// second switch on port n-1 (with a CA of its own).
func bigSwitchNet(n int) string {
	return fmt.Sprintf(`Switch	%[1]d "S1"		# "big" enhanced port 0 lid 0 lmc 0
[1]	"H1"[1]
[%[2]d]	"S2"[1]
[%[1]d]	"H2"[1]

Switch	4 "S2"		# "small" enhanced port 0 lid 0 lmc 0
[1]	"S1"[%[2]d]
[2]	"H3"[1]

Ca	1 "H1"		# "h1"
[1]	"S1"[1]

Ca	1 "H2"		# "h2"
[1]	"S1"[%[1]d]

Ca	1 "H3"		# "h3"
[1]	"S2"[2]
`, n, n-1)
}

// TestCompat255PortSwitch: a 255-port switch, which ibsim accepts, is
// accepted by the embedded simulator and discovered as ibnetdiscover 44
// discovers it; a 256-port one, which ibsim
// loads as a 0-port switch (NodeInfo's NumPorts is one byte), is refused.
// Its cache cannot be written (256 port records, a one-byte count):
// ibnetdiscover writes a file it cannot load back; ibdiscover prints
// its output, writes no file and says why in one line (exit 1).
func TestCompat255PortSwitch(t *testing.T) {
	ibsimtest.Require(t)
	net := ibsimtest.WriteNetFile(t, bigSwitchNet(255))
	sim := ibsimtest.Start(t, net)
	// (OpenSM 3.3.23 does not finish a sweep of a 255-port switch: the
	// fabric is compared without LIDs.)
	compareWithIBNetDiscover(t, sim, "host H3", fidelityCheck{host: "H3", sim: true})
	want := compareWithIBNetDiscover(t, sim, "host S1", fidelityCheck{sim: true})

	dir := t.TempDir()
	theirs := filepath.Join(dir, "theirs.cache")
	if _, e, code := sim.RunTool(t, "", "ibnetdiscover", "-o", "1", "--cache", theirs); code != 0 {
		t.Fatalf("ibnetdiscover --cache: exit %d: %s", code, e)
	}
	if _, _, code := ibnetdiscoverLoad(t, "--load-cache", theirs); code == 0 {
		t.Errorf("ibnetdiscover loads its own cache of a 255-port switch: the documented reason to refuse is gone")
	}
	ours := filepath.Join(dir, "ours.cache")
	out, stderr, code := runOurs(t, append(ibsimArgs(sim, ""), "-m", "-f", "--cache", ours)...)
	if code != exitcode.Fatal {
		t.Errorf("--cache of a 255-port switch: exit %d, want %d", code, exitcode.Fatal)
	}
	if o := stripDate(out); o != want {
		t.Errorf("--cache of a 255-port switch: the topology is not printed as without --cache:\n%s", golden.LineDiff(want, o))
	}
	if lines := strings.Split(strings.TrimSpace(string(stderr)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--cache "+ours+": not written:") {
		t.Errorf("--cache of a 255-port switch: stderr %q, want one line naming the file", stderr)
	}
	clitest.NoLeftovers(t, dir, "theirs.cache")

	_, stderr, code = runOurs(t, "--sim", ibsimtest.WriteNetFile(t, bigSwitchNet(256)))
	if code != exitcode.Usage || !strings.Contains(string(stderr), "256 ports (max 255)") {
		t.Errorf("--sim of a 256-port switch: exit %d: %s", code, stderr)
	}
}

// mustRead returns file's content, failing t when it cannot be read.
func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
