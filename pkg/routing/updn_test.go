package routing_test

import (
	"bytes"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// dumpOf is the lid-matrix dump of h, for comparisons.
func dumpOf(t *testing.T, f *model.Fabric, h *model.HopTables) string {
	t.Helper()
	var b bytes.Buffer
	if err := model.WriteLIDMatrixDump(&b, f, h); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUpDnFatTree: on a fat tree updn finds the core switches as roots
// and dnup the edge switches as rank 0; both only restrict min-hop, so
// no entry is below the min-hop one and every switch has 0 hops to
// itself. Under updn every edge switch reaches every switch (up, then
// down), while some others do not reach each other (that would take an
// up turn after a down one), as in OpenSM's dumps.
func TestUpDnFatTree(t *testing.T) {
	f := fatTree(t, 4, 4)
	min := model.ComputeHops(f)
	for name, compute := range map[string]func(*model.Fabric) (*model.HopTables, bool){"updn": routing.ComputeUpDn, "dnup": routing.ComputeDnUp} {
		h, ok := compute(f)
		if !ok {
			t.Fatalf("%s gave up on a fat tree", name)
		}
		if len(h.Switches()) != len(min.Switches()) {
			t.Fatalf("%s: %d switches", name, len(h.Switches()))
		}
		differ := 0
		for _, sw := range h.Switches() {
			m, mm := h.Matrix(sw), min.Matrix(sw)
			for _, other := range h.Switches() {
				lid := other.SMALID()
				got := m.LeastHops(lid)
				edge := sw.GUID()>>48 == 1
				if (other == sw) != (got == 0) || (name == "updn" && edge && got == model.NoPath) {
					t.Errorf("%s: %#x to %#x: %d hops", name, sw.GUID(), other.GUID(), got)
				}
				for p := 0; p <= sw.NumPorts(); p++ {
					v, w := m.Get(lid, p), mm.Get(lid, p)
					if v < w {
						t.Errorf("%s: %#x to %#x port %d: %d below min-hop %d", name, sw.GUID(), other.GUID(), p, v, w)
					}
					if v != w {
						differ++
					}
				}
			}
		}
		if differ == 0 {
			t.Errorf("%s: the same as min-hop: the restriction did nothing", name)
		}
	}
}

// TestUpDnGiveUp: without CAs updn finds no roots and dnup no rank-0
// switch; OpenSM then keeps (falls back to) the min-hop tables.
func TestUpDnGiveUp(t *testing.T) {
	b := newBuilder(t)
	s1, s2, s3 := b.sw(0x10, 4, 1), b.sw(0x20, 4, 2), b.sw(0x30, 4, 3)
	b.link(s1, 1, s2, 1)
	b.link(s2, 2, s3, 1)
	b.link(s3, 2, s1, 2)
	want := dumpOf(t, b.f, model.ComputeHops(b.f))
	for name, compute := range map[string]func(*model.Fabric) (*model.HopTables, bool){"updn": routing.ComputeUpDn, "dnup": routing.ComputeDnUp} {
		h, ok := compute(b.f)
		if ok {
			t.Errorf("%s did not give up", name)
		}
		if got := dumpOf(t, b.f, h); got != want {
			t.Errorf("%s fallback:\n%s\nwant min-hop:\n%s", name, got, want)
		}
	}
}

// BenchmarkComputeUpDn and BenchmarkComputeDnUp: the updn and dnup
// tables of the radix-36 fat tree of pkg/model's BenchmarkComputeHops
// (1620 switches; updn includes its min-hop pass).
func BenchmarkComputeUpDn(b *testing.B) {
	f := fatTree(b, 36, 36)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := routing.ComputeUpDn(f); !ok {
			b.Fatal("no roots")
		}
	}
}

func BenchmarkComputeDnUp(b *testing.B) {
	f := fatTree(b, 36, 36)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := routing.ComputeDnUp(f); !ok {
			b.Fatal("no leaves")
		}
	}
}

// FuzzUpDn builds switch fabrics from ops (links between up to 12
// switches; a CA on the switches named by the high bit) and checks the
// updn and dnup tables' invariants: column 0 is the least of the ports'
// entries (0 for a switch's own LID), entries are hop counts or NoPath,
// and dnup gives up exactly when no switch has a CA.
func FuzzUpDn(f *testing.F) {
	f.Add(uint8(4), []byte{0x80, 1, 1, 2, 2, 3, 0x83, 0})
	f.Add(uint8(6), []byte{0x80, 1, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 0x85, 0, 0x81, 0x83})
	f.Add(uint8(1), []byte{0, 0})
	f.Fuzz(func(t *testing.T, nsw uint8, ops []byte) {
		n := int(nsw%12) + 1
		b := newBuilder(t)
		sws := make([]*model.Node, n)
		for i := range sws {
			sws[i] = b.sw(uint64(i*37%13+1)<<56|uint64(i), 8, 0)
		}
		used := make([]int, n)
		cas := 0
		for k := 0; k+1 < len(ops); k += 2 {
			x, y := int(ops[k]&0x7F)%n, int(ops[k+1]&0x7F)%n
			if ops[k]&0x80 != 0 && used[x] < 7 {
				used[x]++
				ca := b.ca(0xCA00000000000000|uint64(k), 1, 0)
				b.link(sws[x], used[x], ca, 1)
				cas++
				continue
			}
			if used[x] >= 7 || used[y] >= 7 || (x == y && used[x] >= 6) {
				continue
			}
			used[x]++
			px := used[x]
			used[y]++
			b.link(sws[x], px, sws[y], used[y])
		}
		for name, compute := range map[string]func(*model.Fabric) (*model.HopTables, bool){"updn": routing.ComputeUpDn, "dnup": routing.ComputeDnUp} {
			h, ok := compute(b.f)
			if name == "dnup" && ok != (cas > 0) {
				t.Fatalf("dnup ok %v with %d CAs", ok, cas)
			}
			for _, sw := range h.Switches() {
				m := h.Matrix(sw)
				for _, other := range h.Switches() {
					row := m.Row(other.SMALID())
					if row == nil {
						t.Fatalf("%s: no row for a switch LID", name)
					}
					least := model.NoPath
					for p := 1; p < len(row); p++ {
						if row[p] != model.NoPath && row[p] >= 64 {
							t.Fatalf("%s: entry %d", name, row[p])
						}
						least = min(least, row[p])
					}
					if other == sw {
						least = 0
					}
					if row[0] != least {
						t.Fatalf("%s: %#x to %#x: column 0 %d, least of the ports %d (%v)", name, sw.GUID(), other.GUID(), row[0], least, row)
					}
				}
			}
		}
	})
}
