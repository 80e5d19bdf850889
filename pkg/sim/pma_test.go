package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// lidOf returns the LID of node id's port (0 for a switch).
func lidOf(t testing.TB, f *Fabric, id string, port int) uint16 {
	t.Helper()
	n, ok := f.ids[id]
	if !ok {
		t.Fatalf("no node %q", id)
	}
	if f.nodes[n].sw >= 0 {
		port = 0
	}
	return f.ports[f.portIndex(n, port)].lid
}

// gmp sends one PerfMgt request to lid and returns the response MAD.
func gmp(t testing.TB, tr transport.Transport, lid uint16, m pma.MAD) (pma.MAD, error) {
	t.Helper()
	req, _ := m.MarshalBinary()
	resp := make([]byte, pma.MADSize)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Exchange(ctx, lid, req, resp); err != nil {
		return pma.MAD{}, err
	}
	var r pma.MAD
	if err := r.UnmarshalBinary(resp); err != nil {
		t.Fatal(err)
	}
	return r, nil
}

func counters(t testing.TB, tr transport.Transport, lid uint16, sel uint8) pma.PortCounters {
	t.Helper()
	r, err := gmp(t, tr, lid, pma.NewGet(pma.AttrPortCounters, sel))
	if err != nil {
		t.Fatalf("PortCounters lid %d port %d: %v", lid, sel, err)
	}
	if r.Status != 0 || r.Method != pma.MethodGetResp {
		t.Fatalf("PortCounters lid %d port %d: status %#x method %#x", lid, sel, r.Status, r.Method)
	}
	var c pma.PortCounters
	c.UnmarshalBinary(r.Data[:])
	return c
}

func demoWithSM(t testing.TB) *Fabric {
	t.Helper()
	f := load(t, "demo")
	if err := f.RunSM("H-0c42a10300300100"); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPMAClassPortInfo(t *testing.T) {
	f := demoWithSM(t)
	ep := attach(t, f, "H-0c42a10300300100")
	for id, want := range map[string]uint16{"H-0c42a10300300200": 0x1200, "S-0c42a1030020a000": 0x1300} {
		r, err := gmp(t, ep, lidOf(t, f, id, 1), pma.NewGet(pma.AttrClassPortInfo, 0))
		if err != nil {
			t.Fatal(err)
		}
		var c pma.ClassPortInfo
		c.UnmarshalBinary(r.Data[:])
		if r.Status != 0 || c.CapabilityMask != want || c.RespTimeValue != 0x12 || c.BaseVersion != 1 {
			t.Errorf("%s: status %#x %+v", id, r.Status, c)
		}
		set := pma.NewGet(pma.AttrClassPortInfo, 0)
		set.Method = pma.MethodSet
		if r, err := gmp(t, ep, lidOf(t, f, id, 1), set); err != nil || r.Status != 0x0008 {
			t.Errorf("%s: ClassPortInfo Set: %v status %#x", id, err, r.Status)
		}
	}
}

// TestPMATraffic: every GMP that crosses a link moves both ends' packet
// counters by one and data counters by 72 dwords, as ibsim counts.
func TestPMATraffic(t *testing.T) {
	f := demoWithSM(t)
	ep := attach(t, f, "H-0c42a10300300100")
	lid := lidOf(t, f, "H-0c42a10300300100", 1) // our own port: no link crossed
	a := counters(t, ep, lid, 1)
	b := counters(t, ep, lid, 1)
	if a.PortXmitPkts != b.PortXmitPkts {
		t.Errorf("a GMP to ourselves moved our counters: %d -> %d", a.PortXmitPkts, b.PortXmitPkts)
	}
	peer := lidOf(t, f, "H-0c42a10300300200", 1) // same leaf: 2 links each way
	a = counters(t, ep, peer, 1)
	b = counters(t, ep, peer, 1)
	// The peer's port received one request and sent one response since a.
	if b.PortRcvPkts-a.PortRcvPkts != 1 || b.PortXmitPkts-a.PortXmitPkts != 1 {
		t.Errorf("peer counters moved rcv %d xmit %d, want 1 and 1", b.PortRcvPkts-a.PortRcvPkts, b.PortXmitPkts-a.PortXmitPkts)
	}
	if b.PortXmitData != 72*b.PortXmitPkts || b.PortRcvData != 72*b.PortRcvPkts {
		t.Errorf("data %d/%d for %d/%d packets", b.PortXmitData, b.PortRcvData, b.PortXmitPkts, b.PortRcvPkts)
	}
	r, err := gmp(t, ep, peer, pma.NewGet(pma.AttrPortCountersExtended, 1))
	if err != nil || r.Status != 0 {
		t.Fatalf("extended: %v %#x", err, r.Status)
	}
	var x pma.PortCountersExtended
	x.UnmarshalBinary(r.Data[:])
	if x.PortRcvPkts != uint64(b.PortRcvPkts)+1 || x.PortXmitData != 72*x.PortXmitPkts {
		t.Errorf("extended %+v after %+v", x, b)
	}
}

func TestPMAPerformanceSetAndSelect(t *testing.T) {
	f := demoWithSM(t)
	for _, cmd := range []string{
		`PerformanceSet "S-0c42a1030020a000"[1] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "S-0c42a1030020a000"[37] PortCounters.PortXmitDiscards=5`,
		`PerformanceSet "S-0c42a1030020a000"[38] portcounters.linkdownedcounter=300`, // clipped to 255
		`PerformanceSet "H-0c42a10300300200"[1] PortCounters.PortXmitWait=1234`,
		`PerformanceSet "H-0c42a10300300200"[1] PortCounters.LocalLinkIntegrityErrors=3`,
		`PerformanceSet "H-0c42a10300300200"[1] PortCountersExtended.PortUnicastXmitPkts=77`,
	} {
		if err := f.Exec(cmd); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	for _, bad := range []string{
		`PerformanceSet "H-0c42a10300300200"[0] PortCounters.PortXmitWait=1`,
		`PerformanceSet "H-0c42a10300300200"[1] PortCounters.NoSuchField=1`,
		`PerformanceSet "H-0c42a10300300200"[1] PortCounters.PortXmitWait=x`,
		`PerformanceSet "nope"[1] PortCounters.PortXmitWait=1`,
	} {
		if err := f.Exec(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	ep := attach(t, f, "H-0c42a10300300100")
	sw := lidOf(t, f, "S-0c42a1030020a000", 0)
	if c := counters(t, ep, sw, 1); c.SymbolErrorCounter != 12 {
		t.Errorf("port 1: %+v", c)
	}
	all := counters(t, ep, sw, pma.AllPorts)
	if all.PortSelect != pma.AllPorts || all.SymbolErrorCounter != 12 || all.PortXmitDiscards != 5 || all.LinkDownedCounter != 255 {
		t.Errorf("all ports: %+v", all)
	}
	ca := lidOf(t, f, "H-0c42a10300300200", 1)
	if c := counters(t, ep, ca, 1); c.PortXmitWait != 1234 || c.LocalLinkIntegrityErrors != 3 {
		t.Errorf("CA: %+v", c)
	}
	// A CA answers only for the port the GMP came in by.
	for _, sel := range []uint8{2, pma.AllPorts} {
		if r, err := gmp(t, ep, ca, pma.NewGet(pma.AttrPortCounters, sel)); err != nil || r.Status != 0x001c {
			t.Errorf("CA PortSelect %d: %v status %#x", sel, err, r.Status)
		}
	}
	if r, err := gmp(t, ep, sw, pma.NewGet(pma.AttrPortCounters, 41)); err != nil || r.Status != 0x001c {
		t.Errorf("switch PortSelect 41: %v status %#x", err, r.Status)
	}
	// Clearing: a Set with a CounterSelect resets only the selected ones.
	if r, err := gmp(t, ep, ca, pma.NewClear(1, pma.SelectLocalLinkInteg)); err != nil || r.Status != 0 {
		t.Fatalf("clear: %v %#x", err, r.Status)
	}
	if c := counters(t, ep, ca, 1); c.PortXmitWait != 1234 || c.LocalLinkIntegrityErrors != 0 {
		t.Errorf("after clearing LocalLinkIntegrityErrors: %+v", c)
	}
	if r, err := gmp(t, ep, ca, pma.NewClear(1, pma.SelectXmitWait|pma.SelectXmitPkts)); err != nil || r.Status != 0 {
		t.Fatalf("clear: %v %#x", err, r.Status)
	}
	if c := counters(t, ep, ca, 1); c.PortXmitWait != 0 || c.PortXmitPkts != 1 {
		t.Errorf("after clearing PortXmitWait and PortXmitPkts: %+v", c)
	}
	// Read-only: the Set never leaves.
	if _, err := gmp(t, transport.ReadOnly(ep), ca, pma.NewClear(1, pma.SelectAllErrors)); !errors.Is(err, transport.ErrReadOnly) {
		t.Errorf("read-only clear: %v", err)
	}
}

// TestPMAErrorDrops: a port that drops what enters it (console Error with
// no attribute) counts PortRcvErrors, the sender PortXmitPkts, as ibsim.
func TestPMAErrorDrops(t *testing.T) {
	f := demoWithSM(t)
	ep := attach(t, f, "H-0c42a10300300100")
	leaf := lidOf(t, f, "S-0c42a1030020a000", 0)
	before := counters(t, ep, leaf, 1) // leaf01 port 1 faces node001
	if err := f.Exec(`Error "S-0c42a1030020a000"[1] 100`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := gmp(t, ep, leaf, pma.NewGet(pma.AttrPortCounters, 1)); !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("through a dropping port: %v", err)
		}
	}
	if err := f.Exec(`Error "S-0c42a1030020a000"[1] 0`); err != nil {
		t.Fatal(err)
	}
	after := counters(t, ep, leaf, 1)
	if d := after.PortRcvErrors - before.PortRcvErrors; d != 3 {
		t.Errorf("PortRcvErrors moved by %d, want 3", d)
	}
	me := counters(t, ep, lidOf(t, f, "H-0c42a10300300100", 1), 1)
	if me.PortXmitPkts == 0 || me.PortRcvErrors != 0 {
		t.Errorf("sender: %+v", me)
	}
}

func TestPMANetFilePerformanceSet(t *testing.T) {
	nf, err := netfile.Parse("pma.net", []byte(`
Switch	4 "sw"
[1]	"h1"[1]
[2]	"h2"[1]

Ca	1 "h1"
[1]	"sw"[1]

Ca	1 "h2"
[1]	"sw"[2]
do PerformanceSet "sw"[2] PortCounters.PortRcvRemotePhysicalErrors=9
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(nf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM("h1"); err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "h1")
	if c := counters(t, ep, lidOf(t, f, "sw", 0), 2); c.PortRcvRemotePhysicalErrors != 9 {
		t.Errorf("%+v", c)
	}
	for _, bad := range []string{
		`do PerformanceSet "sw"[9] PortCounters.PortXmitWait=1`,
		`do PerformanceSet "sw"[1] PortCounters.Bogus=1`,
		`do PerformanceSet "sw" PortCounters.PortXmitWait=1`,
	} {
		if _, err := netfile.Parse("bad.net", []byte("Switch\t4 \"sw\"\n\n"+bad+"\n")); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}

// TestPMACountersSurviveRelink: what a port received is kept when its
// link goes down and comes back, and counting goes on from there.
func TestPMACountersSurviveRelink(t *testing.T) {
	f := demoWithSM(t)
	ep := attach(t, f, "H-0c42a10300300100")
	leafPort := f.portIndex(f.ids["S-0c42a1030020a000"], 1) // faces node001
	hostPort := f.portIndex(f.ids["H-0c42a10300300100"], 1)
	get := func() {
		t.Helper()
		m := smp.NewGet(path(t, "0,1"), smp.AttrNodeInfo, 0)
		req, _ := m.MarshalBinary()
		if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, make([]byte, 256)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p int32) (uint64, uint64) {
		f.mu.RLock()
		defer f.mu.RUnlock()
		s := f.snap(p)
		return s.traffic[tcRcvPkts], s.traffic[tcXmitPkts]
	}
	get()
	rx0, tx0 := read(leafPort)
	get()
	if rx, tx := read(leafPort); rx != rx0+1 || tx != tx0+1 {
		t.Fatalf("one DR Get: rx %d->%d tx %d->%d", rx0, rx, tx0, tx)
	}
	hrx, htx := read(hostPort)
	if err := f.Exec(`Unlink "H-0c42a10300300100"[1]`); err != nil {
		t.Fatal(err)
	}
	if rx, tx := read(leafPort); rx != rx0+1 || tx != tx0+1 {
		t.Errorf("after Unlink: rx %d tx %d, want %d %d", rx, tx, rx0+1, tx0+1)
	}
	if err := f.Exec(`ReLink "H-0c42a10300300100"[1]`); err != nil {
		t.Fatal(err)
	}
	get()
	if rx, tx := read(leafPort); rx != rx0+2 || tx != tx0+2 {
		t.Errorf("after ReLink and a Get: rx %d tx %d, want %d %d", rx, tx, rx0+2, tx0+2)
	}
	if rx, tx := read(hostPort); rx != hrx+1 || tx != htx+1 {
		t.Errorf("host after ReLink and a Get: rx %d tx %d, want %d %d", rx, tx, hrx+1, htx+1)
	}
}
