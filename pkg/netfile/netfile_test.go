package netfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const examples = "/usr/share/doc/ibsim-utils/net-examples/"

// TestIbsimExamples parses the example files shipped with ibsim-utils.
// GUIDs follow ibsim's allocation (switches 0x200000+, CAs 0x100000+ with
// the base advancing by NumPorts+1).
func TestIbsimExamples(t *testing.T) {
	if _, err := os.Stat(examples); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ibsim-utils examples missing")
		}
		t.Skip("ibsim-utils examples not installed")
	}
	f, err := ParseFile(examples + "net.2sw2path4hca")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id   string
		typ  NodeType
		guid uint64
		np   int
	}{
		{"Switch1", Switch, 0x200000, 8},
		{"Switch2", Switch, 0x200001, 8},
		{"Hca1", CA, 0x100000, 2},
		{"Hca2", CA, 0x100003, 2},
		{"Hca3", CA, 0x100006, 2},
		{"Hca4", CA, 0x100009, 2},
	}
	if len(f.Nodes) != len(want) {
		t.Fatalf("got %d nodes", len(f.Nodes))
	}
	for i, w := range want {
		n := &f.Nodes[i]
		if n.ID != w.id || n.Type != w.typ || n.GUID != w.guid || n.NumPorts != w.np || n.SysImageGUID != w.guid {
			t.Errorf("node %d = %s %v %#x %d, want %+v", i, n.ID, n.Type, n.GUID, n.NumPorts, w)
		}
	}
	sw1 := &f.Nodes[0]
	if p := sw1.Ports[3]; f.Nodes[p.Remote].ID != "Switch2" || p.RemotePort != 3 {
		t.Errorf("Switch1[3] -> %v[%d]", p.Remote, p.RemotePort)
	}
	if sw1.Ports[4].Linked() {
		t.Error("Switch1[4] should be unlinked")
	}
	if got := f.Nodes[2].PortGUID(1); got != 0x100001 {
		t.Errorf("Hca1 port 1 GUID %#x", got)
	}
	entries, _ := filepath.Glob(examples + "net*")
	for _, e := range entries {
		if _, err := ParseFile(e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
}

func TestTestdataFabrics(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/fabrics/*.net")
	if len(files) < 8 {
		t.Fatalf("only %d testdata fabrics", len(files))
	}
	for _, file := range files {
		f, err := ParseFile(file)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		// Round trip through the writer.
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		g, err := Parse(file+"(written)", buf.Bytes())
		if err != nil {
			t.Errorf("%s: re-parse: %v\n%s", file, err, buf.String())
			continue
		}
		assertSame(t, file, f, g)
	}
}

func assertSame(t *testing.T, name string, a, b *Fabric) {
	t.Helper()
	if len(a.Nodes) != len(b.Nodes) {
		t.Fatalf("%s: %d vs %d nodes", name, len(a.Nodes), len(b.Nodes))
	}
	for i := range a.Nodes {
		x, y := &a.Nodes[i], &b.Nodes[i]
		if x.ID != y.ID || x.Type != y.Type || x.GUID != y.GUID || x.SysImageGUID != y.SysImageGUID ||
			x.VendorID != y.VendorID || x.DeviceID != y.DeviceID || x.Description() != y.Description() ||
			x.NumPorts != y.NumPorts || x.EnhancedPort0 != y.EnhancedPort0 {
			t.Errorf("%s: node %d differs: %+v vs %+v", name, i, *x, *y)
			continue
		}
		for p := range x.Ports {
			if x.Ports[p] != y.Ports[p] {
				t.Errorf("%s: %s[%d]: %+v vs %+v", name, x.ID, p, x.Ports[p], y.Ports[p])
			}
		}
	}
}

// TestMixed checks the ibnetdiscover annotations: vendid/devid/sysimgguid,
// GUID lines, header lid/lmc/enhanced, CA port LIDs, width/speed tokens.
func TestMixed(t *testing.T) {
	f, err := ParseFile("../../testdata/fabrics/mixed.net")
	if err != nil {
		t.Fatal(err)
	}
	i, _ := f.Lookup("S-7cfe900300a0b000")
	swA := &f.Nodes[i]
	if swA.GUID != 0x7cfe900300a0b000 || swA.VendorID != 0x2c9 || swA.DeviceID != 0xcb20 ||
		swA.SysImageGUID != 0x7cfe900300a0b000 || swA.EnhancedPort0 != 1 || swA.Desc != "SwA" ||
		swA.Ports[0].LID != 1 {
		t.Errorf("SwA = %+v", *swA)
	}
	i, _ = f.Lookup("S-7cfe900300a0c000")
	if n := &f.Nodes[i]; n.EnhancedPort0 != -1 || n.Ports[0].LID != 2 || n.DeviceID != 0xc738 || n.SysImageGUID != n.GUID {
		t.Errorf("SwB = %+v", *n)
	}
	tests := []struct {
		id         string
		port       int
		lid        uint16
		w, s, e    uint8
		fdr10      bool
		vend, sysg uint64
	}{
		{"H-0c42a10300000a00", 1, 3, 3, 7, 3, true, 0x2c9, 0xc42a10300000a03},
		{"H-0002c90300000c00", 1, 5, 3, 7, 0, true, 0x2c9, 0x2c90300000c00},
		{"H-0002c90300000d00", 1, 6, 11, 7, 0, false, 0, 0x2c90300000d00},
		{"H-0002c90300000e00", 1, 11, 16, 7, 7, true, 0, 0x2c90300000e00},
		{"H-0011750000000e00", 1, 7, 3, 3, 0, false, 0x8086, 0x11750000000e00},
		{"H-0011750000000e00", 2, 10, 3, 1, 0, false, 0x8086, 0x11750000000e00},
	}
	for _, tt := range tests {
		i, ok := f.Lookup(tt.id)
		if !ok {
			t.Fatalf("%s missing", tt.id)
		}
		n := &f.Nodes[i]
		p := n.Ports[tt.port]
		if p.LID != tt.lid || p.WidthEnabled != tt.w || p.SpeedEnabled != tt.s || p.ExtSpeedEnabled != tt.e ||
			p.FDR10 != tt.fdr10 || uint64(n.VendorID) != tt.vend || n.SysImageGUID != tt.sysg {
			t.Errorf("%s[%d] = %+v vendor %#x sysimg %#x", tt.id, tt.port, p, n.VendorID, n.SysImageGUID)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"port range", "Switch 8 \"sw1\"\n[9] \"h\"[1]\n", `x.net:2: port 9 out of range 1..8 for "sw1"`},
		{"port zero", "Switch 8 \"sw1\"\n[0] \"h\"[1]\n", `x.net:2: port 0 out of range 1..8 for "sw1"`},
		{"one-sided", "Switch 8 \"sw1\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n", `x.net:2: remote port 1 in node "h" is not connected to node "sw1" port 1 (it names nothing)`},
		{"disagree", "Switch 8 \"sw1\"\n[1] \"h\"[1]\n\nHca 2 \"h\"\n[1] \"sw1\"[2]\n", `x.net:2: remote port 1 in node "h" is not connected`},
		{"unknown remote", "Switch 8 \"sw1\"\n[1] \"nope\"[1]\n", `x.net:2: can't find remote node "nope"`},
		{"remote port", "Switch 8 \"sw1\"\n[1] \"h\"[3]\n\nHca 2 \"h\"\n", `x.net:2: bad remote port 3`},
		{"dup id", "Switch 8 \"a\"\n\nSwitch 8 \"a\"\n", `x.net:3: node id a already exists`},
		{"dup guid", "Switch 8 \"a\"\n\nswitchguid=0x200000\nSwitch 8 \"b\"\n", `x.net:4: node Switch guid 200000 already exists`},
		{"no ports", "Switch \"a\"\n", `x.net:1: bad Switch header: missing port count`},
		{"256 ports", "Switch 256 \"a\"\n", `x.net:1: bad Switch header: 256 ports (max 255)`},
		{"no id", "Hca 2 a\n", `x.net:1: can't find valid id`},
		{"mismatch width", "Switch 8 \"sw1\"\n[1] \"h\"[1] w=1\n\nHca 1 \"h\"\n[1] \"sw1\"[1] w=2\n", `x.net:2: mismatched enabled width`},
		{"bad w", "Switch 8 \"sw1\"\n[1] \"h\"[1] w=32\n", `x.net:2: bad enabled width 32`},
		{"bad width default", "width=0\n", `x.net:1: invalid enabled link width 0`},
		{"bad assignment", "vendid 5\n", `x.net:1: bad assignment: missing '=' sign`},
		{"include", "include \"other.net\"\n", `x.net:1: can't open net configuration file "other.net"`},
		{"do unknown node", "do Error \"h\" 50\n", `x.net:1: do Error: nodeid "h" not found`},
		{"do rate", "Hca 1 \"h\"\n\ndo Error \"h\"[1] 101\n", `x.net:3: do Error: error rate must be in [0..100] range (101)`},
		{"do port", "Hca 1 \"h\"\n\ndo Unlink \"h\"[2]\n", `x.net:3: do Unlink: port 2 out of range 1..1 for "h"`},
		{"self link", "Switch 8 \"s\"\n[1] \"s\"[1]\n", `x.net:2: port 1 of "s" is linked to itself`},
		{"mtu ext", "Switch 8 \"s\"\n[1] \"h\"[1] mtu=6\n", `x.net:2: bad mtu code 6`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.net", []byte(tt.src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestQuirks(t *testing.T) {
	// A record ends at the first non-port line, which ibsim drops: the
	// second header right after a record is lost.
	f, err := Parse("q.net", []byte("Hca 1 \"a\"\n# comment inside a record\nHca 1 \"b\"\nHca 1 \"c\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 2 || f.Nodes[1].ID != "c" {
		t.Errorf("nodes = %v", ids(f))
	}
	// Lines longer than 255 bytes are split: the tail is a line of its own.
	long := "Hca 1 \"a\"\t# \"" + strings.Repeat("d", 300) + "\"\n\nHca 1 \"b\"\n"
	f, err = Parse("q.net", []byte(long))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes[0].Desc) != 63 || f.Nodes[0].Desc != strings.Repeat("d", 63) {
		t.Errorf("desc %q", f.Nodes[0].Desc)
	}
	// Relative and absolute GUID bases, sticky devid, one-shot vendid/sysimgguid.
	f, err = Parse("q.net", []byte("caguid=0x500\nvendid=0x2c9\ndevid=7\nsysimgguid=0x99\nHca 2 \"a\"\n\nHca 1 \"b\"\n\ncaguid+0x10\nHca 1 \"c\"\n\nrtguid=0x40\nRt 1 \"r\"\n\nSwitch 4 \"s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		guid, sys uint64
		vend      uint32
		dev       uint16
	}{{0x500, 0x99, 0x2c9, 7}, {0x503, 0x503, 0, 7}, {0x510, 0x510, 0, 7}, {0x40, 0x40, 0, 7}, {0x200000, 0x200000, 0, 7}}
	for i, w := range want {
		n := &f.Nodes[i]
		if n.GUID != w.guid || n.SysImageGUID != w.sys || n.VendorID != w.vend || n.DeviceID != w.dev {
			t.Errorf("%s: guid %#x sys %#x vend %#x dev %#x, want %+v", n.ID, n.GUID, n.SysImageGUID, n.VendorID, n.DeviceID, w)
		}
	}
	// NDR is rejected by ibsim 0.10: the port keeps the defaults.
	f, err = Parse("q.net", []byte("Switch 8 \"s\"\n[1] \"h\"[1]\t# \"h\" lid 3 4xNDR\n\nHca 1 \"h\"\n[1] \"s\"[1]\t# lid 3 lmc 0 \"s\" lid 1 4xNDR\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Nodes[0].Ports[1]; p.WidthEnabled != 3 || p.SpeedEnabled != 1 || p.ExtSpeedEnabled != 0 {
		t.Errorf("NDR port = %+v", p)
	}
	if p := f.Nodes[1].Ports[1]; p.LID != 3 {
		t.Errorf("CA LID = %d", p.LID)
	}
	// Defaults for later nodes, w/s/e masks, mtu/vl extension, remote port 1 by default.
	f, err = Parse("q.net", []byte("width=3\nspeed=7\nextspeed=2\nSwitch 8 \"s\"\n[1] \"h\" w=1 s=3 e=0 mtu=5 vl=3\n[2] \"h\"[2]\n\nHca 2 \"h\"\n[1] \"s\"[1] w=1 s=3\n[2] \"s\"[2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Nodes[0].Ports[1]; p.WidthEnabled != 1 || p.SpeedEnabled != 3 || p.ExtSpeedEnabled != 0 || p.MTUCap != 5 || p.VLCap != 3 || p.RemotePort != 1 {
		t.Errorf("s[1] = %+v", p)
	}
	if p := f.Nodes[0].Ports[2]; p.WidthEnabled != 3 || p.SpeedEnabled != 7 || p.ExtSpeedEnabled != 2 {
		t.Errorf("s[2] = %+v", p)
	}
	// module= prefixes and @ aliases.
	f, err = Parse("q.net", []byte("module=\"m\"\nSwitch 4 \"s\"\n@[2] \"up\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n[1] \"s\"[1]\n\nmodule=\"\"\nHca 1 \"x\"\n[1] \"m@up\"\n\ndo Error \"m#h\"[1] 50 17\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(f); strings.Join(got, ",") != "m#s,m#h,x" {
		t.Errorf("ids %v", got)
	}
	if p := f.Nodes[2].Ports[1]; p.Remote != 0 || p.RemotePort != 2 || f.Nodes[0].Ports[2].Remote != 2 {
		t.Errorf("alias link: %+v / %+v", p, f.Nodes[0].Ports[2])
	}
	if c := f.Commands[0]; c.Verb != "Error" || c.Node != "m#h" || c.Port != 1 || strings.Join(c.Args, " ") != "50 17" {
		t.Errorf("command %+v", c)
	}
}

func ids(f *Fabric) []string {
	var s []string
	for i := range f.Nodes {
		s = append(s, f.Nodes[i].ID)
	}
	return s
}

func TestIncludes(t *testing.T) {
	fsys := fstest.MapFS{
		"top.net":        {Data: []byte("include \"sub/a.net\"\nHca 1 \"h\"\n[1] \"s\"[1]\n")},
		"sub/a.net":      {Data: []byte("Switch 4 \"s\"\n[1] \"h\"[1]\n\ninclude \"b.net\"\n")},
		"sub/b.net":      {Data: []byte("devid=9\n")},
		"loop.net":       {Data: []byte("include \"loop.net\"\n")},
		"sub/broken.net": {Data: []byte("Switch 4 \"s\"\n[7] \"h\"[1]\n")},
		"bad.net":        {Data: []byte("\n\ninclude \"sub/broken.net\"\n")},
	}
	f, err := ParseFS(fsys, "top.net")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 2 || f.Nodes[1].DeviceID != 9 || f.Nodes[0].Pos.File != "sub/a.net" {
		t.Errorf("nodes %+v", f.Nodes)
	}
	if _, err := ParseFS(fsys, "loop.net"); err == nil || !strings.Contains(err.Error(), "nested deeper than 9") {
		t.Errorf("loop: %v", err)
	}
	if _, err := ParseFS(fsys, "bad.net"); err == nil || !strings.HasPrefix(err.Error(), "sub/broken.net:2: port 7 out of range") {
		t.Errorf("bad: %v", err)
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in   string
		want Command
	}{
		{`Error "sw1"[3] 50 21`, Command{Verb: "Error", Node: "sw1", Port: 3, Port2: -1, Args: []string{"50", "21"}}},
		{` unlink "h"`, Command{Verb: "Unlink", Node: "h", Port: -1, Port2: -1}},
		{`Link "a"[1] "b"[2]`, Command{Verb: "Link", Node: "a", Port: 1, Node2: "b", Port2: 2}},
		{`Baselid "s"[0] 0x10 2`, Command{Verb: "Baselid", Node: "s", Port: 0, Port2: -1, Args: []string{"0x10", "2"}}},
		{`Dump`, Command{Verb: "Dump", Port: -1, Port2: -1}},
	}
	for _, tt := range tests {
		c, err := ParseCommand(tt.in)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		c.Text = ""
		if c.Verb != tt.want.Verb || c.Node != tt.want.Node || c.Port != tt.want.Port || c.Node2 != tt.want.Node2 ||
			c.Port2 != tt.want.Port2 || strings.Join(c.Args, " ") != strings.Join(tt.want.Args, " ") {
			t.Errorf("%q = %+v, want %+v", tt.in, c, tt.want)
		}
	}
	if _, err := ParseCommand(`Error 50`); !errors.Is(err, ErrCommand) {
		t.Errorf("err %v", err)
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		spec                 string
		nodes, switches, cas int
		firstSpine, lastLeaf string
	}{
		{"fattree:levels=2,radix=36,hosts=18", 36*18 + 36 + 18, 54, 648, "S0", "L35"},
		{"fattree:levels=2,radix=8,hosts=4,links=2", 16 + 4 + 2, 6, 16, "S0", "L3"},
		{"fattree:levels=3,radix=8", 128 + 32 + 32 + 16, 80, 128, "", "L31"},
	}
	for _, tt := range tests {
		f, err := Generate(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.spec, err)
		}
		_, sw, _ := f.Counts()
		cas := 0
		for i := range f.Nodes {
			if f.Nodes[i].Type == CA {
				cas++
			}
		}
		if len(f.Nodes) != tt.nodes || sw != tt.switches || cas != tt.cas {
			t.Errorf("%s: %d nodes %d switches %d CAs", tt.spec, len(f.Nodes), sw, cas)
		}
		if _, ok := f.Lookup(tt.lastLeaf); !ok {
			t.Errorf("%s: no %s", tt.spec, tt.lastLeaf)
		}
		// Every link is symmetric and every switch port is used.
		for i := range f.Nodes {
			n := &f.Nodes[i]
			for p := 1; p <= n.NumPorts; p++ {
				pp := n.Ports[p]
				if !pp.Linked() {
					if n.Type == Switch {
						t.Errorf("%s: %s[%d] unused", tt.spec, n.ID, p)
					}
					continue
				}
				back := f.Nodes[pp.Remote].Ports[pp.RemotePort]
				if int(back.Remote) != i || int(back.RemotePort) != p {
					t.Errorf("%s: %s[%d] asymmetric", tt.spec, n.ID, p)
				}
			}
		}
		// Written and re-parsed, GUIDs match ibsim's default allocation.
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		g, err := Parse(tt.spec, buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		assertSame(t, tt.spec, f, g)
	}
	for _, bad := range []string{"mesh:x=1", "fattree:radix=1", "fattree:levels=4,radix=8", "fattree:radix=8,hosts=8", "fattree:radix=8,foo=1", "fattree:radix=8,leaves=9"} {
		if _, err := Generate(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: err %v", bad, err)
		}
	}
}

func TestStrtoul(t *testing.T) {
	tests := []struct {
		in string
		v  uint64
		n  int
	}{
		{"0x1f", 31, 4}, {"017", 15, 3}, {" 42abc", 42, 3}, {"0", 0, 1}, {"0x", 0, 1}, {"-1", ^uint64(0), 2},
		{"99999999999999999999999", ^uint64(0), 23}, {"x", 0, 0},
	}
	for _, tt := range tests {
		if v, n := strtoul(tt.in); v != tt.v || n != tt.n {
			t.Errorf("strtoul(%q) = %d,%d want %d,%d", tt.in, v, n, tt.v, tt.n)
		}
	}
}
