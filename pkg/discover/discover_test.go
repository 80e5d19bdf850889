package discover_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

const fabrics = "../../testdata/fabrics/"

// attach builds the embedded simulator from a file or generator spec
// and attaches at host.
func attach(t testing.TB, spec, host string) (*sim.Fabric, transport.Transport) {
	t.Helper()
	var f *sim.Fabric
	var err error
	if len(spec) > 8 && spec[:8] == "fattree:" {
		f, err = sim.Generate(spec, nil)
	} else {
		f, err = sim.Load(spec, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return f, tr
}

func discoverAll(t testing.TB, tr transport.Transport, cfg discover.Config) *discover.Result {
	t.Helper()
	res, err := discover.Discover(context.Background(), tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func topo(t testing.TB, f *model.Fabric) string {
	t.Helper()
	var b bytes.Buffer
	if err := topology.WriteTopology(&b, f, topology.Options{Generated: time.Unix(0, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDeterministic: the same fabric prints the same bytes whatever the
// window size.
func TestDeterministic(t *testing.T) {
	for _, spec := range []string{
		fabrics + "loop.net",
		fabrics + "parallel.net",
		fabrics + "dualhomed.net",
		fabrics + "mixed.net",
		"fattree:levels=2,radix=8",
		"fattree:levels=3,radix=4",
	} {
		t.Run(spec, func(t *testing.T) {
			_, tr := attach(t, spec, "")
			want := topo(t, discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 1}).Fabric)
			for _, o := range []int{2, 16, 64} {
				for run := 0; run < 3; run++ {
					res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: o})
					if got := topo(t, res.Fabric); got != want {
						t.Fatalf("-o %d run %d: topology differs from -o 1", o, run)
					}
					if res.Partial() {
						t.Fatalf("-o %d: partial: %v", o, res.Errors)
					}
				}
			}
		})
	}
}

// TestFatTreeComplete: a generated fat tree is found whole, every link
// once, with fewer SMPs than libibnetdisc's per-node cost.
func TestFatTreeComplete(t *testing.T) {
	const spec = "fattree:levels=2,radix=16"
	_, tr := attach(t, spec, "")
	// SMPs are counted: a fixed long timeout, so a busy machine adds no
	// retries (the simulator answers at once).
	res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 16, Timeout: peerTimeout, FixedTimeout: true})
	f := res.Fabric
	sw, ca := len(f.Switches()), len(f.CAs())
	// 2 levels, radix 16: 16 leaves with 8 hosts, 8 spines.
	if sw != 24 || ca != 128 {
		t.Fatalf("found %d switches, %d CAs; want 24, 128", sw, ca)
	}
	links := 0
	f.Links(func(a, b *model.PhysPort) { links++ })
	if want := 128 + 16*8; links != want {
		t.Errorf("links = %d, want %d", links, want)
	}
	// libibnetdisc: per switch NodeInfo+NodeDesc+SwitchInfo+PortInfo×(N+1),
	// per CA NodeInfo+NodeDesc+PortInfo, plus one NodeInfo for each
	// inter-switch link probed from the side that did not discover it.
	// Inter-switch probes: 2×128 directions less the 8 spines' and the 15
	// far leaves' entry ports; host probes: 128 from the leaves, less H0's
	// entry, plus H0's own probe; plus the start NodeInfo.
	libcost := int64(sw*(1+1+17) + ca*(1+1) + 1 + 128 + (2*16*8 - 8 - 15))
	if got := int64(res.IBNetDiscover.SMPs); got != libcost {
		t.Errorf("replayed libibnetdisc SMPs = %d, want %d", got, libcost)
	}
	if res.SMPs >= libcost {
		t.Errorf("SMPs = %d, libibnetdisc would send %d", res.SMPs, libcost)
	}
	t.Logf("%d nodes, %d SMPs (libibnetdisc ≈ %d)", len(f.Nodes), res.SMPs, libcost)
}

// TestHopLimitExact: -hops N -from P returns exactly the nodes within N
// hops of the node at P, in every run.
func TestHopLimitExact(t *testing.T) {
	cases := []struct {
		spec string
		host string
		from string
		hops int
	}{
		{fabrics + "chain10.net", "", "0,1,2,2", 2},
		{fabrics + "loop.net", "", "0,2", 1},
		{"fattree:levels=2,radix=8", "", "0,1,5", 2},
		{"fattree:levels=3,radix=4", "", "0,1,3", 2},
		{"fattree:levels=3,radix=4", "", "0,1", 3},
		{fabrics + "dualhomed.net", "", "0,2", 1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s from %s hops %d", c.spec, c.from, c.hops), func(t *testing.T) {
			_, tr := attach(t, c.spec, c.host)
			full := discoverAll(t, tr, discover.Config{MaxHops: -1})
			from, err := smp.ParseDRPath(c.from)
			if err != nil {
				t.Fatal(err)
			}
			start := nodeAtPath(t, full.Fabric, from)
			dist := discover.Distances(full.Fabric, start)
			want := map[uint64]bool{}
			for n, d := range dist {
				if d <= c.hops {
					want[n.GUID()] = true
				}
			}
			for run := 0; run < 20; run++ {
				res := discoverAll(t, tr, discover.Config{MaxHops: c.hops, From: from, Outstanding: 16})
				got := map[uint64]bool{}
				for _, n := range res.Fabric.Nodes {
					got[n.GUID()] = true
				}
				if len(got) != len(want) {
					t.Fatalf("run %d: %d nodes, want %d", run, len(got), len(want))
				}
				for g := range want {
					if !got[g] {
						t.Fatalf("run %d: node 0x%016x (within %d hops) missing", run, g, c.hops)
					}
				}
				if res.Fabric.From.GUID() != start.GUID() {
					t.Fatalf("start node 0x%x, want 0x%x", res.Fabric.From.GUID(), start.GUID())
				}
			}
		})
	}
}

// nodeAtPath follows a DR path through a discovered graph.
func nodeAtPath(t *testing.T, f *model.Fabric, p smp.DRPath) *model.Node {
	t.Helper()
	n := f.From
	for i := 1; i <= int(p.Len()); i++ {
		pp := n.Port(int(p.Port(i)))
		if pp == nil || pp.Remote == nil {
			t.Fatalf("path %s leaves the graph at hop %d", p, i)
		}
		n = pp.Remote.Node
	}
	return n
}

// TestMADPoolDrained: every MAD buffer is back in the pool after a
// discovery, faults included.
func TestMADPoolDrained(t *testing.T) {
	for _, spec := range []string{fabrics + "faults.net", "fattree:levels=2,radix=8"} {
		var pool model.MADPool
		_, tr := attach(t, spec, "")
		res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 8, Pool: &pool, Timeout: 50 * time.Millisecond})
		if n := pool.Outstanding(); n != 0 {
			t.Errorf("%s: %d MADs outstanding after discovery", spec, n)
		}
		if res.SMPs == 0 {
			t.Errorf("%s: no SMPs counted", spec)
		}
	}
}

// TestCancel: a cancelled discovery returns what it found, marked
// interrupted, and no error.
func TestCancel(t *testing.T) {
	_, tr := attach(t, "fattree:levels=2,radix=16", "")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1, Outstanding: 4, Progress: func(discover.Progress) {
		if n++; n == 20 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || !res.Partial() {
		t.Errorf("Interrupted=%v Partial=%v, want both", res.Interrupted, res.Partial())
	}
	if len(res.Fabric.Nodes) == 0 || len(res.Fabric.Nodes) >= 152 {
		t.Errorf("%d nodes after cancel", len(res.Fabric.Nodes))
	}
}

// TestStartUnreachable: a start path through nothing is an error
// wrapping ErrStart and, behind it, the cause: the transport's timeout.
func TestStartUnreachable(t *testing.T) {
	_, tr := attach(t, fabrics+"parallel.net", "")
	p, _ := smp.ParseDRPath("0,7")
	_, err := discover.Discover(context.Background(), tr, discover.Config{From: p, MaxHops: -1, Timeout: 20 * time.Millisecond, Retries: -1})
	if !errors.Is(err, discover.ErrStart) || !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("unreachable start node: %v; want an error wrapping ErrStart and transport.ErrTimeout", err)
	}
}

// TestStartCancelled: a discovery cancelled before the start node
// answered found nothing: an error wrapping ErrStart and context.Canceled.
func TestStartCancelled(t *testing.T) {
	_, tr := attach(t, fabrics+"parallel.net", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := discover.Discover(ctx, tr, discover.Config{})
	if !errors.Is(err, discover.ErrStart) || !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("cancelled before the start: %v (interrupted %v); want an error wrapping ErrStart and context.Canceled", err, res.Interrupted)
	}
}

func BenchmarkDiscoverFatTree(b *testing.B) {
	for _, spec := range []string{"fattree:levels=2,radix=32", "fattree:levels=3,radix=16"} {
		b.Run(spec, func(b *testing.B) {
			_, tr := attach(b, spec, "")
			b.ReportAllocs()
			var smps int64
			var nodes int
			for i := 0; i < b.N; i++ {
				res := discoverAll(b, tr, discover.Config{MaxHops: -1, Outstanding: 16})
				smps += res.SMPs
				nodes = len(res.Fabric.Nodes)
			}
			b.ReportMetric(float64(smps)/b.Elapsed().Seconds(), "SMPs/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(smps), "ns/SMP")
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
