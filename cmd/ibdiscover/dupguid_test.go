package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// twinNet: four switches (S1-S2 cabled to each other too), single-port
// CAs H0..H5 and a two-port CA HD on S2 and S3.
var twinNet = `vendid=0x2c9
devid=0xc738
switchguid=0x0a00000000000010
Switch	8 "S0"		# "s0" enhanced port 0 lid 0 lmc 0
[1]	"H0"[1]
[2]	"S1"[1]
[3]	"S2"[1]
[4]	"H4"[1]

vendid=0x2c9
devid=0xc738
switchguid=0x0a00000000000011
Switch	8 "S1"		# "s1" enhanced port 0 lid 0 lmc 0
[1]	"S0"[2]
[2]	"H1"[1]
[3]	"H2"[1]
[4]	"S3"[1]
[5]	"S2"[2]

vendid=0x2c9
devid=0xc738
switchguid=0x0a00000000000012
Switch	8 "S2"		# "s2" enhanced port 0 lid 0 lmc 0
[1]	"S0"[3]
[2]	"S1"[5]
[3]	"H5"[1]
[4]	"HD"[1]

vendid=0x2c9
devid=0xc738
switchguid=0x0a00000000000013
Switch	8 "S3"		# "s3" enhanced port 0 lid 0 lmc 0
[1]	"S1"[4]
[2]	"H3"[1]
[3]	"HD"[2]
` + twinCAs

var twinCAs = func() string {
	var b strings.Builder
	for i, peer := range []string{`"S0"[1]`, `"S1"[2]`, `"S1"[3]`, `"S3"[2]`, `"S0"[4]`, `"S2"[3]`} {
		fmt.Fprintf(&b, "\nvendid=0x2c9\ndevid=0x1003\ncaguid=%#x\nCa\t1 \"H%d\"\t\t# \"h%d\"\n[1](%x)\t%s\n", 0x0b00000000000100+i*0x10, i, i, 0x0b00000000000101+i*0x10, peer)
	}
	b.WriteString("\nvendid=0x2c9\ndevid=0x1003\ncaguid=0x0b00000000000200\nCa\t2 \"HD\"\t\t# \"hd\"\n[1](b00000000000201)\t\"S2\"[4]\n[2](b00000000000202)\t\"S3\"[3]\n")
	return b.String()
}()

var nodeGUIDLine = regexp.MustCompile(`(?m)^(switchguid|caguid|rtguid)=.*$`)

// TestCompatDuplicateGUIDs: two nodes with one GUID, made with ibsim's
// console Guid command: ibdiscover numbers the nodes, counts the MADs
// (-m) and prints the -s lines as ibnetdiscover 44 does, which takes the
// second node it reaches with a known GUID for the first (it reads a
// CA twin's PortInfo into the first node's port and explores no twin).
// Switch and CA twins, adjacent and far apart, attached at either twin
// and elsewhere, with the LIDs OpenSM assigned.
func TestCompatDuplicateGUIDs(t *testing.T) {
	ibsimtest.Require(t)
	net := ibsimtest.WriteNetFile(t, twinNet)
	guids := map[string]uint64{"S0": 0x0a00000000000010, "S1": 0x0a00000000000011, "S2": 0x0a00000000000012, "S3": 0x0a00000000000013,
		"HD": 0x0b00000000000200}
	for i := 0; i < 6; i++ {
		guids[fmt.Sprintf("H%d", i)] = uint64(0x0b00000000000100 + i*0x10)
	}
	for _, c := range []struct {
		twin, of string
		hosts    []string
	}{
		{"H2", "H1", []string{"", "H1", "H2", "S3"}}, // CA twins on one switch
		{"H3", "H0", []string{"", "H0", "H3", "H4"}}, // CA twins far apart
		{"H5", "HD", []string{"", "H5", "HD"}},       // a one-port twin of a two-port CA
		{"S2", "S1", []string{"", "H5", "H1"}},       // switch twins cabled together
		{"S3", "S0", []string{"", "H3", "H4"}},       // switch twins far apart
		{"S3", "S2", []string{"", "H3", "HD"}},       // switch twins with a CA between them
		{"H1", "H3", []string{"", "H1", "H3"}},       // the twin reached first
	} {
		t.Run(c.twin+"="+c.of, func(t *testing.T) {
			// (OpenSM first: it does not finish a sweep of a fabric
			// with twins)
			sim := ibsimtest.Start(t, net, ibsimtest.WithConsole())
			sim.RunOpenSM(t, "H4", t.TempDir())
			sim.Console(t, fmt.Sprintf("Guid %q %#x", c.twin, guids[c.of]))
			for _, host := range c.hosts {
				compareTwins(t, sim, fmt.Sprintf("host %q", host), host)
			}
		})
	}
}

// twinOutputs are the outputs compareTwins compares with ibnetdiscover's.
var twinOutputs = [][]string{{"-m", "-f"}, {"-g"}, {"-p"}, {"-l"}, {"-H"}, {"-S"}}

// compareTwins compares ibdiscover with ibnetdiscover -o 1 on a fabric
// with twins: the -s lines, the -m MAD count, the topology (-m -f), -g,
// -p, -l, -H, -S, the cache bytes, and what each tool prints from each
// tool's cache.
func compareTwins(t *testing.T, sim *ibsimtest.Sim, stage, host string) {
	t.Helper()
	_, stderr, _ := runOurs(t, append(ibsimArgs(sim, host), "-m", "-s", "--fixed-timeout")...)
	theirs, terr, tcode := sim.RunTool(t, host, "ibnetdiscover", "-o", "1", "-m", "-s")
	if tcode != 0 {
		t.Fatalf("%s: ibnetdiscover exit %d: %s", stage, tcode, terr)
	}
	ours, _, _ := runOurs(t, append(ibsimArgs(sim, host), "-m")...)
	theirLines, theirs := splitProgress(theirs)
	ourLines, _ := splitProgress(stderr)
	if ourLines != theirLines {
		t.Errorf("%s: -s lines differ from ibnetdiscover -o 1 -s:\n%s", stage, golden.LineDiff(theirLines, ourLines))
	}
	if o, th := madsUsed(ours), madsUsed(theirs); o != th {
		t.Errorf("%s: ibdiscover -m counts %d MADs, ibnetdiscover %d", stage, o, th)
	}
	on, tn := strings.Join(nodeGUIDLine.FindAllString(string(ours), -1), "\n"), strings.Join(nodeGUIDLine.FindAllString(string(theirs), -1), "\n")
	if on != tn {
		t.Errorf("%s: node order differs from ibnetdiscover's:\n%s", stage, golden.LineDiff(tn, on))
	}
	for _, extra := range twinOutputs {
		theirs, terr, tcode := sim.RunTool(t, host, "ibnetdiscover", append([]string{"-o", "1"}, extra...)...)
		if tcode != 0 {
			t.Fatalf("%s %v: ibnetdiscover exit %d: %s", stage, extra, tcode, terr)
		}
		ours, oerr, code := runOurs(t, append(ibsimArgs(sim, host), extra...)...)
		if code != 0 {
			t.Errorf("%s %v: ibdiscover exit %d: %s", stage, extra, code, oerr)
		}
		if o, th := stripDate(ours), stripDate(theirs); o != th {
			t.Errorf("%s %v: differs from ibnetdiscover:\n%s", stage, extra, golden.LineDiff(th, o))
		}
	}
	dir := t.TempDir()
	oc, tc := filepath.Join(dir, "ours.cache"), filepath.Join(dir, "theirs.cache")
	if _, e, code := runOurs(t, append(ibsimArgs(sim, host), "--cache", oc)...); code != 0 {
		t.Fatalf("%s: ibdiscover --cache: exit %d: %s", stage, code, e)
	}
	if _, e, code := sim.RunTool(t, host, "ibnetdiscover", "-o", "1", "--cache", tc); code != 0 {
		t.Fatalf("%s: ibnetdiscover --cache: exit %d: %s", stage, code, e)
	}
	if ob, tb := mustRead(t, oc), mustRead(t, tc); ob != tb {
		t.Errorf("%s: our cache (%d bytes) differs from ibnetdiscover's (%d bytes)", stage, len(ob), len(tb))
	}
	for _, cache := range []string{oc, tc} {
		compareLoaded(t, sim, host, cache)
	}
}
