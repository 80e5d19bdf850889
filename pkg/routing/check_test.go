package routing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

const fabrics = "../../testdata/fabrics/"

// routed is a fabric routed by the embedded simulator's SM, discovered,
// with its forwarding tables read.
type routed struct {
	sim  *sim.Fabric
	tr   transport.Transport
	q    *discover.Querier
	f    *model.Fabric
	tabs *routing.Tables
	hops *model.HopTables
}

func load(t testing.TB, spec string) *routed {
	t.Helper()
	var sf *sim.Fabric
	var err error
	if len(spec) > 8 && spec[:8] == "fattree:" {
		sf, err = sim.Generate(spec, nil)
	} else {
		sf, err = sim.Load(spec, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := sf.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial() {
		t.Fatalf("partial discovery: %v %v", res.Errors, res.Err)
	}
	q := &discover.Querier{Transport: tr, Timeout: time.Second}
	tabs, err := routing.Read(ctx, q, res.Fabric, 4)
	if err != nil {
		t.Fatal(err)
	}
	return &routed{sim: sf, tr: tr, q: q, f: res.Fabric, tabs: tabs, hops: model.ComputeHops(res.Fabric)}
}

func (r *routed) node(t testing.TB, desc string) *model.Node {
	t.Helper()
	for _, n := range r.f.Nodes {
		if n.Description() == desc {
			return n
		}
	}
	t.Fatalf("no node %q", desc)
	return nil
}

func (r *routed) lid(t testing.TB, desc string) uint16 {
	t.Helper()
	p, err := r.f.ResolvePort(desc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.BaseLID()
}

// setEntry changes one LFT entry in the tables read (a copy per switch).
func (r *routed) setEntry(t testing.TB, sw string, lid uint16, port uint8) {
	t.Helper()
	n := r.node(t, sw)
	tab := slices.Clone(r.tabs.Table(n))
	tab[lid] = port
	r.tabs.Set(n, tab)
}

// TestCheckClean: the simulator's min-hop routes have no problem.
func TestCheckClean(t *testing.T) {
	for _, spec := range []string{fabrics + "loop.net", fabrics + "fattree2.net", fabrics + "chain10.net",
		fabrics + "dualhomed.net", fabrics + "parallel.net", fabrics + "router.net", "fattree:levels=3,radix=8"} {
		t.Run(spec, func(t *testing.T) {
			r := load(t, spec)
			res := routing.Check(r.f, r.tabs, r.hops)
			if !res.Clean() {
				for _, fd := range res.Findings {
					t.Errorf("finding %+v", fd)
				}
			}
			lids := 0
			for l := 1; l <= int(r.f.MaxLID()); l++ {
				if r.f.PortByLID(uint16(l)) != nil {
					lids++
				}
			}
			if sws := len(r.f.Switches()); res.Switches != sws || res.LIDs != lids || res.Routes != sws*lids {
				t.Errorf("checked %d switches, %d LIDs, %d routes; want %d, %d, %d", res.Switches, res.LIDs, res.Routes, sws, lids, sws*lids)
			}
			if res.Broken != 0 || res.Longer != 0 {
				t.Errorf("broken %d longer %d", res.Broken, res.Longer)
			}
		})
	}
}

func describe(fd routing.Finding) string {
	s := fmt.Sprintf("%s lid %d at %s port %d routes %d", fd.Kind, fd.DLID, fd.At.Description(), fd.Port, fd.Routes)
	if fd.Kind == routing.KindLonger {
		s += fmt.Sprintf(" hops %d min %d", fd.Hops, fd.MinHops)
	}
	for i, c := range fd.Cycle {
		if i == 0 {
			s += " cycle"
		}
		s += " " + c.Description()
	}
	return s
}

// TestCheckFindings programs each kind of problem into loop.net's tables
// (three switches in a triangle, one host on each) and checks what is
// reported.
func TestCheckFindings(t *testing.T) {
	r := load(t, fabrics+"loop.net")
	sw1, sw2, sw3 := r.lid(t, "sw1"), r.lid(t, "sw2"), r.lid(t, "sw3")
	h1, h2, h3 := r.lid(t, "h1"), r.lid(t, "h2"), r.lid(t, "h3")
	_ = sw2
	_ = sw3
	// loop for h3: sw1 -> sw2 (port 2), sw2 -> sw1 (port 3)
	r.setEntry(t, "sw1", h3, 2)
	r.setEntry(t, "sw2", h3, 3)
	// black hole for h1 at sw3
	r.setEntry(t, "sw3", h1, routing.NoRoute)
	// down port for h2 at sw1 (port 7 has no link)
	r.setEntry(t, "sw1", h2, 7)
	// longer: sw2 reaches sw1 through sw3 (2 hops instead of 1)
	r.setEntry(t, "sw2", sw1, 4)
	// transit CA: sw3 sends sw2's LID to h3
	r.setEntry(t, "sw3", r.lid(t, "sw2"), 1)

	res := routing.Check(r.f, r.tabs, r.hops)
	var got []string
	for _, fd := range res.Findings {
		got = append(got, describe(fd))
	}
	want := []string{
		fmt.Sprintf("longer-than-min-hop lid %d at sw2 port 4 routes 1 hops 2 min 1", sw1),
		fmt.Sprintf("transit-ca lid %d at sw3 port 1 routes 1", r.lid(t, "sw2")),
		fmt.Sprintf("black-hole lid %d at sw3 port 255 routes 1", h1),
		fmt.Sprintf("down-port lid %d at sw1 port 7 routes 1", h2),
		fmt.Sprintf("loop lid %d at sw1 port 2 routes 2 cycle sw1 sw2", h3),
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
	// Only the switch with the bad entry meets it (the others route
	// directly), except the loop, met by both of its switches.
	if res.Routes != 18 || res.Broken != 1+1+1+2 || res.Longer != 1 {
		t.Errorf("routes %d broken %d longer %d", res.Routes, res.Broken, res.Longer)
	}
	if res.Count(routing.KindLoop) != 1 || res.Count(routing.KindBlackHole) != 1 {
		t.Errorf("counts: loop %d black hole %d", res.Count(routing.KindLoop), res.Count(routing.KindBlackHole))
	}
	for _, fd := range res.Findings {
		if fd.Kind != routing.KindLonger && fd.Err == nil {
			t.Errorf("%s: no error", fd.Kind)
		}
	}

	// Trace agrees on every broken route.
	for _, c := range []struct {
		from string
		lid  uint16
		err  error
	}{{"sw1", h3, routing.ErrLoop}, {"sw3", h1, routing.ErrBlackHole}, {"sw2", h2, nil}, {"sw1", h2, routing.ErrDownPort}, {"sw3", sw2, routing.ErrTransitCA}} {
		_, _, err := routing.Trace(r.f, r.tabs, r.node(t, c.from).Port(0), c.lid)
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("Trace %s -> %d: %v, want %v", c.from, c.lid, err, c.err)
		}
	}

	// A switch without a table: every route through it breaks there.
	r.tabs.Set(r.node(t, "sw3"), nil)
	res = routing.Check(r.f, r.tabs, nil)
	n := 0
	for _, fd := range res.Findings {
		if fd.Kind == routing.KindNoTable {
			n++
			if fd.At.Description() != "sw3" {
				t.Errorf("no table at %s", fd.At.Description())
			}
		}
		if fd.Kind == routing.KindLonger {
			t.Errorf("longer reported without hop tables")
		}
	}
	if n != 5 { // every LID but sw3's own
		t.Errorf("%d no-table findings, want 5", n)
	}
}

// TestTraceLive: reading one block per switch on the way gives the same
// routes as the full tables.
func TestTraceLive(t *testing.T) {
	r := load(t, fabrics+"fattree2.net")
	ctx := context.Background()
	before := r.q.SMPs()
	ports := []*model.PhysPort{}
	for _, n := range r.f.Nodes {
		for _, pp := range n.Ports {
			if pp != nil && pp.HasInfo && pp.BaseLID() != 0 && (!n.IsSwitch() || pp.Num == 0) {
				ports = append(ports, pp)
			}
		}
	}
	for _, src := range ports {
		for _, dst := range ports {
			want, wdst, werr := routing.Trace(r.f, r.tabs, src, dst.BaseLID())
			got, gdst, gerr := routing.TraceLive(ctx, r.q, r.f, src, dst.BaseLID())
			if !slices.Equal(want, got) || wdst != gdst || (werr == nil) != (gerr == nil) {
				t.Fatalf("%v -> %d: live %v %v %v, full %v %v %v", src, dst.BaseLID(), got, gdst, gerr, want, wdst, werr)
			}
			if gdst == nil || gdst.Node != dst.Node {
				t.Fatalf("%v -> %d: reached %v", src, dst.BaseLID(), gdst)
			}
		}
	}
	if r.q.SMPs() == before {
		t.Error("TraceLive sent no SMPs")
	}
}

func BenchmarkCheck(b *testing.B) {
	r := load(b, "fattree:levels=3,radix=16")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := routing.Check(r.f, r.tabs, r.hops)
		if !res.Clean() {
			b.Fatal(describe(res.Findings[0]))
		}
	}
	b.ReportMetric(float64(len(r.f.Switches())), "switches")
}

// FuzzCheck scribbles over fattree2.net's forwarding tables (pairs of
// table offset and new entry) and checks Check against Trace: the same
// number of broken routes, each kind counted as Trace's errors say, and
// the same number of detours.
func FuzzCheck(f *testing.F) {
	r := load(f, fabrics+"fattree2.net")
	sws := r.f.Switches()
	orig := make([][]byte, len(sws))
	for i, sw := range sws {
		orig[i] = slices.Clone(r.tabs.Table(sw))
	}
	f.Add([]byte{0, 0})
	f.Add([]byte{3, 5, 40, 255, 77, 1, 120, 0})
	f.Add([]byte{1, 2, 2, 9, 30, 6, 31, 7, 90, 3, 100, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tabs := routing.NewTables()
		for i, sw := range sws {
			tabs.Set(sw, slices.Clone(orig[i]))
		}
		for k := 0; k+1 < len(ops); k += 2 {
			sw := sws[int(ops[k])%len(sws)]
			tab := tabs.Table(sw)
			lid := (int(ops[k]) / len(sws)) % len(tab)
			v := ops[k+1]
			if v != 0xFF {
				v %= 10 // mostly real ports 0..8, sometimes one too many
			}
			tab[lid] = v
		}
		res := routing.Check(r.f, tabs, r.hops)
		routed := routing.RoutedHops(r.f, tabs)
		broken, longer := 0, 0
		kinds := map[error]int{}
		for _, sw := range sws {
			for l := 1; l <= int(r.f.MaxLID()); l++ {
				dst := r.f.PortByLID(uint16(l))
				if dst == nil {
					continue
				}
				hops, _, err := routing.Trace(r.f, tabs, sw.Port(0), uint16(l))
				// The routed tables hold the length of the same route.
				want := model.NoPath
				if err == nil {
					want = uint8(len(hops))
				}
				if got := routed.Matrix(sw).LeastHops(uint16(l)); got != want {
					t.Fatalf("RoutedHops %s to LID %d: %d, Trace %d (%v)", sw.Description(), l, got, want, err)
				}
				if err != nil {
					broken++
					var re *routing.RouteError
					if errors.As(err, &re) {
						kinds[re.Err]++
					}
					continue
				}
				if least := r.hops.LeastHopsTo(sw, uint16(l)); least != model.NoPath && len(hops) > int(least) {
					longer++
				}
			}
		}
		if res.Broken != broken || res.Longer != longer {
			t.Fatalf("Check: broken %d longer %d; Trace: broken %d longer %d", res.Broken, res.Longer, broken, longer)
		}
		byErr := map[error]int{}
		for _, fd := range res.Findings {
			if fd.Err != nil {
				byErr[fd.Err] += fd.Routes
			}
		}
		for e, n := range kinds {
			if byErr[e] != n {
				t.Fatalf("%v: Check %d routes, Trace %d", e, byErr[e], n)
			}
		}
	})
}

// TestCheckLongerOnly: a route longer than the least hop count, the only
// finding, makes the result not clean.
func TestCheckLongerOnly(t *testing.T) {
	r := load(t, fabrics+"loop.net")
	r.setEntry(t, "sw2", r.lid(t, "sw1"), 4) // through sw3: 2 hops, min 1
	res := routing.Check(r.f, r.tabs, r.hops)
	if res.Clean() {
		t.Errorf("clean with %d longer route(s): %+v", res.Longer, res.Findings)
	}
	if res.Broken != 0 || res.Longer != 1 || res.Count(routing.KindLonger) != 1 || len(res.Findings) != 1 {
		t.Errorf("broken %d longer %d findings %+v", res.Broken, res.Longer, res.Findings)
	}
}
