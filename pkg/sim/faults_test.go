package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

func nodeInfo(t testing.TB, ep *Endpoint, p string) smp.NodeInfo {
	t.Helper()
	r := mustGet(t, ep, p, smp.AttrNodeInfo, 0)
	var ni smp.NodeInfo
	if err := ni.UnmarshalBinary(r.Data[:]); err != nil {
		t.Fatal(err)
	}
	return ni
}

func isTimeout(err error) bool { return errors.Is(err, transport.ErrTimeout) }

// TestErrorRateSeeded: Error's random drops follow the seed (same seed,
// same drops) and come near the asked percentage.
func TestErrorRateSeeded(t *testing.T) {
	run := func(seed uint64) []bool {
		f, err := Load(fabricPath("loop"), &Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Exec(`Error "sw2" 30 17`); err != nil {
			t.Fatal(err)
		}
		ep := attach(t, f, "h1")
		var out []bool
		for i := 0; i < 2000; i++ {
			_, err := get(t, ep, "0,1,2", smp.AttrNodeInfo, 0)
			out = append(out, err != nil)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	drops, same := 0, true
	for i := range a {
		if a[i] {
			drops++
		}
		same = same && a[i] == c[i]
		if a[i] != b[i] {
			t.Fatalf("seed 7 differs between runs at SMP %d", i)
		}
	}
	if same {
		t.Error("seeds 7 and 8 drop the same SMPs")
	}
	if drops < 500 || drops > 700 {
		t.Errorf("%d of 2000 dropped at 30%%", drops)
	}
}

func TestKillRevive(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "H0")
	// H0 -> L0 (port 1), L0 port 3 -> S0, S0 port 2 -> L1, L1 port 1 -> H2.
	if err := f.Exec(`Kill "S0"`); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, ep, "0,1,3", smp.AttrNodeInfo, 0); !isTimeout(err) {
		t.Errorf("dead S0 answered: %v", err)
	}
	// A dead switch still forwards.
	if ni := nodeInfo(t, ep, "0,1,3,2,1"); ni.NodeGUID != 0x100004 {
		t.Errorf("through dead S0: GUID %#x", ni.NodeGUID)
	}
	if f.Stats().Drops != 1 {
		t.Errorf("stats %+v", f.Stats())
	}
	if err := f.Revive("S0"); err != nil {
		t.Fatal(err)
	}
	nodeInfo(t, ep, "0,1,3")
	if err := f.Kill("nope"); !errors.Is(err, ErrNoNode) {
		t.Errorf("Kill unknown: %v", err)
	}
	// Error 100 on every port kills transit too (ibsim's dead node).
	_ = f.Exec(`Error "S0" 100`)
	if _, err := get(t, ep, "0,1,3,2,1", smp.AttrNodeInfo, 0); !isTimeout(err) {
		t.Errorf("through Error 100 S0: %v", err)
	}
}

func TestDropRate(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4;Drop 10", &Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "")
	lost := 0
	for i := 0; i < 5000; i++ {
		if _, err := get(t, ep, "0,1,3,2,1", smp.AttrNodeInfo, 0); err != nil {
			lost++
		}
	}
	// Once per SMP, not per hop: about 10% on a 4-hop path.
	if lost < 400 || lost > 600 {
		t.Errorf("%d of 5000 lost at Drop 10", lost)
	}
	if err := f.Exec("Drop 0"); err != nil {
		t.Fatal(err)
	}
	nodeInfo(t, ep, "0,1,3,2,1")
	if err := f.Exec("Drop 101"); !errors.Is(err, ErrBadCommand) {
		t.Errorf("Drop 101: %v", err)
	}
}

func TestInconsistent(t *testing.T) {
	cases := []struct {
		field string
		check func(good, bad smp.NodeInfo) bool
	}{
		{"numports", func(g, b smp.NodeInfo) bool { return b.NumPorts == g.NumPorts+1 && b.NodeGUID == g.NodeGUID }},
		{"type", func(g, b smp.NodeInfo) bool { return g.NodeType == smp.NodeSwitch && b.NodeType == smp.NodeCA }},
		{"portguid", func(g, b smp.NodeInfo) bool { return b.PortGUID == g.PortGUID^1<<47 }},
		{"guid", func(g, b smp.NodeInfo) bool { return b.NodeGUID == g.NodeGUID^1<<40 }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			f := load(t, "loop")
			ep := attach(t, f, "h1")
			good := nodeInfo(t, ep, "0,1")
			if err := f.Exec(`Inconsistent "sw1" ` + c.field + ` 2`); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 6; i++ {
				ni := nodeInfo(t, ep, "0,1")
				if lie := i%2 == 0; lie != c.check(good, ni) || !lie && ni != good {
					t.Fatalf("answer %d: %+v (lie expected %v)", i, ni, lie)
				}
			}
			if f.Stats().Lies != 3 {
				t.Errorf("lies %d", f.Stats().Lies)
			}
			// Other attributes do not lie; none clears.
			portInfo(t, ep, "0,1", 1)
			_ = f.Exec(`Inconsistent "sw1" none`)
			for i := 0; i < 3; i++ {
				if ni := nodeInfo(t, ep, "0,1"); ni != good {
					t.Fatalf("after none: %+v", ni)
				}
			}
		})
	}
}

func TestDuplicateGUIDs(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "dup.net")
	text := "Switch 4 \"sw1\"\n[1] \"h1\"[1]\n[2] \"h2\"[1]\n\ncaguid=0x100000\nHca 1 \"h1\"\n[1] \"sw1\"[1]\n\ncaguid=0x100000\nHca 1 \"h2\"\n[1] \"sw1\"[2]\n"
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(name, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate GUIDs without the option: %v", err)
	}
	f, err := Load(name, &Options{AllowDuplicateGUIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "sw1")
	a, b := nodeInfo(t, ep, "0,1"), nodeInfo(t, ep, "0,2")
	if a.NodeGUID != 0x100000 || b.NodeGUID != 0x100000 {
		t.Errorf("GUIDs %#x %#x", a.NodeGUID, b.NodeGUID)
	}
	// New refuses duplicates it is given unless allowed.
	nf, _ := netfile.Generate("fattree:levels=2,radix=4")
	nf.Nodes[1].GUID = nf.Nodes[0].GUID
	if _, err := New(nf, nil); !errors.Is(err, ErrDuplicateGUID) {
		t.Errorf("New with duplicates: %v", err)
	}
	// A Guid command may always make one.
	g, err := Generate(`fattree:levels=2,radix=4;Guid "S1" 0x200004`, nil)
	if err != nil {
		t.Fatal(err)
	}
	ep = attach(t, g, "")
	if x, y := nodeInfo(t, ep, "0,1,3"), nodeInfo(t, ep, "0,1,4"); x.NodeGUID != y.NodeGUID {
		t.Errorf("S0 %#x S1 %#x", x.NodeGUID, y.NodeGUID)
	}
}

// TestAfterSMPs: a command scheduled after n SMPs runs exactly before
// SMP n+1, from the net file or from a test.
func TestAfterSMPs(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "flap.net")
	text := "Switch 4 \"sw1\"\n[1] \"h1\"[1]\n[2] \"h2\"[1]\n\nHca 1 \"h1\"\n[1] \"sw1\"[1]\n\nHca 1 \"h2\"\n[1] \"sw1\"[2]\n\ndo After 3 Unlink \"h2\"\ndo After 5 ReLink \"h2\"\n"
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "h1")
	var got []bool
	for i := 0; i < 7; i++ {
		_, err := get(t, ep, "0,1,2", smp.AttrNodeInfo, 0)
		got = append(got, err == nil)
	}
	want := []bool{true, true, true, false, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answers %v, want %v", got, want)
		}
	}
	var fired int
	f.AfterSMPs(2, func() error { fired++; return errors.New("boom") })
	nodeInfo(t, ep, "0,1")
	nodeInfo(t, ep, "0,1")
	if fired != 0 {
		t.Fatal("fired early")
	}
	nodeInfo(t, ep, "0,1")
	if fired != 1 || len(f.ScheduleErrors()) != 1 {
		t.Errorf("fired %d, errors %v", fired, f.ScheduleErrors())
	}
}

func TestAt(t *testing.T) {
	f := load(t, "loop")
	ep := attach(t, f, "")
	nodeInfo(t, ep, "0,1") // alive before the timer is set, not racing it
	if err := f.Exec(`At 20ms Kill "h1"`); err != nil {
		t.Fatal(err)
	}
	// Poll for the condition (the timer fires on its own goroutine);
	// a minute is a hang, not a slow machine.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := get(t, ep, "0,1", smp.AttrNodeInfo, 0); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("At did not fire")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.AfterTime(time.Hour, func() error { t.Error("stopped timer fired"); return nil })
	f.StopSchedule()
}

func TestFaultCommandsParse(t *testing.T) {
	f := load(t, "loop")
	for _, c := range []struct {
		cmd string
		ok  bool
	}{
		{`Drop 5`, true},
		{`Drop`, false},
		{`Kill "sw1"`, true},
		{`Kill "zz"`, false},
		{`Inconsistent "sw1" numports`, true},
		{`Inconsistent "sw1" colour 2`, false},
		{`Inconsistent "sw1" type 0`, false},
		{`Latency hop=1us sma=2us vl15=1`, true},
		{`Latency hop=0 sma=0`, true},
		{`Latency "sw1" sma=1ms`, true},
		{`Latency "sw1" hop=1ms`, false},
		{`Latency speed=3`, false},
		{`After 10 Kill "sw1"`, true},
		{`After 0 Kill "sw1"`, false},
		{`After x Kill "sw1"`, false},
		{`At 1h Revive "sw1"`, true},
		{`At soon Revive "sw1"`, false},
	} {
		err := f.Exec(c.cmd)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.cmd, err)
		}
	}
	f.StopSchedule()
	if f.Latency() != nil {
		t.Errorf("hop=0 sma=0 left %+v", f.Latency())
	}
}

// TestLatencyModel: answers never come before the modelled time, the
// one-packet VL15 buffer drops an SMP that arrives while the SMA is busy,
// a deeper buffer queues it, deadlines and cancels end a wait. No upper
// bound on a duration: a busy machine only makes answers later, and how
// fast the model runs is BenchmarkWindow's business (pkg/discover). The
// lower bounds cannot fail under load: the model sleeps until the
// modelled time on the monotonic clock.
func TestLatencyModel(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", &Options{Latency: &Latency{Hop: 100 * time.Microsecond, SMA: 2 * time.Millisecond, VL15: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ep := attach(t, f, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := smp.NewGet(path(t, "0,1,3"), smp.AttrNodeInfo, 0)
	req, _ := m.MarshalBinary()
	resp := make([]byte, 256)
	start := time.Now()
	if err := ep.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	// 2 hops each way and 2 ms of service.
	if d := time.Since(start); d < 2400*time.Microsecond {
		t.Errorf("one SMP took %v, want at least 2.4ms", d)
	}
	// Two at the other spine, one after the other: the first holds its
	// SMA for an hour (its requester gives up at its deadline, the SMA
	// does not), so the second finds the one-packet buffer full and is
	// lost. Sequential, so the order cannot depend on the scheduler.
	m2 := smp.NewGet(path(t, "0,1,4"), smp.AttrNodeInfo, 0)
	req2, _ := m2.MarshalBinary()
	if err := ep.Exchange(ctx, smp.PermissiveLID, req2, resp); err != nil {
		t.Fatal(err)
	}
	if err := f.SetServiceTime("S1", time.Hour); err != nil {
		t.Fatal(err)
	}
	drops := f.Stats().BusyDrops
	errs := make([]error, 2)
	for i := range errs {
		c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		errs[i] = ep.Exchange(c, smp.PermissiveLID, req2, make([]byte, 256))
		cancel()
	}
	if !isTimeout(errs[0]) || !isTimeout(errs[1]) || f.Stats().BusyDrops != drops+1 {
		t.Errorf("two SMPs at a busy one-packet SMA: %v, %v, %d busy drops (want 1)", errs[0], errs[1], f.Stats().BusyDrops-drops)
	}
	// With a deeper buffer two at once are both served, one after the
	// other (if one comes late it waits less but arrives later).
	_ = f.Exec("Latency vl15=2")
	var wg sync.WaitGroup
	start = time.Now()
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := make([]byte, 256)
			errs[i] = ep.Exchange(ctx, smp.PermissiveLID, req, r)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("vl15=2: %v %v", errs[0], errs[1])
	}
	if d := time.Since(start); d < 4400*time.Microsecond {
		t.Errorf("two queued SMPs took %v, want ≥ 4.4ms", d)
	}
	// A slow node times out against a short deadline.
	_ = f.SetServiceTime("S0", time.Hour)
	short, c2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer c2()
	if err := ep.Exchange(short, smp.PermissiveLID, req, resp); !isTimeout(err) {
		t.Errorf("slow SMA: %v", err)
	}
	_ = f.Exec(`Latency "S0" sma=0`)
	_ = f.Exec(`Kill "S0"`)
	// A dead node never answers: the wait ends with the cancel (before
	// or during the Exchange, both end in context.Canceled), long before
	// the hour-long deadline; a minute means it was ignored.
	cctx, c3 := context.WithCancel(context.Background())
	long, c4 := context.WithTimeout(cctx, time.Hour)
	defer c4()
	done := make(chan error, 1)
	go func() { done <- ep.Exchange(long, smp.PermissiveLID, req, resp) }()
	c3()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled wait: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cancel did not end the wait for a dead node")
	}
	_ = f.SetLatency(nil)
	if _, err := get(t, ep, "0,1,3", smp.AttrNodeInfo, 0); !isTimeout(err) {
		t.Errorf("dead without latency: %v", err)
	}
}

// BenchmarkExchangeFaults measures Exchange with node faults installed
// elsewhere in the fabric (the map lookup on the path).
func BenchmarkExchangeFaults(b *testing.B) {
	f, err := Generate(`fattree:levels=3,radix=16;Kill "C0"`, nil)
	if err != nil {
		b.Fatal(err)
	}
	ep, _ := f.AttachEndpoint("")
	gm := smp.NewGet(path(b, "0,1,9,9,2,1"), smp.AttrPortInfo, 3)
	req, _ := gm.MarshalBinary()
	resp := make([]byte, 256)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEndpointLimits: without the latency model an endpoint states a
// window (its SMPs are answered at once, in the caller's goroutine);
// with it, none.
func TestEndpointLimits(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := attach(t, f, "")
	defer tr.Close()
	if got := transport.LimitsOf(tr); got.Window != syncWindow || !got.Immediate {
		t.Errorf("without the latency model: window %d, immediate %v; want %d, true", got.Window, got.Immediate, syncWindow)
	}
	if err := f.SetLatency(&Latency{Hop: time.Microsecond, SMA: time.Microsecond, VL15: 1}); err != nil {
		t.Fatal(err)
	}
	if got := transport.LimitsOf(tr); got.Window != 0 || got.Immediate {
		t.Errorf("with the latency model: window %d, immediate %v; want none, false", got.Window, got.Immediate)
	}
}
