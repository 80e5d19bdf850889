package routing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestRoutedHops: on min-hop routes the routed hop count of every switch
// to every LID is the least hop count, stored at the LFT's port; a broken
// entry removes the LID from the switches whose route crosses it.
func TestRoutedHops(t *testing.T) {
	r := load(t, fabrics+"chain10.net")
	h := routing.RoutedHops(r.f, r.tabs)
	if len(h.Switches()) != 10 {
		t.Fatalf("%d switches", len(h.Switches()))
	}
	lids := 0
	for l := uint32(1); l <= uint32(r.f.MaxLID()); l++ {
		lid := uint16(l)
		dest := r.f.PortByLID(lid)
		if dest == nil {
			continue
		}
		lids++
		for _, sw := range h.Switches() {
			m := h.Matrix(sw)
			want := r.hops.LeastHopsTo(sw, lid)
			if got := m.LeastHops(lid); got != want {
				t.Errorf("%s to LID %d: %d hops, want %d", sw.Description(), lid, got, want)
			}
			port := int(r.tabs.Port(sw, lid))
			for p := 0; p <= sw.NumPorts(); p++ {
				v := m.Get(lid, p)
				switch {
				case p == port && v != want:
					t.Errorf("%s to LID %d: port %d has %d, want %d", sw.Description(), lid, p, v, want)
				case p != port && p != 0 && v != model.NoPath:
					t.Errorf("%s to LID %d: port %d (not the LFT's %d) has %d", sw.Description(), lid, p, port, v)
				}
			}
		}
	}
	if lids < 12 {
		t.Fatalf("only %d LIDs", lids)
	}

	// c5 drops hB's LID: c1..c5 lose it, c6..c10 keep it.
	hB := r.lid(t, "hB")
	r.setEntry(t, "c5", hB, routing.NoRoute)
	h = routing.RoutedHops(r.f, r.tabs)
	for i := 1; i <= 10; i++ {
		sw := r.node(t, fmt.Sprintf("c%d", i))
		got := h.Matrix(sw).LeastHops(hB)
		if (i <= 5) != (got == model.NoPath) {
			t.Errorf("c%d to hB after the black hole: %d", i, got)
		}
	}
	// A loop between c3 and c4 for hB (c4 port 1 leads back to c3).
	r.setEntry(t, "c4", hB, 1)
	h = routing.RoutedHops(r.f, r.tabs)
	if v := h.Matrix(r.node(t, "c3")).LeastHops(hB); v != model.NoPath {
		t.Errorf("c3 in a loop: %d hops", v)
	}
}

// TestParseEngine accepts every engine OpenSM names, in any case.
func TestParseEngine(t *testing.T) {
	for _, e := range routing.Engines {
		for _, s := range []string{string(e), strings.ToUpper(string(e))} {
			got, err := routing.ParseEngine(s)
			if err != nil || got != e {
				t.Errorf("%q: %v %v", s, got, err)
			}
		}
	}
	if e, err := routing.ParseEngine("TORUS-2qos"); err != nil || e != routing.Torus2QoS {
		t.Errorf("TORUS-2qos: %v %v", e, err)
	}
	if _, err := routing.ParseEngine("fattree"); err == nil {
		t.Error("fattree accepted")
	}
}

// BenchmarkRoutedHops: the routed tables (dfsssp's matrix) of a
// radix-16 three-level fat tree routed by the embedded SM.
func BenchmarkRoutedHops(b *testing.B) {
	r := load(b, "fattree:levels=3,radix=16")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if h := routing.RoutedHops(r.f, r.tabs); len(h.Switches()) == 0 {
			b.Fatal("no switches")
		}
	}
	b.ReportMetric(float64(len(r.f.Switches())), "switches")
}
