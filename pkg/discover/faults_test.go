package discover_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// simSpec builds the embedded simulator from a generator spec (commands
// after ';' included) and returns it attached at host, with the truth:
// the fault-free net file.
// peerTimeout is the SMP timeout of tests whose simulator has no latency
// model: it answers at once or reports "no answer" at once, so a long
// timeout costs nothing, and a short one only makes a busy machine's
// scheduling delay look like a lost SMP (TestLinkFlap had 10 ms and no
// retries).
const peerTimeout = 10 * time.Second

func simSpec(t testing.TB, spec, host string, opt *sim.Options) (*sim.Fabric, transport.Transport, *netfile.Fabric) {
	t.Helper()
	f, err := sim.Generate(spec, opt)
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := strings.Cut(spec, ";")
	truth, err := netfile.Generate(base)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return f, tr, truth
}

// checkGraph asserts the graph invariants: links symmetric and between
// nodes of the fabric, ports where their number says, one node per GUID,
// every node reachable from the start over links, and (with truth) every
// link one that exists in the fault-free fabric, nodes named by their
// descriptions (which the generator makes unique).
func checkGraph(t testing.TB, f *model.Fabric, truth *netfile.Fabric) {
	t.Helper()
	checkGraphTwins(t, f, truth, nil)
}

// twinOf names, for a fabric with twins (nodes given another's GUID), the
// node each twin was taken for (by description): kept -> twin.
type twinOf map[string]string

// checkGraphTwins is checkGraph on a fabric with twins, as libibnetdisc
// leaves it: a link of a node may be one of its twin's (the twin's links
// move to it), a port may lie past its node's ports (a twin with more
// ports answered from it), and nodes whose links moved may be cut off.
// It returns how many links are a twin's.
func checkGraphTwins(t testing.TB, f *model.Fabric, truth *netfile.Fabric, twins twinOf) int {
	t.Helper()
	moved := 0
	// Nodes are named by description, or by GUID when it was not read.
	byGUID := map[uint64]int{}
	if truth != nil {
		for i := range truth.Nodes {
			byGUID[truth.Nodes[i].GUID] = i
		}
	}
	lookup := func(n *model.Node) (int, bool) {
		if d := n.Description(); d != "" {
			return truth.Lookup(d)
		}
		i, ok := byGUID[n.GUID()]
		return i, ok
	}
	in := make(map[*model.Node]bool, len(f.Nodes))
	for _, n := range f.Nodes {
		if in[n] {
			t.Fatalf("node %s listed twice", n.Description())
		}
		in[n] = true
		if f.NodeByGUID(n.GUID()) != n {
			t.Errorf("node %s: GUID 0x%x maps to another node", n.Description(), n.GUID())
		}
	}
	for _, n := range f.Nodes {
		for i, pp := range n.Ports {
			if pp == nil {
				continue
			}
			if pp.Node != n || int(pp.Num) != i {
				t.Fatalf("%s: port %d misplaced (%d)", n.Description(), i, pp.Num)
			}
			r := pp.Remote
			if r == nil {
				continue
			}
			if r.Remote != pp {
				t.Fatalf("half link: %s -> %s -> %v", pp, r, r.Remote)
			}
			if !in[r.Node] || r.Node.Port(int(r.Num)) != r && (twins == nil || int(r.Num) <= r.Node.NumPorts()) {
				t.Fatalf("link %s -> %s leaves the graph", pp, r)
			}
			if truth == nil {
				continue
			}
			a, ok := lookup(n)
			b, ok2 := lookup(r.Node)
			if !ok || !ok2 {
				t.Fatalf("link %s(%s) -> %s(%s): unknown node", pp, n.Description(), r, r.Node.Description())
			}
			tp := truth.Nodes[a].Ports[pp.Num]
			if int(tp.Remote) == b && tp.RemotePort == r.Num {
				continue
			}
			if tw, ok := twins[r.Node.Description()]; ok && tp.RemotePort == r.Num {
				if i, _ := truth.Lookup(tw); int(tp.Remote) == i {
					moved++ // a link of r.Node's twin
					continue
				}
			}
			if tw, ok := twins[n.Description()]; ok {
				if i, _ := truth.Lookup(tw); int(truth.Nodes[i].Ports[pp.Num].Remote) == b && truth.Nodes[i].Ports[pp.Num].RemotePort == r.Num {
					continue // (the other end of a twin's link)
				}
			}
			t.Errorf("link %s[%d] -> %s[%d] is not in the fabric (merged?)", n.Description(), pp.Num, r.Node.Description(), r.Num)
		}
	}
	if f.From != nil && twins == nil {
		if d := discover.Distances(f, f.From); len(d) != len(f.Nodes) {
			t.Errorf("%d of %d nodes reachable from the start", len(d), len(f.Nodes))
		}
	}
	return moved
}

func countLinks(f *model.Fabric) int {
	n := 0
	f.Links(func(a, b *model.PhysPort) { n++ })
	return n
}

// TestRandomDrops: with 10% of SMPs lost the engine still returns the
// fault-free topology byte for byte, and counts its retries.
func TestRandomDrops(t *testing.T) {
	const spec = "fattree:levels=3,radix=8"
	_, tr, truth := simSpec(t, spec, "", nil)
	want := topo(t, discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric)
	for _, o := range []int{1, 16} {
		for seed := uint64(1); seed <= 3; seed++ {
			f, tr, _ := simSpec(t, spec+";Drop 10", "", &sim.Options{Seed: seed})
			var pool model.MADPool
			// 8 retries: an SMP is lost for good with probability 1e-9.
			// A fixed, long timeout: the simulator reports a drop at once,
			// so every retry is a drop, never a busy machine's late answer
			// (the adaptive first-attempt timeout, 20 ms at least, is not
			// what this test is about).
			res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: o, Retries: 8, Pool: &pool, Timeout: peerTimeout, FixedTimeout: true})
			if got := topo(t, res.Fabric); got != want {
				t.Fatalf("-o %d seed %d: topology differs from the fault-free one", o, seed)
			}
			if res.Partial() || len(res.Problems) > 0 {
				t.Errorf("-o %d seed %d: partial %v, problems %v", o, seed, res.Errors, res.Problems)
			}
			drops := f.Stats().Drops
			if res.Retries != drops || drops == 0 {
				t.Errorf("-o %d seed %d: %d retries, %d drops", o, seed, res.Retries, drops)
			}
			if pool.Outstanding() != 0 {
				t.Errorf("%d MADs outstanding", pool.Outstanding())
			}
			checkGraph(t, res.Fabric, truth)
			t.Logf("-o %d seed %d: %d SMPs, %d retries (%.1f%%)", o, seed, res.SMPs, res.Retries, 100*float64(res.Retries)/float64(res.SMPs))
		}
	}
}

// TestDeadNode: a node that never answers is one SMP error, for its
// NodeInfo, on its DR path; everything else is found.
func TestDeadNode(t *testing.T) {
	const spec = "fattree:levels=2,radix=8"
	_, tr, truth := simSpec(t, spec, "", nil)
	full := discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric
	byDesc := map[string]*model.Node{}
	for _, n := range full.Nodes {
		byDesc[n.Description()] = n
	}
	for _, cmd := range []string{`Kill "H9"`, `Error "H9" 100`} {
		t.Run(cmd, func(t *testing.T) {
			_, tr, _ := simSpec(t, spec+";"+cmd, "", nil)
			var pool model.MADPool
			res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: peerTimeout, Pool: &pool})
			if len(res.Errors) != 1 {
				t.Fatalf("%d errors: %v", len(res.Errors), res.Errors)
			}
			e := res.Errors[0]
			if e.Attr != smp.AttrNodeInfo || e.Path != byDesc["H9"].Path || !errors.Is(e.Err, transport.ErrTimeout) {
				t.Errorf("error %v, want NodeInfo timeout at %s", e, byDesc["H9"].Path)
			}
			if !res.Partial() || res.Err != nil {
				t.Errorf("Partial %v Err %v", res.Partial(), res.Err)
			}
			if len(res.Fabric.Nodes) != len(full.Nodes)-1 || res.Fabric.NodeByGUID(byDesc["H9"].GUID()) != nil {
				t.Errorf("%d nodes, want all %d but H9", len(res.Fabric.Nodes), len(full.Nodes))
			}
			if countLinks(res.Fabric) != countLinks(full)-1 {
				t.Errorf("%d links, want %d", countLinks(res.Fabric), countLinks(full)-1)
			}
			checkGraph(t, res.Fabric, truth)
			if pool.Outstanding() != 0 {
				t.Errorf("%d MADs outstanding", pool.Outstanding())
			}
		})
	}
	// A dead spine (its SMA only): one error per leaf that reaches it, and
	// everything else complete, since Kill leaves forwarding alone.
	_, tr, _ = simSpec(t, spec+`;Kill "S2"`, "", nil)
	res := discoverAll(t, tr, discover.Config{MaxHops: -1, Timeout: peerTimeout})
	if len(res.Fabric.Nodes) != len(full.Nodes)-1 || len(res.Errors) != 8 {
		t.Errorf("dead spine: %d nodes (want %d), %d errors (want 8)", len(res.Fabric.Nodes), len(full.Nodes)-1, len(res.Errors))
	}
	checkGraph(t, res.Fabric, truth)
}

// TestLinkFlap: a link that goes down (and comes back) at any point of
// a discovery leaves a consistent graph: symmetric links, all of them
// real, every node reachable, and nothing lost but what hung on that link.
func TestLinkFlap(t *testing.T) {
	const spec = "fattree:levels=2,radix=8"
	_, tr, truth := simSpec(t, spec, "", nil)
	clean := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 1})
	total := clean.SMPs
	for _, flap := range []struct {
		name       string
		down, up   string
		mayLose    int
		mayLoseLnk int
	}{
		// Leaf L1's uplink to spine S1 (L1 port 6 = S1 port 2).
		{"uplink", `Unlink "L1"[6]`, `ReLink "L1"[6]`, 0, 1},
		// Host H9's only link.
		{"host", `Unlink "H9"[1]`, `ReLink "H9"[1]`, 1, 1},
	} {
		for _, o := range []int{1, 8} {
			for n := int64(0); n <= total; n += max(1, total/40) {
				t.Run(fmt.Sprintf("%s/o%d/after%d", flap.name, o, n), func(t *testing.T) {
					f, tr, _ := simSpec(t, spec, "", nil)
					f.AfterSMPs(uint64(n), func() error { return f.Exec(flap.down) })
					f.AfterSMPs(uint64(n+total/10), func() error { return f.Exec(flap.up) })
					var pool model.MADPool
					res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: o, Timeout: peerTimeout, Retries: -1, Pool: &pool})
					checkGraph(t, res.Fabric, truth)
					if lost := len(clean.Fabric.Nodes) - len(res.Fabric.Nodes); lost < 0 || lost > flap.mayLose {
						t.Errorf("%d nodes lost", lost)
					}
					if lost := countLinks(clean.Fabric) - countLinks(res.Fabric); lost < 0 || lost > flap.mayLoseLnk {
						t.Errorf("%d links lost", lost)
					}
					if pool.Outstanding() != 0 {
						t.Errorf("%d MADs outstanding", pool.Outstanding())
					}
					// A link the graph holds whose port later read as down is
					// flagged as a contradiction.
					res.Fabric.Links(func(a, b *model.PhysPort) {
						for _, p := range []*model.PhysPort{a, b} {
							if p.HasInfo && p.Info.PortPhysicalState != smp.PhysLinkUp && !hasProblem(res, discover.ProblemContradiction, "") {
								t.Errorf("%s linked but down, not reported", p)
							}
						}
					})
				})
			}
		}
	}
}

func hasProblem(res *discover.Result, kind, substr string) bool {
	for _, p := range res.Problems {
		if p.Kind == kind && strings.Contains(p.Msg, substr) {
			return true
		}
	}
	return false
}

// TestDuplicateGUIDs: two nodes with one GUID are reported with both DR
// paths, and the graph is the one libibnetdisc builds: the node reached
// first stands for both, the links libibnetdisc's NodeInfo answers make
// through its twin's ports move to it, and no other link changes.
func TestDuplicateGUIDs(t *testing.T) {
	const spec = "fattree:levels=2,radix=8"
	_, tr, truth := simSpec(t, spec, "", nil)
	full := discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric
	guid := func(desc string) uint64 {
		for _, n := range full.Nodes {
			if n.Description() == desc {
				return n.GUID()
			}
		}
		t.Fatalf("no %s", desc)
		return 0
	}
	for _, c := range []struct{ a, b string }{{"S0", "S3"}, {"L2", "L5"}, {"H3", "H12"}, {"L0", "S1"}} {
		for _, o := range []int{1, 16} {
			t.Run(fmt.Sprintf("%s=%s/o%d", c.b, c.a, o), func(t *testing.T) {
				_, tr, _ := simSpec(t, fmt.Sprintf("%s;Guid %q %#x", spec, c.b, guid(c.a)), "", nil)
				res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: o})
				// libibnetdisc moves the twin's links to the node
				// it takes the twin for (each NodeInfo answer links
				// the port it came through)
				if checkGraphTwins(t, res.Fabric, truth, twinOf{c.a: c.b}) == 0 {
					t.Error("no link of the twin moved to the node it was taken for")
				}
				var dup []discover.Problem
				for _, p := range res.Problems {
					if p.Kind == discover.ProblemDuplicateGUID {
						dup = append(dup, p)
					} else {
						t.Errorf("problem %s", p)
					}
				}
				if len(dup) == 0 {
					t.Fatal("duplicate GUID not reported")
				}
				kept := res.Fabric.NodeByGUID(guid(c.a))
				withKept := false
				for _, p := range dup {
					if len(p.Paths) != 2 || p.Paths[0] == p.Paths[1] {
						t.Errorf("problem %s: want two DR paths", p)
					}
					withKept = withKept || p.Paths[0] == kept.Path
				}
				if !withKept {
					t.Errorf("no problem names the kept node's path %s: %v", kept.Path, dup)
				}
			})
		}
	}
}

// TestInconsistentNodeInfo: a node whose NodeInfo answers change is
// reported as a contradiction, not as a duplicate, and not merged.
func TestInconsistentNodeInfo(t *testing.T) {
	const spec = "fattree:levels=2,radix=8"
	_, _, truth := simSpec(t, spec, "", nil)
	for _, field := range []string{"numports", "type", "portguid"} {
		for _, every := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", field, every), func(t *testing.T) {
				f, tr, _ := simSpec(t, fmt.Sprintf("%s;Inconsistent \"L3\" %s %d", spec, field, every), "", nil)
				res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 4, Timeout: peerTimeout})
				checkGraph(t, res.Fabric, truth)
				if f.Stats().Lies == 0 {
					t.Fatal("no lie told")
				}
				if !hasProblem(res, discover.ProblemContradiction, "answers change") {
					t.Errorf("no contradiction: %v", res.Problems)
				}
				if hasProblem(res, discover.ProblemDuplicateGUID, "") {
					t.Errorf("reported as duplicate: %v", res.Problems)
				}
			})
		}
	}
}

// hostile is a fabric that never ends: every port of every switch leads
// to a new switch, named by a hash of its DR path.
type hostile struct{ ports uint8 }

func (h hostile) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	copy(resp, req[:smp.MADSize])
	var m smp.MAD
	if err := m.UnmarshalBinary(req); err != nil {
		return err
	}
	path := m.Path()
	hs := fnv.New64a()
	for i := 1; i <= int(path.Len()); i++ {
		hs.Write([]byte{path.Port(i)})
	}
	hs.Write([]byte{path.Len()})
	guid := hs.Sum64() | 1<<62
	d := resp[smp.DataOffset : smp.DataOffset+smp.DataSize]
	clear(d)
	switch m.AttrID {
	case smp.AttrNodeInfo:
		ni := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeSwitch, NumPorts: h.ports,
			SystemImageGUID: guid, NodeGUID: guid, PortGUID: guid, LocalPortNum: 1}
		_ = ni.MarshalTo(d)
	case smp.AttrPortInfo:
		d[32], d[33] = 4, 5<<4 // Active, LinkUp
	case smp.AttrNodeDescription:
		copy(d, fmt.Sprintf("hostile %x", guid))
	}
	resp[3] = smp.MethodGetResp
	binary.BigEndian.PutUint16(resp[4:], 0x8000)
	return nil
}

func (hostile) Close() error { return nil }

// TestTooManyNodes: a fabric that keeps answering with new GUIDs stops at
// MaxNodes with ErrTooManyNodes, and what was found is kept.
func TestTooManyNodes(t *testing.T) {
	for _, max := range []int{1, 100, 5000} {
		var pool model.MADPool
		res, err := discover.Discover(context.Background(), hostile{ports: 36}, discover.Config{MaxHops: -1, MaxNodes: max, Pool: &pool, Outstanding: 16})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res.Err, discover.ErrTooManyNodes) || !res.Partial() {
			t.Errorf("max %d: Err %v", max, res.Err)
		}
		if n := len(res.Fabric.Nodes); n != max {
			t.Errorf("max %d: %d nodes", max, n)
		}
		// Reading a node costs 3+37 SMPs; probes go out one chunk at most
		// past the limit.
		if limit := int64(max*40 + 1024 + 1); res.SMPs > limit {
			t.Errorf("max %d: %d SMPs (bound %d)", max, res.SMPs, limit)
		}
		if pool.Outstanding() != 0 {
			t.Errorf("%d MADs outstanding", pool.Outstanding())
		}
		checkGraph(t, res.Fabric, nil)
	}
}

// TestLatencyWindow: under the latency model with a one-packet VL15
// buffer, discovery with 16 SMPs in flight completes: the retries absorb
// the VL15 drops. (Its drop count depends on the host's scheduling and
// is only logged; TestSiblingRuleNoVL15Drops asserts none on a virtual
// clock.)
func TestLatencyWindow(t *testing.T) {
	const spec = "fattree:levels=2,radix=8"
	_, tr, _ := simSpec(t, spec, "", nil)
	want := topo(t, discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric)
	f, tr, _ := simSpec(t, spec+";Latency hop=1us sma=20us vl15=1", "", nil)
	var pool model.MADPool
	res := discoverAll(t, tr, discover.Config{MaxHops: -1, Outstanding: 16, Timeout: 250 * time.Millisecond, Retries: 10, Pool: &pool})
	if got := topo(t, res.Fabric); got != want {
		t.Fatal("topology under the latency model differs")
	}
	if res.Partial() {
		t.Errorf("partial: %v", res.Errors)
	}
	if pool.Outstanding() != 0 {
		t.Errorf("%d MADs outstanding", pool.Outstanding())
	}
	t.Logf("%d SMPs, %d retries, %d VL15 drops", res.SMPs, res.Retries, f.Stats().BusyDrops)
}

// TestCancelUnderFaults: cancelling while SMPs wait in the latency model
// or are being dropped returns promptly, marked interrupted, with the
// pool drained.
func TestCancelUnderFaults(t *testing.T) {
	for _, spec := range []string{
		"fattree:levels=2,radix=8;Latency hop=1us sma=200us vl15=1",
		"fattree:levels=2,radix=8;Drop 50",
		`fattree:levels=2,radix=8;Kill "S0";Latency hop=1us sma=10us vl15=0`,
	} {
		_, tr, _ := simSpec(t, spec, "", nil)
		var pool model.MADPool
		var sent atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		// Cancel at the first SMP lost after the start node answered
		// (later ones wait out the hour) or at the 60th sent, whichever
		// comes first.
		tr = &onTimeout{Transport: tr, f: cancel}
		cfg := discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Hour, Pool: &pool, Sent: func() {
			if sent.Add(1) == 60 {
				cancel()
			}
		}}
		// An SMP waiting out its (hour-long) timeout must end with the
		// cancel: a discovery still running after a minute ignored it.
		var res *discover.Result
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err = discover.Discover(ctx, tr, cfg)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: discovery still running a minute after the cancel", spec)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if !res.Interrupted {
			t.Errorf("%s: not interrupted", spec)
		}
		if pool.Outstanding() != 0 {
			t.Errorf("%s: %d MADs outstanding", spec, pool.Outstanding())
		}
		checkGraph(t, res.Fabric, nil)
	}
}

// onTimeout calls f after every exchange that timed out once one was
// answered (the start node: a discovery is under way).
type onTimeout struct {
	transport.Transport
	f        func()
	answered atomic.Bool
}

func (o *onTimeout) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := o.Transport.Exchange(ctx, dlid, req, resp)
	switch {
	case err == nil:
		o.answered.Store(true)
	case errors.Is(err, transport.ErrTimeout) && o.answered.Load():
		o.f()
	}
	return err
}
