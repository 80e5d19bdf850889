package model

import (
	"testing"
)

// line builds S1 - S2 - S3 (S1 port 2 to S2 port 1, S2 port 2 to S3 port
// 1, plus a parallel S2 port 3 to S3 port 3), CA A on S1 port 1, CA B on
// S3 port 2, CA C on S1 port 3. LIDs: S1 1, S2 2, S3 3, A 4, B 5, C 6.
func line(t testing.TB) (f *Fabric, s1, s2, s3, a, bb, c *Node) {
	b := newBuilder(t)
	s1 = b.sw(0x10, 4, 1)
	s2 = b.sw(0x20, 4, 2)
	s3 = b.sw(0x30, 4, 3)
	a = b.ca(0x100, 1, 4)
	bb = b.ca(0x200, 1, 5)
	c = b.ca(0x300, 1, 6)
	b.link(s1, 2, s2, 1)
	b.link(s2, 2, s3, 1)
	b.link(s2, 3, s3, 3)
	b.link(s1, 1, a, 1)
	b.link(s3, 2, bb, 1)
	b.link(s1, 3, c, 1)
	return b.f, s1, s2, s3, a, bb, c
}

func TestComputeHopsLine(t *testing.T) {
	f, s1, s2, s3, _, _, _ := line(t)
	h := ComputeHops(f)
	const X = NoPath
	want := map[*Node]map[uint16][]uint8{
		s1: {
			1: {0, X, 2, X, X},
			2: {1, X, 1, X, X},
			3: {2, X, 2, X, X},
		},
		s2: {
			1: {1, 1, 3, 3, X},
			2: {0, 2, 2, 2, X},
			3: {1, 3, 1, 1, X},
		},
		s3: {
			1: {2, 2, X, 2, X},
			2: {1, 1, X, 1, X},
			3: {0, 2, X, 2, X},
		},
	}
	for sw, rows := range want {
		m := h.Matrix(sw)
		if m == nil {
			t.Fatalf("switch %#x: no matrix", sw.GUID())
		}
		if m.NumRows() != 3 {
			t.Errorf("switch %#x: %d rows, want 3", sw.GUID(), m.NumRows())
		}
		for lid, row := range rows {
			for p, v := range row {
				if got := m.Get(lid, p); got != v {
					t.Errorf("switch %#x lid %d port %d: %#x, want %#x", sw.GUID(), lid, p, got, v)
				}
			}
		}
		for _, lid := range []uint16{0, 4, 5, 6, 7, 1000} {
			if got := m.LeastHops(lid); got != X {
				t.Errorf("switch %#x: CA/unknown lid %d has %#x, want no row", sw.GUID(), lid, got)
			}
		}
	}
	if h.MaxLID() != 6 {
		t.Errorf("MaxLID = %d, want 6", h.MaxLID())
	}
	if h.Passes() < 1 || h.Passes() > 2 {
		t.Errorf("Passes = %d, want 1..2 for 3 switches", h.Passes())
	}
}

func TestLeastHopsTo(t *testing.T) {
	f, s1, s2, s3, _, _, _ := line(t)
	h := ComputeHops(f)
	tests := []struct {
		sw   *Node
		lid  uint16
		want uint8
	}{
		{s1, 1, 0},
		{s1, 2, 1},
		{s1, 3, 2},
		{s1, 4, 1}, // A hangs on s1
		{s1, 5, 3}, // B on s3: 2 + 1
		{s1, 6, 1},
		{s2, 4, 2},
		{s2, 5, 2},
		{s3, 4, 3},
		{s3, 5, 1},
		{s1, 7, NoPath}, // unassigned
		{s1, 0, NoPath},
	}
	for _, tt := range tests {
		if got := h.LeastHopsTo(tt.sw, tt.lid); got != tt.want {
			t.Errorf("LeastHopsTo(%#x, %d) = %d, want %d", tt.sw.GUID(), tt.lid, got, tt.want)
		}
	}
	// A node that is not a switch with tables has no answer.
	if got := h.LeastHopsTo(f.NodeByGUID(0x100), 1); got != NoPath {
		t.Errorf("LeastHopsTo(CA) = %d, want NoPath", got)
	}
}

func TestHopsBetween(t *testing.T) {
	f, s1, s2, s3, a, bb, c := line(t)
	h := ComputeHops(f)
	pg := func(n *Node) *Port {
		if n.IsSwitch() {
			return f.PortByGUID(n.GUID())
		}
		return f.PortByGUID(n.GUID() + 1)
	}
	tests := []struct {
		a, b *Node
		want uint8
	}{
		{a, a, 0},
		{a, s1, 1},
		{s1, a, 1},
		{a, c, 2},  // same switch
		{a, bb, 4}, // s1..s3 = 2, +1 +1
		{bb, a, 4},
		{s1, s3, 2},
		{s2, s2, 0},
		{a, s2, 2},
		{s3, a, 3},
	}
	for _, tt := range tests {
		if got := h.HopsBetween(pg(tt.a), pg(tt.b)); got != tt.want {
			t.Errorf("HopsBetween(%#x, %#x) = %d, want %d", tt.a.GUID(), tt.b.GUID(), got, tt.want)
		}
	}
	if got := h.HopsBetween(nil, pg(a)); got != NoPath {
		t.Errorf("HopsBetween(nil, a) = %d, want NoPath", got)
	}
}

func TestHopsBetweenDetached(t *testing.T) {
	b := newBuilder(t)
	s := b.sw(0x10, 2, 1)
	x := b.ca(0x100, 1, 2)
	y := b.ca(0x200, 1, 3)
	b.ca(0x300, 1, 4)      // no link at all
	w := b.ca(0x400, 2, 5) // port 1 on s, port 2 unlinked
	b.link(x, 1, y, 1)     // CA back to back
	b.link(s, 1, w, 1)
	h := ComputeHops(b.f)
	p := func(guid uint64) *Port { return b.f.PortByGUID(guid) }
	tests := []struct {
		name string
		a, b *Port
		want uint8
	}{
		{"back to back", p(0x101), p(0x201), 1},
		{"no switch", p(0x101), p(0x401), NoPath},
		{"unlinked", p(0x301), p(0x10), NoPath},
		{"on switch", p(0x401), p(0x10), 1},
		{"second port unlinked", p(0x402), p(0x10), NoPath},
		{"two ports of one CA", p(0x401), p(0x402), NoPath},
	}
	for _, tt := range tests {
		if got := h.HopsBetween(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := h.LeastHopsTo(s, 2); got != NoPath {
		t.Errorf("LeastHopsTo(s, CA without switch) = %d, want NoPath", got)
	}
}

func TestComputeHopsUnhealthy(t *testing.T) {
	// Ring S1-S2-S3-S4-S1; the S1-S2 link is unhealthy: it is seeded (its
	// ends still record 1 hop to each other) but relaxation does not
	// cross it, so S1 reaches S3 only through S4.
	b := newBuilder(t)
	s1 := b.sw(0x1, 2, 1)
	s2 := b.sw(0x2, 2, 2)
	s3 := b.sw(0x3, 2, 3)
	s4 := b.sw(0x4, 2, 4)
	b.link(s1, 1, s2, 2)
	b.link(s2, 1, s3, 2)
	b.link(s3, 1, s4, 2)
	b.link(s4, 1, s1, 2)
	s1.Port(1).Healthy = false
	h := ComputeHops(b.f)
	m := h.Matrix(s1)
	checks := []struct {
		lid  uint16
		port int
		want uint8
	}{
		{2, 1, 1},      // seeded
		{2, 0, 1},      // least
		{3, 1, NoPath}, // not relaxed over the bad link
		{3, 2, 2},
		{4, 2, 1},
		{1, 2, 2},
		{1, 1, NoPath},
	}
	for _, c := range checks {
		if got := m.Get(c.lid, c.port); got != c.want {
			t.Errorf("s1 lid %d port %d = %#x, want %#x", c.lid, c.port, got, c.want)
		}
	}
	// S2 sees S1 through its port 2 by the seed only; S4 via S3.
	if got := h.Matrix(s2).Get(4, 2); got != NoPath {
		t.Errorf("s2 lid 4 port 2 = %#x, want NoPath", got)
	}
	if got := h.Matrix(s2).Get(4, 1); got != 2 {
		t.Errorf("s2 lid 4 port 1 = %#x, want 2", got)
	}
}

func TestComputeHopsSkips(t *testing.T) {
	b := newBuilder(t)
	s1 := b.sw(0x1, 2, 1)
	s2 := b.sw(0x2, 2, 0)
	s2.Port(0).Info.LID = 0 // no LID: no table
	s3 := b.sw(0x3, 2, 3)
	s3.HasSwitchInfo = true // LinearFDBCap 0: not a switch object
	b.link(s1, 1, s2, 1)
	b.link(s1, 2, s3, 1)
	h := ComputeHops(b.f)
	if len(h.Switches()) != 1 || h.Switches()[0] != s1 {
		t.Fatalf("Switches = %v, want only s1", h.Switches())
	}
	if h.Matrix(s2) != nil || h.Matrix(s3) != nil {
		t.Error("switch without LID or LFT got a matrix")
	}
	if got := h.Matrix(s1).Get(3, 2); got != NoPath {
		t.Errorf("seeded toward a non-switch-object: %#x", got)
	}
	if h.Passes() != 0 {
		t.Errorf("Passes = %d, want 0 for one switch", h.Passes())
	}
}

// bfs returns the hop distance between switches over healthy
// switch-to-switch links.
func bfs(f *Fabric, from *Node) map[*Node]int {
	d := map[*Node]int{from: 0}
	q := []*Node{from}
	for len(q) > 0 {
		n := q[0]
		q = q[1:]
		for _, p := range n.Ports[1:] {
			if p == nil || p.Remote == nil || !p.Remote.Node.IsSwitch() {
				continue
			}
			r := p.Remote.Node
			if _, ok := d[r]; !ok {
				d[r] = d[n] + 1
				q = append(q, r)
			}
		}
	}
	return d
}

// TestComputeHopsFatTree checks every entry of every matrix against an
// independent breadth-first search: port p of S toward switch T holds
// 1 + dist(peer(p), T), column 0 holds dist(S, T).
func TestComputeHopsFatTree(t *testing.T) {
	f := fatTree(t, 8, 6)
	h := ComputeHops(f)
	sws := f.Switches()
	if len(h.Switches()) != len(sws) {
		t.Fatalf("%d switches with tables, want %d", len(h.Switches()), len(sws))
	}
	dist := map[*Node]map[*Node]int{}
	for _, s := range sws {
		dist[s] = bfs(f, s)
	}
	for _, s := range sws {
		m := h.Matrix(s)
		for _, tt := range sws {
			lid := tt.SMALID()
			if got, want := m.LeastHops(lid), uint8(dist[s][tt]); got != want {
				t.Fatalf("%#x -> %#x least %d, want %d", s.GUID(), tt.GUID(), got, want)
			}
			for p := 1; p <= s.NumPorts(); p++ {
				want := NoPath
				if r := s.Port(p).Remote; r != nil && r.Node.IsSwitch() {
					want = uint8(1 + dist[r.Node][tt])
				}
				if got := m.Get(lid, p); got != want {
					t.Fatalf("%#x -> %#x port %d: %d, want %d", s.GUID(), tt.GUID(), p, got, want)
				}
			}
		}
	}
	// diameter 4 (edge-agg-core-agg-edge): 4 changing passes + 1 quiet one
	// at most.
	if h.Passes() > 5 {
		t.Errorf("Passes = %d, want <= 5", h.Passes())
	}
}

func BenchmarkComputeHops(b *testing.B) {
	f := fatTree(b, 36, 36) // 1620 switches, 11664 CAs, 13284 LIDs
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := ComputeHops(f)
		if h.Passes() == 0 {
			b.Fatal("no passes")
		}
	}
}

// FuzzComputeHops builds a random switch graph (ops: pairs of switch
// indexes and a health bit) and checks every matrix entry against a
// breadth-first search over healthy links, seeded entries included.
func FuzzComputeHops(f *testing.F) {
	f.Add(uint8(4), []byte{0, 1, 1, 2, 2, 3, 3, 0})
	f.Add(uint8(6), []byte{0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0, 0x81, 0x83})
	f.Add(uint8(1), []byte{0, 0})
	f.Fuzz(func(t *testing.T, nsw uint8, ops []byte) {
		n := int(nsw%12) + 1
		b := newBuilder(t)
		sws := make([]*Node, n)
		for i := range sws {
			// GUIDs whose map order differs from index order
			sws[i] = b.sw(uint64(i*37%13+1)<<56|uint64(i), 8, 0)
		}
		used := make([]int, n)
		for k := 0; k+1 < len(ops); k += 2 {
			x, y := int(ops[k]&0x7F)%n, int(ops[k+1]&0x7F)%n
			if used[x] >= 8 || used[y] >= 8 || (x == y && used[x] >= 7) {
				continue
			}
			used[x]++
			px := used[x]
			used[y]++
			py := used[y]
			b.link(sws[x], px, sws[y], py)
			if ops[k]&0x80 != 0 {
				sws[x].Port(px).Healthy = false
			}
		}
		h := ComputeHops(b.f)
		// Reference: distances toward each target switch L, searched
		// backward from L. Any link into L counts (the seed ignores link
		// health), further hops only over healthy links between different
		// switches (the relaxation does not cross unhealthy ones).
		toward := func(l *Node) map[*Node]int {
			d := map[*Node]int{l: 0}
			var q []*Node
			for _, p := range l.Ports[1:] {
				if r := p.Remote; r != nil && r.Node != l {
					if _, ok := d[r.Node]; !ok {
						d[r.Node] = 1
						q = append(q, r.Node)
					}
				}
			}
			for len(q) > 0 {
				c := q[0]
				q = q[1:]
				for _, p := range c.Ports[1:] {
					if p.Remote == nil || p.Remote.Node == c || !p.Healthy || !p.Remote.Healthy {
						continue
					}
					if _, ok := d[p.Remote.Node]; !ok {
						d[p.Remote.Node] = d[c] + 1
						q = append(q, p.Remote.Node)
					}
				}
			}
			return d
		}
		ds := map[*Node]map[*Node]int{}
		for _, l := range sws {
			ds[l] = toward(l)
		}
		for _, s := range sws {
			m := h.Matrix(s)
			for _, tt := range sws {
				lid := tt.SMALID()
				least := NoPath
				for p := 1; p <= 8; p++ {
					want := NoPath
					if r := s.Port(p).Remote; r != nil && r.Node != s {
						healthy := s.Port(p).Healthy && r.Healthy
						if d, ok := ds[tt][r.Node]; ok && healthy {
							want = uint8(d + 1)
						}
						if r.Node == tt { // seeded regardless of health
							want = 1
						}
					}
					if got := m.Get(lid, p); got != want {
						t.Fatalf("%d->%d port %d: %d, want %d", s.SMALID(), lid, p, got, want)
					}
					least = min(least, want)
				}
				if s == tt {
					least = 0
				}
				if d, ok := ds[tt][s]; ok != (least != NoPath) || ok && d != int(least) {
					t.Fatalf("%d->%d least %d, reference %d", s.SMALID(), lid, least, d)
				}
				if got := m.LeastHops(lid); got != least {
					t.Fatalf("%d->%d least %d, want %d", s.SMALID(), lid, got, least)
				}
			}
		}
	})
}
