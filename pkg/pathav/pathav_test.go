package pathav_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ibsimCA is the PortInfo ibsim 0.10 gives a linked CA port (ref 2.3),
// 4x SDR, MTUCap 2048, VL0-7.
func ibsimCA() smp.PortInfo {
	return smp.PortInfo{
		CapabilityMask: 0x0050c048, LinkWidthEnabled: smp.Width4x, LinkWidthSupported: 31,
		LinkWidthActive: smp.Width4x, LinkSpeedSupported: 7, LinkSpeedEnabled: 1, LinkSpeedActive: smp.SpeedSDR,
		NeighborMTU: smp.MTU2048, MTUCap: smp.MTU2048, VLCap: 4, OperationalVLs: 4,
		PortState: smp.PortStateActive, PortPhysicalState: smp.PhysLinkUp,
	}
}

// caPair links two CA ports with the given PortInfos.
func caPair(a, b smp.PortInfo) (*model.PhysPort, *model.PhysPort) {
	x := &model.Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 1, NodeGUID: 0x10}}
	y := &model.Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 1, NodeGUID: 0x20}}
	x.Desc.SetString("x")
	y.Desc.SetString("y")
	p, q := x.EnsurePort(1, 0x11), y.EnsurePort(1, 0x21)
	p.Info, p.HasInfo = a, true
	q.Info, q.HasInfo = b, true
	p.Link(q)
	return p, q
}

func TestCheckLink(t *testing.T) {
	type edit func(a, b *smp.PortInfo)
	both := func(f func(p *smp.PortInfo)) edit { return func(a, b *smp.PortInfo) { f(a); f(b) } }
	tests := []struct {
		name  string
		edit  edit
		maxVL uint8
		want  string // problem kinds
		msgs  []string
	}{
		{"clean", nil, 0, "[]", nil},
		{"NeighborMTU above link MTU", func(a, b *smp.PortInfo) { a.MTUCap, a.NeighborMTU, b.NeighborMTU = 5, 5, 5 }, 0,
			"[mtu-cap neighbor-mtu neighbor-mtu]", []string{
				"MTU mismatch between ports: MTUCap 4096 on x[1], 2048 on y[1]; link MTU 2048",
				"x[1] runs NeighborMTU 4096, link MTU is 2048"}},
		{"NeighborMTU below both caps", func(a, b *smp.PortInfo) { a.NeighborMTU = 1 }, 0,
			"[neighbor-mtu]", []string{"x[1] runs NeighborMTU 256, link MTU is 2048"}},
		{"caps differ, already applied", func(a, b *smp.PortInfo) { a.MTUCap = 5 }, 0, "[mtu-cap]", nil},
		{"VLCap differs", func(a, b *smp.PortInfo) { b.VLCap, b.OperationalVLs = 3, 3 }, 0, "[vl-cap op-vls]",
			[]string{"x[1] runs OperationalVLs VL0-7, OpenSM would set VL0-3"}},
		{"max op VLs caps", nil, 2, "[op-vls op-vls]", []string{"y[1] runs OperationalVLs VL0-7, OpenSM would set VL0-1"}},
		{"op VLs 0 on both: forced to VL0", both(func(p *smp.PortInfo) { p.VLCap, p.OperationalVLs = 0, 1 }), 0, "[]", nil},
		{"1x with 4x enabled both ends: degraded",
			both(func(p *smp.PortInfo) { p.LinkWidthEnabled, p.LinkWidthActive = smp.Width1x|smp.Width4x, smp.Width1x }), 0,
			"[width]", []string{"link runs 1x, both ends are enabled for 4x (degraded link)"}},
		{"1x enabled only, 4x supported",
			both(func(p *smp.PortInfo) {
				p.LinkWidthEnabled, p.LinkWidthSupported, p.LinkWidthActive = smp.Width1x, smp.Width1x|smp.Width4x, smp.Width1x
			}), 0, "[width]", []string{"1x link: both ends support 4x"}},
		{"1x only supported: fine",
			both(func(p *smp.PortInfo) {
				p.LinkWidthEnabled, p.LinkWidthSupported, p.LinkWidthActive = smp.Width1x, smp.Width1x, smp.Width1x
			}), 0, "[]", nil},
		{"4x, 12x supported not enabled: fine", nil, 0, "[]", nil},
		{"enabled 255 means supported: 4x of 12x degraded",
			both(func(p *smp.PortInfo) { p.LinkWidthEnabled = 255 }), 0, "[width]",
			[]string{"link runs 4x, both ends are enabled for 12x (degraded link)"}},
		{"ends disagree on width", func(a, b *smp.PortInfo) { b.LinkWidthActive = smp.Width12x }, 0, "[width]", nil},
		{"SDR with QDR enabled: degraded", both(func(p *smp.PortInfo) { p.LinkSpeedEnabled = 7 }), 0, "[speed]",
			[]string{"link runs SDR, both ends are enabled for QDR (degraded link)"}},
		{"QDR with EDR enabled: degraded",
			both(func(p *smp.PortInfo) {
				p.LinkSpeedEnabled, p.LinkSpeedActive, p.LinkSpeedExtSupported, p.LinkSpeedExtEnabled = 7, smp.SpeedQDR, 3, 3
			}), 0, "[speed]", []string{"link runs QDR, both ends are enabled for EDR (degraded link)"}},
		{"EDR active: fine",
			both(func(p *smp.PortInfo) {
				p.LinkSpeedEnabled, p.LinkSpeedActive, p.LinkSpeedExtSupported, p.LinkSpeedExtEnabled, p.LinkSpeedExtActive = 7, smp.SpeedQDR, 3, 3, smp.ExtSpeedEDR
			}), 0, "[]", nil},
		{"ext speeds disabled (30): QDR fine",
			both(func(p *smp.PortInfo) {
				p.LinkSpeedEnabled, p.LinkSpeedActive, p.LinkSpeedExtSupported, p.LinkSpeedExtEnabled = 7, smp.SpeedQDR, 3, 30
			}), 0, "[]", nil},
		{"no ext-speed capability: ext masks ignored",
			both(func(p *smp.PortInfo) {
				p.CapabilityMask = 0
				p.LinkSpeedEnabled, p.LinkSpeedActive, p.LinkSpeedExtSupported, p.LinkSpeedExtEnabled = 7, smp.SpeedQDR, 3, 3
			}), 0, "[]", nil},
	}
	for _, tt := range tests {
		a, b := ibsimCA(), ibsimCA()
		if tt.edit != nil {
			tt.edit(&a, &b)
		}
		pa, pb := caPair(a, b)
		l := pathav.CheckLink(pa, pb, tt.maxVL)
		var kinds []string
		for _, p := range l.Problems {
			kinds = append(kinds, string(p.Kind))
		}
		if got := fmt.Sprint(kinds); got != tt.want && !(got == "[]" && tt.want == "[]") {
			t.Errorf("%s: kinds %s, want %s (%v)", tt.name, got, tt.want, l.Problems)
		}
		for _, m := range tt.msgs {
			found := false
			for _, p := range l.Problems {
				found = found || p.Msg == m
			}
			if !found {
				t.Errorf("%s: no problem %q in %v", tt.name, m, l.Problems)
			}
		}
		if l.Mismatch() != (tt.want != "[]") {
			t.Errorf("%s: Mismatch %v", tt.name, l.Mismatch())
		}
	}

	// An end without PortInfo is reported, nothing else is checked.
	pa, pb := caPair(ibsimCA(), ibsimCA())
	pb.HasInfo = false
	if l := pathav.CheckLink(pa, pb, 0); len(l.Problems) != 1 || l.Problems[0].Kind != pathav.NoPortInfo {
		t.Errorf("no PortInfo: %v", l.Problems)
	}
}

// sweep runs the embedded simulator's SM and discovers and reads the LFTs
// of a net file or generator spec.
func sweep(t testing.TB, spec string) (*model.Fabric, *routing.Tables) {
	t.Helper()
	var f *sim.Fabric
	var err error
	if spec[0] == 'f' {
		f, err = sim.Generate(spec, nil)
	} else {
		f, err = sim.Load(spec, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v %v", err, res.Errors)
	}
	tabs, err := routing.Read(ctx, &discover.Querier{Transport: tr}, res.Fabric, 4)
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, tabs
}

func TestResolve(t *testing.T) {
	f, tabs := sweep(t, "../../cmd/ibavtrack/testdata/pathmix.net")
	port := func(spec string) *model.Port {
		p, err := f.ResolvePort(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		src, dst        string
		mtu, rate, hops uint8
		mtuBy, rateBy   string
		roles           string
	}{
		{"hA", "hB", smp.MTU2048, smp.Rate25, 3, "hA[1]", "swB[3]",
			"[hA[1] source swA[1] ingress swA[2] egress swB[1] ingress swB[3] egress hB[1] destination]"},
		{"hD", "hC", smp.MTU2048, smp.Rate2_5, 2, "hD[1]", "hD[1]",
			"[hD[1] source swC[4] ingress swC[3] egress hC[1] destination]"},
		// 12x SDR (30 Gb/s) ranks below 2x HDR (100) and 4x QDR (40).
		{"swA", "swC", smp.MTU1024, smp.Rate10, 1, "swA[0]", "swA[0]",
			"[swA[0] source swC[1] ingress swC[0] destination]"},
		{"hA", "swB", smp.MTU1024, smp.Rate10, 2, "swB[0]", "swB[0]",
			"[hA[1] source swA[1] ingress swA[2] egress swB[1] ingress swB[0] destination]"},
		{"hA", "hA", smp.MTU2048, smp.Rate100, 0, "hA[1]", "hA[1]", "[hA[1] source]"},
	}
	for _, tt := range tests {
		p, err := pathav.Resolve(f, tabs, port(tt.src), port(tt.dst))
		if err != nil {
			t.Fatalf("%s→%s: %v", tt.src, tt.dst, err)
		}
		var roles []string
		for _, pp := range p.Ports {
			roles = append(roles, pathav.PortName(pp.Port), pp.Role.String())
		}
		av := p.AV
		if av.MTU != tt.mtu || av.Rate != tt.rate || av.HopCount != tt.hops || av.MTULimit != tt.mtuBy ||
			av.RateLimit != tt.rateBy || fmt.Sprint(roles) != tt.roles || av.SL != 0 ||
			av.SLID != port(tt.src).BaseLID() || av.DLID != port(tt.dst).BaseLID() {
			t.Errorf("%s→%s: %+v %v", tt.src, tt.dst, av, roles)
		}
	}

	// A black hole: clear swA's entry for hB's LID.
	hB := port("hB")
	swA := port("swA").Node
	lft := append([]byte(nil), tabs.Table(swA)...)
	lft[hB.BaseLID()] = routing.NoRoute
	tabs.Set(swA, lft)
	_, err := pathav.Resolve(f, tabs, port("hA"), hB)
	if !errors.Is(err, routing.ErrBlackHole) {
		t.Errorf("black hole: %v", err)
	}
	if _, err := pathav.Resolve(f, tabs, nil, hB); !errors.Is(err, pathav.ErrNilPort) {
		t.Errorf("nil source: %v", err)
	}
}

func TestCheckLinksFabric(t *testing.T) {
	f, _ := sweep(t, "../../cmd/ibavtrack/testdata/mismatch.net")
	links := pathav.CheckLinks(f, 0)
	got := map[string]string{}
	for _, l := range links {
		var kinds []string
		for _, p := range l.Problems {
			kinds = append(kinds, string(p.Kind))
		}
		got[pathav.PortName(l.A)+"-"+pathav.PortName(l.B)] = fmt.Sprint(kinds)
	}
	want := map[string]string{
		"sw1[1]-h1[1]":  "[]",
		"sw1[2]-h2[1]":  "[width]",
		"sw1[3]-h3[1]":  "[mtu-cap]",
		"sw1[4]-sw2[1]": "[]",
		"sw2[2]-h4[1]":  "[vl-cap op-vls]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// FuzzCheckLink feeds arbitrary PortInfo pairs to the link checks: they
// must not panic, the computed values must be valid codes, and a link is
// marked exactly when it has problems.
func FuzzCheckLink(f *testing.F) {
	ca, _ := (&smp.PortInfo{}).MarshalBinary()
	good := ibsimCA()
	g, _ := good.MarshalBinary()
	f.Add(g, g, uint8(5))
	f.Add(ca, g, uint8(0))
	f.Add(make([]byte, 64), make([]byte, 64), uint8(1))
	f.Fuzz(func(t *testing.T, a, b []byte, maxVL uint8) {
		var pa, pb smp.PortInfo
		if pa.UnmarshalBinary(a) != nil || pb.UnmarshalBinary(b) != nil {
			return
		}
		x, y := caPair(pa, pb)
		l := pathav.CheckLink(x, y, maxVL%6)
		if l.MTUA.Value == 0 || l.VLsA.Value == 0 || l.MTUA.Value != l.MTUB.Value {
			t.Fatalf("values %+v %+v", l.MTUA, l.VLsA)
		}
		if l.Mismatch() != (len(l.Problems) > 0) {
			t.Fatal("Mismatch disagrees with Problems")
		}
		for _, p := range l.Problems {
			if p.Kind == "" || p.Msg == "" {
				t.Fatalf("empty problem %+v", p)
			}
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	f, tabs := sweep(b, "fattree:levels=2,radix=8,hosts=4")
	cas := f.CAs()
	var ports []*model.Port
	for _, n := range cas {
		for _, pp := range n.Ports {
			if pp != nil {
				if p := f.PortByGUID(pp.GUID); p != nil && p.BaseLID() != 0 {
					ports = append(ports, p)
				}
			}
		}
	}
	if len(ports) < 2 {
		b.Fatalf("%d ports", len(ports))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src, dst := ports[i%len(ports)], ports[(i*7+1)%len(ports)]
		if _, err := pathav.Resolve(f, tabs, src, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckLinks(b *testing.B) {
	f, _ := sweep(b, "fattree:levels=2,radix=8,hosts=4")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pathav.CheckLinks(f, 0)
	}
}

// TestResolveLIDs: under an LMC each LID of a port is followed along its
// own route; SLID and DLID are the LIDs given, and a LID outside a port's
// range is refused.
func TestResolveLIDs(t *testing.T) {
	f, tabs := sweep(t, "../../testdata/fabrics/parallel.net")
	port := func(spec string) *model.Port {
		p, err := f.ResolvePort(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	h1, h2 := port("h1"), port("h2")
	// Give h2 LMC 1 (its LID is the highest, so the next one is free)
	// and route the second LID over another parallel link.
	base := h2.BaseLID()
	h2.Phys.Info.LMC = 1
	if err := f.RegisterPort(h2.Phys); err != nil {
		t.Fatal(err)
	}
	if p := f.PortByLID(base + 1); p != h2 {
		t.Fatalf("LID %d: %v", base+1, p)
	}
	swA, swB := port("switch A").Node, port("switch B").Node
	first := tabs.Port(swA, base)
	other := uint8(3)
	if first == 3 {
		other = 4
	}
	setEntry := func(sw *model.Node, lid uint16, p uint8) {
		lft := append([]byte(nil), tabs.Table(sw)...)
		lft[lid] = p
		tabs.Set(sw, lft)
	}
	setEntry(swA, base+1, other)
	setEntry(swB, base+1, tabs.Port(swB, base))

	for _, dlid := range []uint16{base, base + 1} {
		p, err := pathav.ResolveLIDs(f, tabs, h1, h1.BaseLID(), h2, dlid)
		if err != nil {
			t.Fatalf("DLID %d: %v", dlid, err)
		}
		want := first
		if dlid != base {
			want = other
		}
		if p.AV.DLID != dlid || p.AV.SLID != h1.BaseLID() || len(p.Hops) != 3 || p.Hops[1].Out.Num != want {
			t.Errorf("DLID %d: %+v, leaves switch A by port %d, want %d", dlid, p.AV, p.Hops[1].Out.Num, want)
		}
	}
	// Resolve is ResolveLIDs with the base LIDs.
	if p, err := pathav.Resolve(f, tabs, h1, h2); err != nil || p.AV.DLID != base || p.Hops[1].Out.Num != first {
		t.Errorf("Resolve: %v %v", p, err)
	}
	// LIDs outside the ports' ranges.
	if _, err := pathav.ResolveLIDs(f, tabs, h1, h1.BaseLID()+1, h2, base); !errors.Is(err, pathav.ErrLIDRange) {
		t.Errorf("SLID outside h1's range: %v", err)
	}
	if _, err := pathav.ResolveLIDs(f, tabs, h1, h1.BaseLID(), h2, base+2); !errors.Is(err, pathav.ErrLIDRange) {
		t.Errorf("DLID outside h2's range: %v", err)
	}
}
