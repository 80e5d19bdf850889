package avwatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/avwatch"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// counting counts the SMPs sent through a transport.
type counting struct {
	transport.Transport
	n atomic.Int64
}

func (c *counting) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	c.n.Add(1)
	return c.Transport.Exchange(ctx, dlid, req, resp)
}

func (c *counting) Limits() transport.Limits { return transport.LimitsOf(c.Transport) }

// watchSide is one watch, as ibavtrack watch runs it: full sweeps (a
// discovery and every forwarding table) and, when light, light sweeps
// between them.
type watchSide struct {
	tr     *counting
	light  bool
	sched  avwatch.Schedule
	res    *discover.Result
	tables *routing.Tables
	w      *avwatch.Watcher
	sweeps int
	// fulls counts the full sweeps; lastLight is what the last light
	// sweep found (nil: the sweep was full without one).
	fulls     int
	lastLight *discover.LightResult
	// memo keeps the answers of the last discovery: a light sweep that
	// sees a change rediscovers incrementally (discover.Rediscover), as
	// ibavtrack watch does. lastIncr is what the last incremental
	// rediscovery did (nil: none, or it could not be trusted, and
	// untrusted says why), lastSMPs the SMPs of the last sweep.
	memo      *discover.Memo
	lastIncr  *discover.Rediscovered
	untrusted string
	incrs     int
	lastSMPs  int64
	// smpTimeout, when set, is the SMPs' timeout (see timeout).
	smpTimeout time.Duration
}

func newSide(t testing.TB, f *sim.Fabric, light bool, dsts []string) *watchSide {
	t.Helper()
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return newSideOn(t, tr, light, dsts)
}

// newSideOn is a watch of dsts through tr (light: with light sweeps).
func newSideOn(t testing.TB, tr transport.Transport, light bool, dsts []string) *watchSide {
	s := &watchSide{tr: &counting{Transport: tr}, light: light, w: avwatch.New(0, dsts)}
	if light {
		s.sched.FullInterval = time.Hour
		s.memo = &discover.Memo{}
	}
	t.Cleanup(s.w.Close)
	return s
}

// timeout is the SMPs' timeout: 100 ms (the embedded simulator answers
// at once, or never), or the side's own.
func (s *watchSide) timeout() time.Duration {
	if s.smpTimeout > 0 {
		return s.smpTimeout
	}
	return 100 * time.Millisecond
}

func (s *watchSide) querier() *discover.Querier {
	return &discover.Querier{Transport: s.tr, Timeout: s.timeout(), Retries: 1}
}

func localPhys(f *model.Fabric) *model.PhysPort {
	if f.From == nil {
		return nil
	}
	return f.From.Port(int(f.FromPort))
}

// srcPort is the watch's source: the local port.
func srcPort(f *model.Fabric) (*model.Port, uint16, error) {
	var src *model.Port
	if pp := localPhys(f); pp != nil {
		src = f.PortByGUID(pp.GUID)
	}
	return avwatch.SourcePort(f, "", src)
}

// sweep runs one sweep and returns its events' texts.
func (s *watchSide) sweep(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := s.tr.n.Load()
	complete := s.res != nil && !s.res.Partial()
	s.lastLight, s.lastIncr, s.untrusted = nil, nil, ""
	full := !s.light || s.sched.Full(time.Now(), s.w, !complete)
	cfg := discover.Config{Timeout: s.timeout(), Retries: 1, Outstanding: 16, Memo: s.memo}
	if !full {
		lr, err := discover.LightSweep(ctx, s.querier(), s.res.Fabric, s.w.Probes(s.tables, localPhys(s.res.Fabric)), 16)
		if err != nil {
			t.Fatalf("light sweep: %v", err)
		}
		s.lastLight = lr
		if lr.Changed {
			res, rd, err := discover.Rediscover(ctx, s.tr, cfg, lr)
			switch {
			case errors.Is(err, discover.ErrUntrusted):
				s.untrusted = err.Error()
				full = true
			case err != nil:
				t.Fatalf("rediscover: %v", err)
			default:
				src, _, _ := srcPort(res.Fabric)
				tabs, err := s.w.RouteTables(ctx, s.querier(), res.Fabric, src)
				switch {
				case errors.Is(err, discover.ErrUntrusted):
					s.untrusted = err.Error()
					full = true
				case err != nil:
					t.Fatalf("route tables: %v", err)
				default:
					s.res, s.tables, s.lastIncr = res, tabs, rd
					s.incrs++
				}
			}
		}
	}
	if full {
		res, err := discover.Discover(ctx, s.tr, cfg)
		if err != nil {
			t.Fatalf("discover: %v", err)
		}
		tabs, err := routing.Read(ctx, s.querier(), res.Fabric, 16)
		if err != nil {
			t.Fatalf("forwarding tables: %v", err)
		}
		s.res, s.tables = res, tabs
		s.sched.Ran(time.Now())
		s.fulls++
	}
	f := s.res.Fabric
	p, slid, srcErr := srcPort(f)
	var out []string
	err := s.w.Update(s.sweeps, f, s.tables, p, slid, srcErr, func(ev *avwatch.Event) error {
		out = append(out, ev.Target+": "+ev.Text())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.sweeps++
	s.lastSMPs = s.tr.n.Load() - before
	return out
}

// fabricJSON renders a fabric for comparison.
func fabricJSON(t *testing.T, res *discover.Result) string {
	t.Helper()
	var b strings.Builder
	if err := fabricjson.Write(&b, res.Fabric, fabricjson.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// setWidth changes the enabled (and so active) width of a port, as
// ibportstate width does: a PortInfo Set through the simulator.
func setWidth(t *testing.T, tr transport.Transport, path smp.DRPath, port uint32, width uint8) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := &discover.Querier{Transport: tr, Timeout: time.Second}
	var cur [smp.DataSize]byte
	if err := q.Get(ctx, path, smp.AttrPortInfo, port, cur[:]); err != nil {
		t.Fatal(err)
	}
	var pi smp.PortInfo
	if err := pi.UnmarshalBinary(cur[:]); err != nil {
		t.Fatal(err)
	}
	pi.PortState, pi.LinkSpeedEnabled, pi.LinkSpeedExtEnabled, pi.LinkWidthEnabled = 0, 0, 0, width
	m := smp.NewGet(path, smp.AttrPortInfo, port)
	m.Method = smp.MethodSet
	if err := pi.MarshalTo(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	req, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, len(req))
	if err := tr.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil || r.StatusCode() != 0 {
		t.Fatalf("PortInfo Set: %v status %#x", err, r.StatusCode())
	}
}

// TestLightSweepReportsAsFull runs two watches of the same destinations
// side by side on a simulated fat tree whose SM has cleared every
// PortStateChange bit: one with full sweeps only, one with light sweeps
// between full ones. After each change, of every class, the light one
// must report exactly what the full one reports, in the same sweep; and
// where the change sets a PortStateChange bit or touches a watched route,
// its fabric must be the full one's.
func TestLightSweepReportsAsFull(t *testing.T) {
	f, err := sim.Generate("fattree:levels=2,radix=8", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM("H0"); err != nil {
		t.Fatal(err)
	}
	dsts := []string{"H31", "H5", "H17"}
	full, light := newSide(t, f, false, dsts), newSide(t, f, true, dsts)
	probe, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()

	step := func(name string, wantEvents, wantFull bool) {
		t.Helper()
		fe, le := full.sweep(t), light.sweep(t)
		compareSweeps(t, name, full, light, dsts, fe, le, wantEvents, wantFull)
	}
	incr := func(name string) { t.Helper(); light.requireIncremental(t, name) }
	exec := func(cmd string) {
		t.Helper()
		if err := f.Exec(cmd); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	sm := func() {
		t.Helper()
		if err := f.RunSM("H0"); err != nil {
			t.Fatal(err)
		}
	}

	step("first sweep", true, true)
	step("idle", false, false)
	if light.lastLight == nil || light.lastLight.Changed {
		t.Fatalf("idle: want a light sweep that sees no change, got %+v", light.lastLight)
	}

	// Off every watched route: only the PortStateChange bit tells.
	exec(`Unlink "H12"[1]`)
	step("link down, off route", false, true)
	incr("link down, off route")
	exec(`ReLink "H12"[1]`)
	step("link up, off route (Initialize)", false, true)
	incr("link up, off route (Initialize)")
	// The SM brings the port up and clears the bit between two light
	// sweeps: the port, Initialize when last read, is read again.
	sm()
	step("link up, off route, SM ran", false, true)
	incr("link up, off route, SM ran")

	// Off route: a node gone, added; a subtree (a leaf switch and its
	// hosts) cut off and back.
	exec(`Unlink "H12"`)
	step("node gone, off route", false, true)
	incr("node gone, off route")
	exec(`ReLink "H12"`)
	step("node added, off route (Initialize)", false, true)
	incr("node added, off route (Initialize)")
	sm()
	step("node added, off route, SM ran", false, true)
	incr("node added, off route, SM ran")
	for p := 5; p <= 8; p++ {
		exec(fmt.Sprintf(`Unlink "L3"[%d]`, p))
	}
	step("subtree cut off", false, true)
	incr("subtree cut off")
	if n := len(light.res.Fabric.Nodes); n != len(full.res.Fabric.Nodes) || n != 44-5 {
		t.Errorf("subtree cut off: %d nodes, a full discovery %d: want %d", n, len(full.res.Fabric.Nodes), 44-5)
	}
	for p := 5; p <= 8; p++ {
		exec(fmt.Sprintf(`ReLink "L3"[%d]`, p))
	}
	step("subtree back (Initialize)", false, true)
	incr("subtree back (Initialize)")
	sm()
	step("subtree back, SM ran", false, true)
	incr("subtree back, SM ran")

	// Two hosts' cables swapped: a port leads to another node than
	// discovered.
	exec(`Unlink "H12"[1]`)
	exec(`Unlink "H13"[1]`)
	exec(`Link "L3"[1] "H13"[1]`)
	exec(`Link "L3"[2] "H12"[1]`)
	step("hosts swapped", false, true)
	incr("hosts swapped")
	sm()
	step("hosts swapped, SM ran", false, true)
	incr("hosts swapped, SM ran")

	// A GUID seen twice: an incremental result cannot be trusted, the
	// sweep is full.
	guid12, guid13 := nodeOf(t, full.res.Fabric, "H12").GUID(), nodeOf(t, full.res.Fabric, "H13").GUID()
	exec(fmt.Sprintf(`Guid "H12" %#x`, guid13))
	exec(`Unlink "H12"[1]`)
	exec(`ReLink "H12"[1]`)
	step("GUID seen twice", false, true)
	if light.lastIncr != nil || !strings.Contains(light.untrusted, "inconsistent") {
		t.Errorf("GUID seen twice: want a full sweep after an inconsistent rediscovery, got %s", light.what(full))
	}
	exec(fmt.Sprintf(`Guid "H12" %#x`, guid12))
	exec(`Unlink "H12"[1]`)
	exec(`ReLink "H12"[1]`)
	sm()
	step("GUID unique again", false, true)

	// On a watched route.
	exec(`Unlink "H31"[1]`)
	step("link down", true, true)
	exec(`ReLink "H31"[1]`)
	step("link up (Initialize)", true, true)
	sm()
	step("link up, SM ran", true, true)

	// A node gone (every link of it) and back: a node added.
	exec(`Unlink "H5"`)
	step("node gone", true, true)
	sm()
	step("node gone, SM ran", false, true)
	exec(`ReLink "H5"`)
	sm()
	step("node added, SM ran", true, true)

	// A node that stops answering.
	exec(`Kill "H17"`)
	step("node dead", true, false)
	exec(`Revive "H17"`)
	step("node revived", true, false)

	// A LID moved, then the SM routes it.
	exec(`Baselid "H31"[1] 200`)
	step("LID moved", true, true)
	sm()
	step("LID moved, SM ran", true, true)

	// A width change on a watched route: no state change, no bit.
	setWidth(t, probe, pathTo(t, full.res.Fabric, "H31"), 1, 1)
	step("width change", true, true)

	step("idle again", false, false)
	if light.lastLight == nil || light.lastLight.Changed {
		t.Errorf("idle again: want a light sweep that sees no change, got %+v", light.lastLight)
	}
	// The safety net: a full sweep at the full interval.
	sm()
	light.sched.FullInterval = time.Nanosecond
	step("full interval", false, true)
	if light.lastLight != nil {
		t.Errorf("full interval: want a full sweep, got a light one: %+v", light.lastLight)
	}
	if light.fulls >= full.fulls {
		t.Errorf("light watch ran %d full sweeps of %d", light.fulls, full.fulls)
	}
}

// what says how the last sweep went, beside full's.
func (s *watchSide) what(full *watchSide) string {
	var b strings.Builder
	if lr := s.lastLight; lr != nil {
		fmt.Fprintf(&b, "light: changed %v (%s), %d marked, %d dirty, %d cut, %d SMPs; ", lr.Changed, lr.Why, lr.Marked, lr.Dirty, lr.Cut, lr.SMPs)
	}
	switch {
	case s.lastIncr != nil:
		fmt.Fprintf(&b, "incremental: %d served, %d sent; ", s.lastIncr.Served, s.lastIncr.Sent)
	case s.untrusted != "":
		fmt.Fprintf(&b, "full: %s; ", s.untrusted)
	}
	fmt.Fprintf(&b, "%d SMPs (full watch: %d)", s.lastSMPs, full.lastSMPs)
	return b.String()
}

// firstDiff shows where two renderings first differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, x, y)
		}
	}
	return "(same)"
}

// TestIncrementalRouteMovedBack: a link the route left goes down and the
// SM routes around it; it comes back and the SM routes over it again and
// clears the PortStateChange bits before the next sweep, so only the
// changed forwarding table block tells. The watch with incremental sweeps
// must report what the full one reports, over the same route: the switch
// whose block changed is read again, and every port of the new route.
func TestIncrementalRouteMovedBack(t *testing.T) {
	f, err := sim.Load("../../cmd/ibavtrack/testdata/watch.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM("h1"); err != nil {
		t.Fatal(err)
	}
	dsts := []string{"h2"}
	full, light := newSide(t, f, false, dsts), newSide(t, f, true, dsts)
	step := func(name string) {
		t.Helper()
		fe, le := full.sweep(t), light.sweep(t)
		if !slices.Equal(fe, le) {
			t.Errorf("%s: light sweep reported\n%q\nfull sweep reported\n%q", name, le, fe)
		}
		if len(fe) == 0 {
			t.Errorf("%s: no event: the change does not test anything", name)
		}
		if a, b := routesOf(light, dsts), routesOf(full, dsts); a != b {
			t.Errorf("%s: the light watch's routes\n%s\nthe full watch's\n%s", name, a, b)
		}
		t.Logf("%s: %q (%s)", name, le, light.what(full))
	}
	step("first sweep")
	for _, c := range []struct{ name, cmd string }{
		{"link down, SM ran", `Unlink "sw1"[2]`},
		{"link up, SM ran", `ReLink "sw1"[2]`},
	} {
		if err := f.Exec(c.cmd); err != nil {
			t.Fatal(err)
		}
		if err := f.RunSM("h1"); err != nil {
			t.Fatal(err)
		}
		step(c.name)
		if light.lastLight == nil || !light.lastLight.Changed {
			t.Errorf("%s: want a light sweep that sees the change, got %s", c.name, light.what(full))
		}
	}
}

// compareSweeps checks one sweep of both watches: the light watch
// reported the full one's events (fe, le), there were some when
// wantEvents, and when wantChange its light sweep saw the change and its
// fabric and routes are a full discovery's.
func compareSweeps(t *testing.T, name string, full, light *watchSide, dsts, fe, le []string, wantEvents, wantChange bool) {
	t.Helper()
	if !slices.Equal(fe, le) {
		t.Errorf("%s: light sweep reported\n%q\nfull sweep reported\n%q", name, le, fe)
	}
	if wantEvents && len(fe) == 0 {
		t.Errorf("%s: no event: the change does not test anything", name)
	}
	if wantChange {
		if light.lastLight != nil && !light.lastLight.Changed {
			t.Errorf("%s: the light sweep saw no change", name)
		}
		if a, b := fabricJSON(t, light.res), fabricJSON(t, full.res); a != b {
			t.Errorf("%s: the light watch's fabric differs from a full discovery's:\n%s", name, firstDiff(a, b))
		}
		if a, b := routesOf(light, dsts), routesOf(full, dsts); a != b {
			t.Errorf("%s: the light watch's routes\n%s\nthe full watch's\n%s", name, a, b)
		}
	}
	t.Logf("%s: %q (%s)", name, le, light.what(full))
}

// requireIncremental asserts that s's last sweep rediscovered
// incrementally.
func (s *watchSide) requireIncremental(t *testing.T, name string) {
	t.Helper()
	if s.lastIncr == nil {
		t.Errorf("%s: no incremental rediscovery (%s)", name, s.untrusted)
	}
}

// routesOf describes the route to each of dsts as a watch sees it: the
// ports it leaves through and the forwarding table entry of every switch
// it crosses, or why there is none.
func routesOf(s *watchSide, dsts []string) string {
	var b strings.Builder
	f := s.res.Fabric
	src, _, err := srcPort(f)
	if err != nil {
		return err.Error()
	}
	for _, d := range dsts {
		fmt.Fprintf(&b, "%s:", d)
		_, dlid, err := f.ResolveLID(d, nil)
		if err != nil {
			fmt.Fprintf(&b, " %v\n", err)
			continue
		}
		hops, dst, err := routing.Trace(f, s.tables, src.Phys, dlid)
		for _, h := range hops {
			fmt.Fprintf(&b, " %s(lft[%d]=%d)", pathav.PortName(h.Out), dlid, s.tables.Port(h.Out.Node, dlid))
		}
		if dst != nil {
			fmt.Fprintf(&b, " -> %s", pathav.PortName(dst))
		}
		if err != nil {
			fmt.Fprintf(&b, " error %v", err)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// pathTo is the directed route to the node described desc.
func pathTo(t *testing.T, f *model.Fabric, desc string) smp.DRPath {
	t.Helper()
	return nodeOf(t, f, desc).Path
}

// nodeOf is the node described desc.
func nodeOf(t *testing.T, f *model.Fabric, desc string) *model.Node {
	t.Helper()
	for _, n := range f.Nodes {
		if n.Description() == desc {
			return n
		}
	}
	t.Fatalf("no node %q", desc)
	return nil
}

// The fat trees of the idle-cost test and benchmark: the 2,144-node tree
// of docs/performance.md (64 leaves, 32 spines, 2,048 hosts) and a
// 324-node one.
const (
	tree2144 = "fattree:levels=2,radix=64"
	tree324  = "fattree:levels=2,radix=24"
)

// lastHost names each tree's last host (hosts come first, H0 is where the
// watch is attached).
var lastHost = map[string]string{tree2144: "H2047", tree324: "H287"}

// idleWatch is a light watch of two hosts, far apart, on a generated fat
// tree whose SM has run, after its first (full) sweep.
func idleWatch(tb testing.TB, spec string) (*sim.Fabric, *watchSide) {
	tb.Helper()
	f, err := sim.Generate(spec, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.RunSM("H0"); err != nil {
		tb.Fatal(err)
	}
	s := newSide(tb, f, true, []string{"H1", lastHost[spec]})
	if ev := s.sweep(tb); len(ev) != 2 || s.fulls != 1 {
		tb.Fatalf("first sweep: %d full, events %q", s.fulls, ev)
	}
	return f, s
}

// TestIdleLightSweepCost counts, through the transport, the SMPs of an
// idle light sweep on a generated fat tree: one SwitchInfo per switch
// plus the probes of the two watched routes, a constant (at most 13 per
// destination and the local port: a route across a two-level tree has
// four links).
func TestIdleLightSweepCost(t *testing.T) {
	spec := tree2144
	if testing.Short() {
		spec = tree324
	}
	_, s := idleWatch(t, spec)
	sws := len(s.res.Fabric.Switches())
	probes := len(s.w.Probes(s.tables, localPhys(s.res.Fabric)))
	before := s.tr.n.Load()
	if ev := s.sweep(t); len(ev) != 0 {
		t.Fatalf("idle sweep reported %q", ev)
	}
	n := s.tr.n.Load() - before
	if s.lastLight == nil || s.lastLight.Changed || s.fulls != 1 {
		t.Fatalf("idle sweep: want a light sweep seeing no change, got %+v (%d full)", s.lastLight, s.fulls)
	}
	const perRoute = 13
	if probes > 1+2*perRoute {
		t.Errorf("%d probes for two routes: want at most %d", probes, 1+2*perRoute)
	}
	if n != int64(sws+probes) || s.lastLight.SMPs != n {
		t.Errorf("idle light sweep sent %d SMPs (light sweep counted %d): want %d switches + %d probes", n, s.lastLight.SMPs, sws, probes)
	}
	t.Logf("%s: %d nodes, %d switches: idle light sweep %d SMPs", spec, len(s.res.Fabric.Nodes), sws, n)
}

// TestIncrementalSweepCost counts, through the transport, the SMPs of
// the sweep after one link off the watched routes went down, and after
// it came up again, on a generated fat tree: each must be an incremental
// rediscovery costing at most the idle light sweep, the changed leaf
// switch's neighbourhood (three SMPs a port), its own reads (NodeInfo,
// NodeDescription, SwitchInfo, and an ExtendedPortInfo a port: its
// PortInfo is the light sweep's), the new subtree's reads (four SMPs a
// node: one host coming up)
// and, on each watched route, one forwarding table block per switch and
// the PortInfo of every port (nine: four links and the source).
func TestIncrementalSweepCost(t *testing.T) {
	spec := tree2144
	if testing.Short() {
		spec = tree324
	}
	f, s := idleWatch(t, spec)
	idle := int64(len(s.res.Fabric.Switches()) + len(s.w.Probes(s.tables, localPhys(s.res.Fabric))))
	fullSMPs := s.lastSMPs
	leaf := nodeOf(t, s.res.Fabric, "H100").Port(1).Remote.Node
	ports := int64(leaf.NumPorts() + 1)
	const routes = 2 * (3 + 9) // two routes: three switches, nine ports each
	for _, c := range []struct {
		cmd      string
		newNodes int64
		probes   int64 // the ports left Initialize, read again
	}{{`Unlink "H100"[1]`, 0, 0}, {`ReLink "H100"[1]`, 1, 0}} {
		if err := f.Exec(c.cmd); err != nil {
			t.Fatal(err)
		}
		if ev := s.sweep(t); len(ev) != 0 {
			t.Fatalf("%s: reported %q", c.cmd, ev)
		}
		if s.lastIncr == nil {
			t.Fatalf("%s: no incremental rediscovery: %s", c.cmd, s.what(s))
		}
		bound := idle + c.probes + 3*ports + (3 + ports) + 4*c.newNodes + routes
		if s.lastSMPs > bound {
			t.Errorf("%s: %d SMPs: want at most %d (idle %d, a switch of %d ports, %d new nodes)", c.cmd, s.lastSMPs, bound, idle, ports, c.newNodes)
		}
		t.Logf("%s on %s: %d SMPs (bound %d; a full sweep %d: %.1f%%): %s", c.cmd, spec, s.lastSMPs, bound, fullSMPs,
			100*float64(s.lastSMPs)/float64(fullSMPs), s.what(s))
	}
}

// BenchmarkWatchSweep compares an idle light sweep with a full one (a
// discovery and every forwarding table) and with the sweep after one link
// off the watched routes changed (one-link: a light sweep, an
// incremental rediscovery and the watched routes' forwarding table
// blocks; the link goes down and up in turn) on the 2,144-node tree,
// watching two hosts, and reports the SMPs of each.
//
// The embedded simulator answers at once, so there the time is the
// tools' own CPU; with-latency runs the same sweeps through its latency
// model (1 µs a hop, 20 µs an SMA's service), where SMPs cost time as
// on a fabric.
func BenchmarkWatchSweep(b *testing.B) {
	for _, lat := range []string{"", "/with-latency"} {
		for _, kind := range []string{"full", "light", "one-link"} {
			b.Run(kind+lat, func(b *testing.B) { benchWatchSweep(b, kind, lat != "") })
		}
	}
}

func benchWatchSweep(b *testing.B, kind string, latency bool) {
	{
		{
			f, s := idleWatch(b, tree2144)
			if latency {
				if err := f.Exec("Latency hop=1us sma=20us"); err != nil {
					b.Fatal(err)
				}
			}
			s.light = kind != "full"
			before := s.tr.n.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if kind == "one-link" {
					b.StopTimer()
					cmd := `Unlink "H100"[1]`
					if i%2 == 1 {
						cmd = `ReLink "H100"[1]`
					}
					if err := f.Exec(cmd); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if ev := s.sweep(b); len(ev) != 0 {
					b.Fatalf("sweep reported %q", ev)
				}
				if kind == "one-link" && s.lastIncr == nil {
					b.Fatalf("no incremental rediscovery: %s", s.untrusted)
				}
			}
			b.StopTimer()
			if s.light && s.fulls != 1 {
				b.Fatalf("%d full sweeps while idle or one link changed", s.fulls-1)
			}
			b.ReportMetric(float64(s.tr.n.Load()-before)/float64(b.N), "SMPs/sweep")
			b.ReportMetric(float64(len(s.res.Fabric.Nodes)), "nodes")
		}
	}
}
