//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
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
// (-m), prints the -s lines, the topology, -g, -p, -l, -H and -S, and
// writes the cache as ibnetdiscover 44 does, which takes the second node
// it reaches with a known GUID for the first: it links the port it came
// through to the known node's port (unlinking that port's earlier peer),
// reads a CA twin's PortInfo into the known node's port and explores no
// twin. Switch and CA twins, adjacent and far apart, on one level and
// on different levels, attached at either twin and elsewhere, with the
// LIDs OpenSM assigned; and a port GUID shared by two CAs. Where a twin
// has more ports than the node it is taken for, libibnetdisc stores the
// port it came from past the node's ports (beyond: the hosts where it
// does): ibnetdiscover's cache holds a record of it that no node lists,
// which ibnetdiscover 44 itself reads back from freed memory; ours
// leaves that record out and is otherwise the same bytes.
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
		plus     uint64 // the twin's GUID is of's + plus
		hosts    []string
		beyond   []string
	}{
		{"H2", "H1", 0, []string{"", "H1", "H2", "S3"}, nil},          // CA twins on one switch
		{"H3", "H0", 0, []string{"", "H0", "H3", "H4"}, nil},          // CA twins far apart
		{"H5", "HD", 0, []string{"", "H5", "HD"}, []string{"", "H5"}}, // a one-port twin of a two-port CA
		{"S2", "S1", 0, []string{"", "H5", "H1"}, nil},                // switch twins cabled together
		{"S3", "S0", 0, []string{"", "H3", "H4"}, nil},                // switch twins far apart
		{"S3", "S2", 0, []string{"", "H3", "HD"}, nil},                // switch twins with a CA between them
		{"H1", "H3", 0, []string{"", "H1", "H3"}, nil},                // the twin reached first
		{"H5", "HD", 1, []string{"", "H5", "HD"}, nil},                // H5's port GUID is HD's port 2's
	} {
		name := c.twin + "=" + c.of
		if c.plus != 0 {
			name += fmt.Sprintf("+%d", c.plus)
		}
		t.Run(name, func(t *testing.T) {
			// (OpenSM first: it does not finish a sweep of a fabric
			// with twins)
			sim := ibsimtest.Start(t, net, ibsimtest.WithConsole())
			sim.RunOpenSM(t, "H4", t.TempDir())
			sim.Console(t, fmt.Sprintf("Guid %q %#x", c.twin, guids[c.of]+c.plus))
			for _, host := range c.hosts {
				beyond := 0
				if slices.Contains(c.beyond, host) {
					beyond = 1
				}
				compareTwins(t, sim, fmt.Sprintf("host %q", host), host, beyond)
			}
		})
	}
}

// twinOutputs are the outputs compareTwins compares with ibnetdiscover's.
var twinOutputs = [][]string{{"-m", "-f"}, {"-g"}, {"-p"}, {"-l"}, {"-H"}, {"-S"}}

// compareTwins compares ibdiscover with ibnetdiscover -o 1 on a fabric
// with twins: the -s lines, the -m MAD count, the topology (-m -f), -g,
// -p, -l, -H, -S, the cache bytes (but for the beyond records of ports
// past their node's ports ibnetdiscover writes), and what each tool
// prints from each tool's cache; --json validates against its schema.
func compareTwins(t *testing.T, sim *ibsimtest.Sim, stage, host string, beyond int) {
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
	// --json shows the same fabric (a link may end at a port past its
	// node's ports)
	if schema, err := jsonschema.Load("../../docs/fabric.schema.json"); err != nil {
		t.Fatal(err)
	} else if js, e, code := runOurs(t, append(ibsimArgs(sim, host), "--json")...); code != 0 {
		t.Errorf("%s: --json: exit %d: %s", stage, code, e)
	} else if err := schema.ValidateJSON(js); err != nil {
		t.Errorf("%s: --json does not validate against docs/fabric.schema.json: %v", stage, err)
	}
	dir := t.TempDir()
	oc, tc := filepath.Join(dir, "ours.cache"), filepath.Join(dir, "theirs.cache")
	if _, e, code := runOurs(t, append(ibsimArgs(sim, host), "--cache", oc)...); code != 0 {
		t.Fatalf("%s: ibdiscover --cache: exit %d: %s", stage, code, e)
	}
	if _, e, code := sim.RunTool(t, host, "ibnetdiscover", "-o", "1", "--cache", tc); code != 0 {
		t.Fatalf("%s: ibnetdiscover --cache: exit %d: %s", stage, code, e)
	}
	ob, tb := mustRead(t, oc), mustRead(t, tc)
	fixed, orphans := withoutOrphanPorts(t, []byte(tb))
	if orphans != beyond {
		t.Errorf("%s: ibnetdiscover's cache holds %d port records of ports past their node's ports, want %d", stage, orphans, beyond)
	}
	if ob != string(fixed) {
		t.Errorf("%s: our cache (%d bytes) differs from ibnetdiscover's (%d bytes, %d without the ports past their node's)", stage, len(ob), len(tb), len(fixed))
	}
	compareLoaded(t, host, oc)
	if orphans == 0 {
		compareLoaded(t, host, tc)
		return
	}
	// ibnetdiscover 44 frees the records of ports past their node's
	// ports when it loads its cache and prints their links from the
	// freed memory: we print from its cache what it prints from the
	// cache without them (ours).
	for _, extra := range [][]string{nil, {"-p"}, {"-l"}, {"-g"}} {
		want, terr, tcode := ibnetdiscoverLoad(t, append([]string{"--load-cache", oc}, extra...)...)
		if tcode != 0 {
			t.Fatalf("%s: ibnetdiscover --load-cache ours %v: exit %d: %s", stage, extra, tcode, terr)
		}
		got, oerr, code := runOurs(t, append([]string{"--load-cache", tc}, extra...)...)
		if code != 0 {
			t.Fatalf("%s: ibdiscover --load-cache theirs %v: exit %d: %s", stage, extra, code, oerr)
		}
		if g, w := stripDate(got), stripDate(want); g != w {
			t.Errorf("%s %v: ibdiscover --load-cache of ibnetdiscover's cache differs from ibnetdiscover's from ours:\n%s", stage, extra, golden.LineDiff(w, g))
		}
	}
}

// withoutOrphanPorts returns an ibnetdiscover cache without the port
// records no node lists among its port keys (libibnetdisc writes one for
// a port past its node's ports, which a twin with more ports answered
// from), the links to them written as no link, and how many it left out.
func withoutOrphanPorts(t *testing.T, b []byte) ([]byte, int) {
	t.Helper()
	le := binary.LittleEndian
	if len(b) < ibndcache.HeaderLen {
		t.Fatalf("cache of %d bytes", len(b))
	}
	nodes, ports := int(le.Uint32(b[8:])), int(le.Uint32(b[12:]))
	type key struct {
		guid uint64
		num  uint8
	}
	keys := map[key]bool{}
	off := ibndcache.HeaderLen
	for i := 0; i < nodes; i++ {
		if off+ibndcache.NodeLen > len(b) {
			t.Fatalf("cache truncated in node %d", i)
		}
		k := int(b[off+ibndcache.NodeLen-1])
		off += ibndcache.NodeLen
		for j := 0; j < k; j++ {
			keys[key{le.Uint64(b[off:]), b[off+8]}] = true
			off += ibndcache.PortKeyLen
		}
	}
	if off+ports*ibndcache.PortLen != len(b) {
		t.Fatalf("cache of %d bytes: %d ports from offset %d", len(b), ports, off)
	}
	out := append([]byte(nil), b[:off]...)
	orphans := 0
	for i := 0; i < ports; i++ {
		r := b[off+i*ibndcache.PortLen : off+(i+1)*ibndcache.PortLen]
		if !keys[key{le.Uint64(r), r[8]}] {
			orphans++
			continue
		}
		r = append([]byte(nil), r...)
		remote := ibndcache.PortLen - 10 // flag, port GUID, port number
		if r[remote] == 1 && !keys[key{le.Uint64(r[remote+1:]), r[remote+9]}] {
			clear(r[remote:])
		}
		out = append(out, r...)
	}
	le.PutUint32(out[12:], uint32(ports-orphans))
	return out, orphans
}

// fdr10TwinNet: one switch with CAs H0 and H2 on FDR10 links and H1 on a
// QDR link (devices whose ExtendedPortInfo libibnetdisc reads).
const fdr10TwinNet = `vendid=0x2c9
devid=0xc738
switchguid=0x0a00000000000010
Switch	4 "S0"		# "s0" enhanced port 0 lid 0 lmc 0
[1]	"H0"[1]		# lid 0 4xFDR10
[2]	"H1"[1]		# lid 0 4xQDR
[3]	"H2"[1]		# lid 0 4xFDR10

vendid=0x2c9
devid=0x1003
caguid=0x0b00000000000100
Ca	1 "H0"		# "h0"
[1](b00000000000101)	"S0"[1]		# lid 0 lmc 0 "s0" lid 0 4xFDR10

vendid=0x2c9
devid=0x1003
caguid=0x0b00000000000110
Ca	1 "H1"		# "h1"
[1](b00000000000111)	"S0"[2]		# lid 0 lmc 0 "s0" lid 0 4xQDR

vendid=0x2c9
devid=0x1003
caguid=0x0b00000000000120
Ca	1 "H2"		# "h2"
[1](b00000000000121)	"S0"[3]		# lid 0 lmc 0 "s0" lid 0 4xFDR10
`

// TestCompatDuplicateGUIDsFDR10: a CA twin's Mellanox ExtendedPortInfo
// goes into the known CA's port with its PortInfo, as in ibnetdiscover 44:
// a QDR twin of an FDR10 CA and an FDR10 twin of a QDR CA.
func TestCompatDuplicateGUIDsFDR10(t *testing.T) {
	ibsimtest.Require(t)
	net := ibsimtest.WriteNetFile(t, fdr10TwinNet)
	guids := map[string]uint64{"H0": 0x0b00000000000100, "H1": 0x0b00000000000110, "H2": 0x0b00000000000120}
	for _, c := range []struct{ twin, of, speed string }{{"H1", "H0", "4xQDR"}, {"H2", "H1", "4xFDR10"}} {
		t.Run(c.twin+"="+c.of, func(t *testing.T) {
			sim := ibsimtest.Start(t, net, ibsimtest.WithConsole())
			sim.RunOpenSM(t, "H2", t.TempDir())
			sim.Console(t, fmt.Sprintf("Guid %q %#x", c.twin, guids[c.of]))
			for _, host := range []string{"", c.twin, c.of} {
				compareTwins(t, sim, fmt.Sprintf("host %q", host), host, 0)
			}
			// (the known CA's port runs at its twin's speed)
			theirs, _, _ := sim.RunTool(t, "", "ibnetdiscover", "-o", "1")
			line := regexp.MustCompile(fmt.Sprintf(`caguid=%#x\nCa.*\n\[1\].* (4x\w+)\n`, guids[c.of])).FindStringSubmatch(string(theirs))
			if line == nil || line[1] != c.speed {
				t.Fatalf("ibnetdiscover does not show %s's port at its twin's speed %s: the fabric does not test the rule:\n%s", c.of, c.speed, theirs)
			}
		})
	}
}
