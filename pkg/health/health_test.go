package health_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

const fabrics = "../../testdata/fabrics/"

// ring5 is a ring of five switches, one host each: min-hop routes every
// host two switches away clockwise, so the routes' channel dependencies
// close the ring (a credit loop).
const ring5 = `
Switch 3 "r0"
[1] "r1"[2]
[2] "r4"[1]
[3] "h0"[1]

Switch 3 "r1"
[1] "r2"[2]
[2] "r0"[1]
[3] "h1"[1]

Switch 3 "r2"
[1] "r3"[2]
[2] "r1"[1]
[3] "h2"[1]

Switch 3 "r3"
[1] "r4"[2]
[2] "r2"[1]
[3] "h3"[1]

Switch 3 "r4"
[1] "r0"[2]
[2] "r3"[1]
[3] "h4"[1]

Hca 1 "h0"
[1] "r0"[3]
Hca 1 "h1"
[1] "r1"[3]
Hca 1 "h2"
[1] "r2"[3]
Hca 1 "h3"
[1] "r3"[3]
Hca 1 "h4"
[1] "r4"[3]
`

// live is a simulated fabric, its SM run (or not), discovered.
type live struct {
	sim *sim.Fabric
	in  health.Input
}

func loadSim(t *testing.T, spec string, sm bool, faults ...func(*sim.Fabric) error) *live {
	t.Helper()
	if strings.Contains(spec, "\n") {
		p := filepath.Join(t.TempDir(), "f.net")
		if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		spec = p
	}
	sf, err := sim.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sm {
		if err := sf.RunSM(""); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range faults {
		if err := f(sf); err != nil {
			t.Fatal(err)
		}
	}
	l := &live{sim: sf}
	l.discover(t)
	return l
}

func (l *live) discover(t *testing.T) {
	t.Helper()
	tr, err := l.sim.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := &discover.Querier{Transport: tr, Timeout: 200 * time.Millisecond}
	l.in = health.Input{Result: res, Querier: q}
	l.in.Counters.Transport = tr
	l.in.Counters.Timeout = 200 * time.Millisecond
}

func run(t *testing.T, in health.Input, checks ...string) *health.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := health.Run(ctx, in, checks)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run took more than 60 s")
	}
	return rep
}

func status(t *testing.T, rep *health.Report, check string) health.CheckResult {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == check {
			return c
		}
	}
	t.Fatalf("check %s did not run", check)
	return health.CheckResult{}
}

// kinds lists the kinds of the check's findings.
func kinds(rep *health.Report, check string) map[string]int {
	out := map[string]int{}
	for _, f := range rep.Findings {
		if f.Check == check {
			out[f.Kind]++
		}
	}
	return out
}

func wantStatus(t *testing.T, rep *health.Report, check string, want health.Status) {
	t.Helper()
	c := status(t, rep, check)
	if c.Status != want {
		var fs []string
		for _, f := range rep.Findings {
			if f.Check == check {
				fs = append(fs, f.Kind+": "+f.Place.String()+": "+f.Message)
			}
		}
		t.Fatalf("%s: status %s (%s %v), want %s; findings:\n%s", check, c.Status, c.Reason, c.Where, want, strings.Join(fs, "\n"))
	}
}

// TestCleanFabric: every check passes on a fat tree an SM routed.
func TestCleanFabric(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	rep := run(t, l.in, health.CheckLinks, health.CheckIDs, health.CheckMTUVL, health.CheckCounters, health.CheckRoutes, health.CheckCreditLoops)
	for _, c := range rep.Checks {
		wantStatus(t, rep, c.Name, health.Passed)
	}
	if rep.Partial || rep.Problems() != 0 || rep.NothingChecked() {
		t.Fatalf("partial %v, problems %d, nothing %v", rep.Partial, rep.Problems(), rep.NothingChecked())
	}
}

// TestSMEmbedded: the embedded simulator's SM sets MasterSMLID but no
// port advertises IsSM or answers SMInfo: as a fabric whose SM is gone
// (no-sm), unless the caller says why no SMInfo can answer (nothing to
// check, never passed).
func TestSMEmbedded(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	rep := run(t, l.in, health.CheckSM)
	wantStatus(t, rep, health.CheckSM, health.Failed)
	if f := rep.Findings[0]; f.Kind != health.KindNoSM || len(f.Evidence) != 1 || !strings.Contains(f.Evidence[0], "name LID 1 as their SM's") {
		t.Fatalf("finding %+v", f)
	}
	in := l.in
	in.NoSMInfo = "the embedded SM answers no SMInfo"
	rep = run(t, in, health.CheckSM)
	wantStatus(t, rep, health.CheckSM, health.Nothing)
	if rep.Partial {
		t.Fatal("partial")
	}
}

// TestCreditLoops: min-hop on a ring of five switches has a credit loop,
// the five switch-to-switch channels one way round; a fat tree and a
// chain have none.
func TestCreditLoops(t *testing.T) {
	rep := run(t, loadSim(t, ring5, true).in, health.CheckCreditLoops)
	wantStatus(t, rep, health.CheckCreditLoops, health.Failed)
	f := rep.Findings[0]
	if f.Kind != health.KindCreditLoop || f.Severity != health.Critical || len(f.Evidence) != 6 || !strings.Contains(f.Evidence[5], "one VL") {
		t.Fatalf("finding %+v, want one credit loop of 5 channels, on one VL", f)
	}
	// each dependency with the routes that make it (the graph is first
	// built without them, and again for a loop found)
	for _, e := range f.Evidence[:5] {
		if !strings.Contains(e, ": routes to LID ") {
			t.Errorf("evidence %q: no route named", e)
		}
	}
	// with the embedded SA: every PathRecord has SL 0, every SLtoVL
	// table maps SL 0 to VL 0: the loop is on VL 0
	l := loadSim(t, ring5, true)
	ctx := context.Background()
	smLID, err := sa.MasterSMLID(ctx, l.in.Counters.Transport, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.in.SA, err = sa.NewClient(l.in.Counters.Transport, smLID); err != nil {
		t.Fatal(err)
	}
	rep = run(t, l.in, health.CheckCreditLoops)
	wantStatus(t, rep, health.CheckCreditLoops, health.Failed)
	if f := rep.Findings[0]; !strings.Contains(f.Message, "on its VLs") || !strings.Contains(f.Message, "] VL0 -> ") || !strings.Contains(f.Evidence[0], "on SL 0") {
		t.Fatalf("finding %+v, want a loop on VL 0", f)
	}
	for _, spec := range []string{"fattree2.net", "chain10.net"} {
		rep := run(t, loadSim(t, fabrics+spec, true).in, health.CheckCreditLoops)
		wantStatus(t, rep, health.CheckCreditLoops, health.Passed)
	}
}

// TestRoutes: a switch-to-switch link unplugged after the SM ran leaves
// routes into a port with no link.
func TestRoutes(t *testing.T) {
	l := loadSim(t, ring5, true, func(f *sim.Fabric) error { return f.Unlink("r0", 1) })
	rep := run(t, l.in, health.CheckRoutes)
	wantStatus(t, rep, health.CheckRoutes, health.Failed)
	if kinds(rep, health.CheckRoutes)["down-port"] == 0 {
		t.Fatalf("kinds %v, want down-port", kinds(rep, health.CheckRoutes))
	}
}

// TestNoSM: with no SM, the ports are stuck in Initialize (links fails),
// and the checks that need LIDs or tables have nothing to check or
// cannot run: never passed.
func TestNoSM(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", false)
	rep := run(t, l.in, health.CheckLinks, health.CheckIDs, health.CheckMTUVL, health.CheckSM, health.CheckCounters, health.CheckRoutes, health.CheckCreditLoops)
	wantStatus(t, rep, health.CheckLinks, health.Failed)
	wantStatus(t, rep, health.CheckSM, health.Failed)
	if kinds(rep, health.CheckSM)[health.KindNoSM] != 1 {
		t.Fatalf("sm kinds %v, want one no-sm", kinds(rep, health.CheckSM))
	}
	if kinds(rep, health.CheckLinks)[health.KindStuck] == 0 {
		t.Fatalf("no stuck ports: %v", kinds(rep, health.CheckLinks))
	}
	for _, c := range []string{health.CheckMTUVL, health.CheckRoutes, health.CheckCreditLoops} {
		wantStatus(t, rep, c, health.Nothing)
	}
	wantStatus(t, rep, health.CheckCounters, health.NotRun)
}

// TestLinksDegraded: a link running 1x between two 4x ports.
func TestLinksDegraded(t *testing.T) {
	rep := run(t, loadSim(t, fabrics+"dualhomed.net", true).in, health.CheckLinks)
	wantStatus(t, rep, health.CheckLinks, health.Failed)
	if kinds(rep, health.CheckLinks)[health.KindWidth] == 0 {
		t.Fatalf("kinds %v, want width", kinds(rep, health.CheckLinks))
	}
}

// TestIDs: two ports given one LID, and a node GUID given twice.
func TestIDs(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	rep := run(t, l.in, health.CheckIDs)
	wantStatus(t, rep, health.CheckIDs, health.Passed)

	h := l.in.Result.Fabric.CAs()
	lid := h[0].Ports[1].BaseLID()
	dup := loadSim(t, fabrics+"fattree2.net", true, func(f *sim.Fabric) error {
		return f.SetBaseLID(h[1].Description(), 1, lid, 0)
	})
	rep = run(t, dup.in, health.CheckIDs)
	wantStatus(t, rep, health.CheckIDs, health.Failed)
	if kinds(rep, health.CheckIDs)[health.KindDuplicateLID] != 1 {
		t.Fatalf("kinds %v, want one duplicate-lid", kinds(rep, health.CheckIDs))
	}

	// a range of four LIDs holding two other ports' LIDs: LID 203's
	// overlap is not with the range just before it (201); LID 210 is
	// clear. Each overlap found once.
	ranges := loadSim(t, fabrics+"fattree2.net", true, func(f *sim.Fabric) error {
		for _, s := range []struct {
			host int
			lid  uint16
			lmc  int
		}{{1, 200, 2}, {2, 201, 0}, {3, 203, 0}, {4, 210, 0}} {
			if err := f.SetBaseLID(h[s.host].Description(), 1, s.lid, s.lmc); err != nil {
				return err
			}
		}
		return nil
	})
	rep = run(t, ranges.in, health.CheckIDs)
	var over []string
	for _, f := range rep.Findings {
		if f.Kind == health.KindDuplicateLID {
			over = append(over, f.Message)
		}
	}
	if want := []string{"LIDs 201-201 overlap LIDs 200-203 of another port", "LIDs 203-203 overlap LIDs 200-203 of another port"}; !slices.Equal(over, want) {
		t.Fatalf("overlaps %q, want %q", over, want)
	}

	guid := loadSim(t, fabrics+"fattree2.net", true, func(f *sim.Fabric) error {
		return f.SetNodeGUID(h[1].Description(), h[0].GUID())
	})
	rep = run(t, guid.in, health.CheckIDs)
	wantStatus(t, rep, health.CheckIDs, health.Failed)
	if kinds(rep, health.CheckIDs)[health.KindDuplicateGUID] == 0 {
		t.Fatalf("kinds %v, want duplicate-guid", kinds(rep, health.CheckIDs))
	}
}

// TestMTUVL: an end running a NeighborMTU other than the SM's link MTU.
func TestMTUVL(t *testing.T) {
	l := loadSim(t, fabrics+"ext.net", true)
	rep := run(t, l.in, health.CheckMTUVL)
	wantStatus(t, rep, health.CheckMTUVL, health.Passed)
	// the caps differ on ext.net: information, not a problem
	if kinds(rep, health.CheckMTUVL)["mtu-cap"] == 0 {
		t.Fatalf("kinds %v, want mtu-cap information", kinds(rep, health.CheckMTUVL))
	}
	pp := l.in.Result.Fabric.CAs()[0].Ports[1]
	pp.Info.NeighborMTU = smp.MTU256
	rep = run(t, l.in, health.CheckMTUVL)
	wantStatus(t, rep, health.CheckMTUVL, health.Failed)
	if kinds(rep, health.CheckMTUVL)["neighbor-mtu"] == 0 {
		t.Fatalf("kinds %v, want neighbor-mtu", kinds(rep, health.CheckMTUVL))
	}
}

// TestCounters: symbol errors raised on a port are beyond the default
// threshold (0).
func TestCounters(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true, func(f *sim.Fabric) error {
		return f.PerformanceSet("H0", 1, "PortCounters", "SymbolErrorCounter", 7)
	})
	rep := run(t, l.in, health.CheckCounters)
	wantStatus(t, rep, health.CheckCounters, health.Failed)
	f := rep.Findings[0]
	if f.Kind != health.KindCounter || !strings.Contains(strings.Join(f.Evidence, ";"), "SymbolErrorCounter 7") {
		t.Fatalf("finding %+v", f)
	}
}

// TestBaseline: a link unplugged since the baseline was taken.
func TestBaseline(t *testing.T) {
	base := loadSim(t, fabrics+"fattree2.net", true)
	l := loadSim(t, fabrics+"fattree2.net", true, func(f *sim.Fabric) error { return f.Unlink("H0", 1) })
	in := l.in
	in.Baseline = base.in.Result.Fabric
	rep := run(t, in, health.CheckBaseline)
	wantStatus(t, rep, health.CheckBaseline, health.Failed)
	if k := kinds(rep, health.CheckBaseline); k[health.KindRemoved] == 0 {
		t.Fatalf("kinds %v, want removed", k)
	}
	in.Baseline = l.in.Result.Fabric
	rep = run(t, in, health.CheckBaseline)
	wantStatus(t, rep, health.CheckBaseline, health.Passed)
}

// TestNotLive: a loaded cache (no Querier) cannot have its routes,
// credit loops or counters checked: not run, and the report partial.
func TestNotLive(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	in := l.in
	in.Querier = nil
	rep := run(t, in, health.CheckRoutes, health.CheckCreditLoops, health.CheckCounters, health.CheckBaseline)
	for _, c := range rep.Checks {
		wantStatus(t, rep, c.Name, health.NotRun)
	}
	if !rep.Partial || !rep.NothingChecked() {
		t.Fatalf("partial %v nothing %v, want both", rep.Partial, rep.NothingChecked())
	}
}

func TestParseChecks(t *testing.T) {
	got, err := health.ParseChecks("routes,links", "")
	if err != nil || strings.Join(got, ",") != "links,routes" {
		t.Fatalf("got %v %v", got, err)
	}
	got, err = health.ParseChecks("", "counters,baseline")
	if err != nil || strings.Join(got, ",") != "links,ids,mtu-vl,sm,routes,credit-loops" {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := health.ParseChecks("link", ""); err == nil {
		t.Fatal("unknown check accepted")
	}
}

// TestLinkStates: one end of a link Down (or Polling) while the other is
// up, and a port left in Armed, as a port's PortInfo would read them
// (the simulators keep both ends of a link in one state, so the fault is
// put in the discovered PortInfo).
func TestLinkStates(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	wantStatus(t, run(t, l.in, health.CheckLinks), health.CheckLinks, health.Passed)
	h := l.in.Result.Fabric.CAs()
	h[0].Ports[1].Info.PortState = smp.PortStateDown
	h[0].Ports[1].Info.PortPhysicalState = smp.PhysPolling
	h[1].Ports[1].Info.PortState = smp.PortStateArmed
	rep := run(t, l.in, health.CheckLinks)
	wantStatus(t, rep, health.CheckLinks, health.Failed)
	k := kinds(rep, health.CheckLinks)
	if k[health.KindStateMismatch] != 1 || k[health.KindStuck] != 1 {
		t.Fatalf("kinds %v, want one state-mismatch and one stuck", k)
	}
	for _, f := range rep.Findings {
		if f.Kind == health.KindStateMismatch && (f.Peer == nil || f.Evidence[0] != "PortState Down, PhysicalState Polling here, PortState Active, PhysicalState LinkUp at the peer") {
			t.Errorf("state-mismatch %+v", f)
		}
	}
}

// TestIDsLIDs: an active port without a LID, a CA port with another LMC
// than the rest, and a base LID not aligned to its LMC.
func TestIDsLIDs(t *testing.T) {
	l := loadSim(t, fabrics+"fattree2.net", true)
	h := l.in.Result.Fabric.CAs()
	h[0].Ports[1].Info.LID = 0
	rep := run(t, l.in, health.CheckIDs)
	if k := kinds(rep, health.CheckIDs); k[health.KindNoLID] != 1 || len(k) != 1 {
		t.Fatalf("kinds %v, want one lid-0", k)
	}
	l = loadSim(t, fabrics+"fattree2.net", true)
	h = l.in.Result.Fabric.CAs()
	h[2].Ports[1].Info.LMC = 1 // on an odd LID: not aligned, and overlapping the next
	h[2].Ports[1].Info.LID |= 1
	rep = run(t, l.in, health.CheckIDs)
	k := kinds(rep, health.CheckIDs)
	if k[health.KindLMC] != 2 {
		t.Fatalf("kinds %v, want two lmc (alignment, disagreement)", k)
	}
}

// TestLinksSpeed: mixed.net's links run EDR, FDR10 (Mellanox
// ExtendedPortInfo) and HDR as both ends allow (clean); an EDR link run
// at FDR and an FDR10 link run at QDR (the ExtendedPortInfo's FDR10 bit
// cleared on both ends) are below what both ends are enabled for.
func TestLinksSpeed(t *testing.T) {
	l := loadSim(t, fabrics+"mixed.net", true)
	wantStatus(t, run(t, l.in, health.CheckLinks), health.CheckLinks, health.Passed)
	f := l.in.Result.Fabric
	link := func(desc string) (*model.PhysPort, *model.PhysPort) {
		for _, n := range f.CAs() {
			if strings.HasPrefix(n.Description(), desc) {
				p := n.Ports[1]
				return p, p.Remote
			}
		}
		t.Fatalf("no CA %q", desc)
		return nil, nil
	}
	a, b := link("hostA")
	a.Info.LinkSpeedExtActive, b.Info.LinkSpeedExtActive = smp.ExtSpeedFDR, smp.ExtSpeedFDR
	c, d := link("hostC")
	if !c.FDR10() || !d.FDR10() {
		t.Fatal("hostC's link does not run FDR10")
	}
	c.ExtInfo[15] &^= smp.MlnxSpeedFDR10
	d.ExtInfo[15] &^= smp.MlnxSpeedFDR10
	rep := run(t, l.in, health.CheckLinks)
	var msgs []string
	for _, f := range rep.Findings {
		if f.Kind == health.KindSpeed {
			msgs = append(msgs, f.Message)
		}
	}
	want := []string{"link runs FDR, both ends are enabled for EDR (degraded link)", "link runs QDR, both ends are enabled for FDR10 (degraded link)"}
	slices.Sort(msgs)
	if !slices.Equal(msgs, want) {
		t.Fatalf("speed findings %q, want %q", msgs, want)
	}
}
