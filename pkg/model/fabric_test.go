package model

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// symmetric fails the test unless every port's peer points back at it.
func symmetric(t *testing.T, ports ...*PhysPort) {
	t.Helper()
	for _, p := range ports {
		if p.Remote != nil && p.Remote.Remote != p {
			t.Errorf("%v -> %v but %v -> %v", p, p.Remote, p.Remote, p.Remote.Remote)
		}
	}
}

func TestLinkUnlink(t *testing.T) {
	b := newBuilder(t)
	s := b.sw(0x10, 4, 1)
	x := b.ca(0x100, 2, 0)
	y := b.ca(0x200, 1, 0)
	sp := func(i int) *PhysPort { return s.Port(i) }
	all := []*PhysPort{sp(1), sp(2), sp(3), sp(4), x.Port(1), x.Port(2), y.Port(1)}
	type step struct {
		do   func()
		want map[*PhysPort]*PhysPort // expected peers; the rest must be nil
	}
	steps := []step{
		{func() { sp(1).Link(x.Port(1)) }, map[*PhysPort]*PhysPort{sp(1): x.Port(1), x.Port(1): sp(1)}},
		// linking again is a no-op
		{func() { x.Port(1).Link(sp(1)) }, map[*PhysPort]*PhysPort{sp(1): x.Port(1), x.Port(1): sp(1)}},
		// relinking x[1] elsewhere breaks s[1] - x[1] on both sides
		{func() { x.Port(1).Link(sp(2)) }, map[*PhysPort]*PhysPort{sp(2): x.Port(1), x.Port(1): sp(2)}},
		// linking two ports that both have peers breaks both old links
		{func() { y.Port(1).Link(sp(3)) }, map[*PhysPort]*PhysPort{sp(2): x.Port(1), x.Port(1): sp(2), sp(3): y.Port(1), y.Port(1): sp(3)}},
		{func() { sp(2).Link(sp(3)) }, map[*PhysPort]*PhysPort{sp(2): sp(3), sp(3): sp(2)}},
		// loopback cable on the same node
		{func() { sp(4).Link(sp(4)) }, map[*PhysPort]*PhysPort{sp(2): sp(3), sp(3): sp(2), sp(4): sp(4)}},
		{func() { sp(4).Unlink() }, map[*PhysPort]*PhysPort{sp(2): sp(3), sp(3): sp(2)}},
		{func() { sp(3).Unlink() }, map[*PhysPort]*PhysPort{}},
		// nil and unlinked ports are harmless
		{func() { sp(1).Unlink(); sp(1).Link(nil); (*PhysPort)(nil).Link(sp(1)); (*PhysPort)(nil).Unlink() }, map[*PhysPort]*PhysPort{}},
	}
	for i, st := range steps {
		st.do()
		for _, p := range all {
			if got := p.Remote; got != st.want[p] {
				t.Errorf("step %d: %v.Remote = %v, want %v", i, p, got, st.want[p])
			}
		}
		symmetric(t, all...)
	}
}

// A one-sided pointer (as a loader may leave) is not followed back.
func TestUnlinkOneSided(t *testing.T) {
	b := newBuilder(t)
	s := b.sw(0x10, 2, 1)
	x := b.ca(0x100, 1, 0)
	s.Port(1).Link(x.Port(1))
	s.Port(2).Remote = x.Port(1) // stale, one way
	s.Port(2).Unlink()
	if s.Port(2).Remote != nil || x.Port(1).Remote != s.Port(1) || s.Port(1).Remote != x.Port(1) {
		t.Error("one-sided Unlink broke the real link")
	}
}

func TestEnsurePort(t *testing.T) {
	n := &Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 2, NodeGUID: 0x50}}
	tests := []struct {
		num  int
		nil_ bool
	}{{-1, true}, {0, false}, {1, false}, {2, false}, {3, true}, {255, true}}
	for _, tt := range tests {
		p := n.EnsurePort(tt.num, 0x51)
		if (p == nil) != tt.nil_ {
			t.Errorf("EnsurePort(%d) = %v", tt.num, p)
			continue
		}
		if p != nil && (p.Node != n || int(p.Num) != tt.num || p.GUID != 0x51 || !p.Healthy) {
			t.Errorf("EnsurePort(%d) = %+v", tt.num, p)
		}
	}
	p1 := n.Port(1)
	if again := n.EnsurePort(1, 0x99); again != p1 || again.GUID != 0x51 {
		t.Error("EnsurePort replaced an existing port")
	}
	if n.Port(-1) != nil || n.Port(3) != nil {
		t.Error("Port out of range is not nil")
	}
}

func TestRegisterPort(t *testing.T) {
	b := newBuilder(t)
	f := b.f
	s := b.sw(0x10, 4, 1) // port 0 LID 1
	x := b.ca(0x100, 2, 0)
	xp1, xp2 := x.Port(1), x.Port(2)
	if xp1.Info.LID != 2 || xp2.Info.LID != 3 {
		t.Fatalf("fixture LIDs %d %d", xp1.Info.LID, xp2.Info.LID)
	}

	// Switch external ports share port 0's logical port: registering one
	// is a no-op.
	if err := f.RegisterPort(s.Port(3)); err != nil {
		t.Fatal(err)
	}
	sl := f.PortByGUID(0x10)
	if sl == nil || sl.Phys != s.Port(0) || sl.Node != s {
		t.Fatalf("switch logical port %+v", sl)
	}
	if f.NumLogicalPorts() != 3 {
		t.Errorf("NumLogicalPorts = %d, want 3", f.NumLogicalPorts())
	}
	if s.Port(3).BaseLID() != 1 {
		t.Errorf("switch port 3 BaseLID = %d, want port 0's 1", s.Port(3).BaseLID())
	}

	// LMC 2 on a new CA: 4 LIDs.
	y := b.node(smp.NodeCA, 0x200, 1, "y")
	yp := y.EnsurePort(1, 0x201)
	yp.Info.LID, yp.Info.LMC, yp.HasInfo = 8, 2, true
	if err := f.RegisterPort(yp); err != nil {
		t.Fatal(err)
	}
	lp := f.PortByGUID(0x201)
	if lo, hi := lp.LIDRange(); lo != 8 || hi != 11 {
		t.Errorf("LIDRange = %d..%d, want 8..11", lo, hi)
	}

	// Registering the same physical port again is fine.
	if err := f.RegisterPort(yp); err != nil {
		t.Errorf("re-register: %v", err)
	}

	// Another physical port with a known GUID is refused.
	z := b.node(smp.NodeCA, 0x300, 1, "z")
	zp := z.EnsurePort(1, 0x201)
	zp.Info.LID, zp.HasInfo = 20, true
	if err := f.RegisterPort(zp); !errors.Is(err, ErrDuplicateGUID) {
		t.Errorf("duplicate port GUID: %v, want ErrDuplicateGUID", err)
	}
	if f.PortByLID(20) != nil {
		t.Error("refused port got its LID")
	}

	// Overlapping LID range: first claimant keeps LIDs 10, 11; the new
	// port gets 12, 13 and an error naming LID 10.
	w := b.node(smp.NodeCA, 0x400, 1, "w")
	wp := w.EnsurePort(1, 0x401)
	wp.Info.LID, wp.Info.LMC, wp.HasInfo = 10, 2, true
	err := f.RegisterPort(wp)
	if err == nil || !strings.Contains(err.Error(), "LID 10 ") {
		t.Errorf("overlap: %v", err)
	}

	// A port without LID is registered by GUID only.
	v := b.node(smp.NodeCA, 0x500, 1, "v")
	vp := v.EnsurePort(1, 0x501)
	if err := f.RegisterPort(vp); err != nil {
		t.Fatal(err)
	}
	if f.PortByGUID(0x501) == nil || f.PortByLID(0) != nil {
		t.Error("LID-less port: wrong registration")
	}

	lids := []struct {
		lid  uint16
		guid uint64 // 0: nobody
	}{
		{0, 0}, {1, 0x10}, {2, 0x101}, {3, 0x102}, {4, 0}, {7, 0},
		{8, 0x201}, {9, 0x201}, {10, 0x201}, {11, 0x201},
		{12, 0x401}, {13, 0x401}, {14, 0}, {20, 0}, {0xFFFF, 0},
	}
	for _, tt := range lids {
		p := f.PortByLID(tt.lid)
		switch {
		case tt.guid == 0 && p != nil:
			t.Errorf("PortByLID(%d) = %#x, want none", tt.lid, p.GUID)
		case tt.guid != 0 && (p == nil || p.GUID != tt.guid):
			t.Errorf("PortByLID(%d) = %v, want %#x", tt.lid, p, tt.guid)
		}
	}
	if f.MaxLID() != 13 {
		t.Errorf("MaxLID = %d, want 13", f.MaxLID())
	}
}

func TestRegisterPortLIDRangeTop(t *testing.T) {
	// A range running past the unicast space stops at 0xBFFF.
	b := newBuilder(t)
	x := b.node(smp.NodeCA, 0x100, 1, "x")
	p := x.EnsurePort(1, 0x101)
	p.Info.LID, p.Info.LMC, p.HasInfo = 0xBFFE, 2, true
	if err := b.f.RegisterPort(p); err != nil {
		t.Fatal(err)
	}
	if b.f.PortByLID(0xBFFF) == nil || b.f.PortByLID(0xC000) != nil {
		t.Error("LID range not clipped at 0xBFFF")
	}
}

func TestAddNodeDuplicate(t *testing.T) {
	f := NewFabric()
	ni := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeSwitch, NumPorts: 8, NodeGUID: 0x77, PortGUID: 0x77, LocalPortNum: 3}
	raw, err := ni.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, make([]byte, smp.DataSize-len(raw))...)
	n, err := f.AddNode(raw, smp.DRPath{})
	if err != nil || n.NumPorts() != 8 || len(n.Ports) != 9 || f.From != n || f.FromPort != 3 {
		t.Fatalf("AddNode: %v %+v", err, n)
	}
	again, err := f.AddNode(raw, smp.DRPath{})
	if !errors.Is(err, ErrDuplicateGUID) || again != n || len(f.Nodes) != 1 {
		t.Errorf("duplicate AddNode: %v, same node %v, %d nodes", err, again == n, len(f.Nodes))
	}
	if err := f.AppendNode(&Node{Info: ni}); !errors.Is(err, ErrDuplicateGUID) {
		t.Errorf("duplicate AppendNode: %v", err)
	}
	if _, err := f.AddNode(raw[:10], smp.DRPath{}); err == nil {
		t.Error("short NodeInfo accepted")
	}
}

func TestLinks(t *testing.T) {
	f, s1, s2, s3, a, bb, c := line(t)
	// a loopback cable on s3 and a CA back-to-back pair
	b := &builder{tb: t, f: f, nextLID: 100}
	s4 := b.sw(0x40, 4, 0)
	b.link(s4, 1, s4, 3)
	x := b.ca(0x500, 1, 0)
	y := b.ca(0x600, 1, 0)
	b.link(y, 1, x, 1)

	type pair struct{ a, b *PhysPort }
	var got []pair
	f.Links(func(p, q *PhysPort) { got = append(got, pair{p, q}) })
	want := []pair{
		{s1.Port(1), a.Port(1)},
		{s1.Port(2), s2.Port(1)},
		{s1.Port(3), c.Port(1)},
		{s2.Port(2), s3.Port(1)},
		{s2.Port(3), s3.Port(3)},
		{s3.Port(2), bb.Port(1)},
		{s4.Port(1), s4.Port(3)},
		{x.Port(1), y.Port(1)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d links, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("link %d = %v-%v, want %v-%v", i, got[i].a, got[i].b, want[i].a, want[i].b)
		}
	}
}

func TestNodeAccessors(t *testing.T) {
	b := newBuilder(t)
	s := b.sw(0x10, 2, 5)
	s.Port(0).Info.LMC = 1
	x := b.ca(0x100, 2, 0)
	x.Ports[1].HasInfo = false // first port with PortInfo is port 2
	r := b.node(smp.NodeRouter, 0x900, 1, "r")
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"switch SMALID", s.SMALID(), uint16(5)},
		{"switch SMALMC", s.SMALMC(), uint8(1)},
		{"switch port LMC", s.Port(2).LMC(), uint8(1)},
		{"CA SMALID", x.SMALID(), x.Port(2).Info.LID},
		{"router without info", r.SMALID(), uint16(0)},
		{"router LMC", r.SMALMC(), uint8(0)},
		{"IsSwitch", s.IsSwitch() && !x.IsSwitch(), true},
		{"Type", r.Type(), smp.NodeRouter},
		{"Description", s.Description(), "switch 0x10"},
		{"String", s.Port(2).String(), "0x0000000000000010[2]"},
		{"CapInfo switch", s.Port(2).CapInfo() == &s.Port(0).Info, true},
		{"CapInfo CA", x.Port(2).CapInfo() == &x.Port(2).Info, true},
		{"CapInfo no info", x.Port(1).CapInfo() == nil, true},
		{"Switches", len(b.f.Switches()), 1},
		{"CAs", len(b.f.CAs()), 1},
		{"Routers", len(b.f.Routers()), 1},
		{"NodeByGUID", b.f.NodeByGUID(0x900) == r, true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	s.Port(0).HasInfo = false
	if s.SMALID() != 0 || s.Port(1).CapInfo() != nil {
		t.Error("switch without port 0 info")
	}
}

func TestSetInfo(t *testing.T) {
	pi := smp.PortInfo{LID: 0x1234, LMC: 2, MTUCap: smp.MTU4096, PortState: smp.PortStateActive}
	raw, err := pi.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	p := &PhysPort{Node: &Node{}}
	if err := p.SetInfo(raw); err != nil {
		t.Fatal(err)
	}
	if !p.HasInfo || p.Info.LID != 0x1234 || p.Info.MTUCap != smp.MTU4096 || p.RawInfo()[16] != 0x12 {
		t.Errorf("SetInfo: %+v", p.Info)
	}
	q := &PhysPort{Node: &Node{}}
	if err := q.SetInfo(raw[:20]); err == nil || q.HasInfo {
		t.Error("short PortInfo accepted")
	}
}

// TestRawAsReceived checks that every attribute reads back as received:
// bytes the decoded fields cannot re-encode (reserved bits, bytes beyond
// NodeInfo's 40) are kept, the common case keeps nothing extra, and the
// entry-port setters change the decoded field and the bytes alike.
func TestRawAsReceived(t *testing.T) {
	ni := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeCA, NumPorts: 2, NodeGUID: 0x11, PortGUID: 0x12, LocalPortNum: 1, VendorID: 0x2c9}
	plain, _ := ni.MarshalBinary()
	odd := append([]byte(nil), plain...)
	odd[50] = 0xAB // beyond the attribute
	pi := smp.PortInfo{LID: 7, LocalPortNum: 1, PortState: smp.PortStateActive}
	pplain, _ := pi.MarshalBinary()
	podd := append([]byte(nil), pplain...)
	podd[34] |= 0x08 // a reserved bit between MKeyProtectBits and LMC
	si := smp.SwitchInfo{LinearFDBCap: 48 << 10, EnhancedPort0: true}
	splain, _ := si.MarshalBinary()
	sodd := append([]byte(nil), splain...)
	sodd[63] = 0x5A

	for _, tt := range []struct {
		name      string
		node, prt []byte
		sw        []byte
		kept      bool
	}{
		{"plain", plain, pplain, splain, false},
		{"reserved bits", odd, podd, sodd, true},
	} {
		f := NewFabric()
		n, err := f.AddNode(tt.node, smp.DRPath{})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.SetSwitchInfo(tt.sw); err != nil || !n.HasSwitchInfo {
			t.Fatalf("%s: SetSwitchInfo: %v", tt.name, err)
		}
		p := n.EnsurePort(1, 0x12)
		if err := p.SetInfo(tt.prt); err != nil {
			t.Fatal(err)
		}
		if got := n.RawInfo(); string(got[:]) != string(tt.node) {
			t.Errorf("%s: RawInfo = % x, want % x", tt.name, got, tt.node)
		}
		if got := n.RawSwitchInfo(); string(got[:]) != string(tt.sw) {
			t.Errorf("%s: RawSwitchInfo = % x, want % x", tt.name, got, tt.sw)
		}
		if got := p.RawInfo(); string(got[:]) != string(tt.prt) {
			t.Errorf("%s: port RawInfo = % x, want % x", tt.name, got, tt.prt)
		}
		if kept := n.raw != nil || p.rawInfo != nil; kept != tt.kept {
			t.Errorf("%s: raw bytes kept apart = %v, want %v", tt.name, kept, tt.kept)
		}
		n.SetLocalPortNum(2)
		n.SetPortGUID(0x99)
		p.SetLocalPortNum(2)
		ri, rp := n.RawInfo(), p.RawInfo()
		if n.Info.LocalPortNum != 2 || ri[36] != 2 || n.Info.PortGUID != 0x99 || ri[27] != 0x99 || ri[50] != tt.node[50] {
			t.Errorf("%s: after the setters NodeInfo = %+v, bytes % x", tt.name, n.Info, ri)
		}
		if p.Info.LocalPortNum != 2 || rp[28] != 2 || rp[34] != tt.prt[34] {
			t.Errorf("%s: after SetLocalPortNum PortInfo bytes % x", tt.name, rp)
		}
	}
}

// TestRecordSizes guards the per-node and per-port footprint: a fabric
// holds one Node per node and one PhysPort per port, so a field added
// here costs peak RSS on every large fabric (allocation size classes 256
// and 144 bytes).
func TestRecordSizes(t *testing.T) {
	if s := unsafe.Sizeof(Node{}); s > 256 {
		t.Errorf("Node is %d bytes, want at most 256", s)
	}
	if s := unsafe.Sizeof(PhysPort{}); s > 144 {
		t.Errorf("PhysPort is %d bytes, want at most 144", s)
	}
}

// SetInfo's mask of the bits a PortInfo keeps through decoding and
// re-encoding says "differs" exactly where the re-encoding differs, for
// every single bit and for random PortInfos; and RawInfo gives back what
// was received either way.
func TestPortInfoKeptBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 18))
	var inputs [][smp.DataSize]byte
	for i := 0; i < smp.DataSize*8; i++ {
		var b [smp.DataSize]byte
		b[i/8] = 1 << (i % 8)
		inputs = append(inputs, b)
	}
	for range 20000 {
		var b [smp.DataSize]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 { // mostly valid: reserved bits clear
			for i := range b {
				b[i] &= portInfoKept[i]
			}
			b[rng.IntN(len(b))] |= byte(rng.Uint32()) & byte(rng.Uint32())
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		var pi smp.PortInfo
		if err := pi.UnmarshalBinary(in[:]); err != nil {
			t.Fatal(err)
		}
		var enc [smp.DataSize]byte
		pi.MarshalTo(enc[:])
		want := enc != in
		if got := outsideBits(&in, &portInfoKept); got != want {
			t.Fatalf("PortInfo % x: mask says differs=%v, re-encoding %v", in, got, want)
		}
		pp := &PhysPort{}
		if err := pp.SetInfo(in[:]); err != nil {
			t.Fatal(err)
		}
		if (pp.rawInfo != nil) != want {
			t.Fatalf("PortInfo % x: kept raw %v, want %v", in, pp.rawInfo != nil, want)
		}
		if got := pp.RawInfo(); got != in {
			t.Fatalf("RawInfo = % x, want % x", got, in)
		}
	}
}
