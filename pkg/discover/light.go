package discover

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Probe is one read a light sweep makes beyond the switches' SwitchInfo:
// attribute Attr/Mod of the node at the end of Path, whose answer Same
// must accept.
type Probe struct {
	Path smp.DRPath
	Attr uint16
	Mod  uint32
	// Same says whether the answer (64 bytes) is what was discovered.
	Same func(got []byte) bool
	// What names the probe in LightResult.Why.
	What string
	// Node, when set, is the node read: an answer not accepted makes it
	// changed (LightResult.Dirty), to be read again by Rediscover.
	Node *model.Node
}

// PortInfoProbe is a probe of pp's PortInfo: it accepts a PortInfo equal
// to the one discovered, the key violation counters and LocalPortNum
// (which depends on the route) aside.
func PortInfoProbe(pp *model.PhysPort) Probe {
	want := pp.Info
	return Probe{Path: pp.Node.Path, Attr: smp.AttrPortInfo, Mod: uint32(pp.Num), Node: pp.Node,
		What: fmt.Sprintf("PortInfo of %s port %d", pp.Node.Description(), pp.Num),
		Same: func(got []byte) bool { return samePortInfo(&want, got) }}
}

// NodeInfoProbe is a probe of n's NodeInfo: it accepts the node's GUID,
// type and number of ports.
func NodeInfoProbe(n *model.Node) Probe {
	want := n.Info
	return Probe{Path: n.Path, Attr: smp.AttrNodeInfo, Node: n,
		What: fmt.Sprintf("NodeInfo of %s", n.Description()),
		Same: func(got []byte) bool {
			var ni smp.NodeInfo
			return ni.UnmarshalBinary(got) == nil && ni.NodeGUID == want.NodeGUID &&
				ni.NodeType == want.NodeType && ni.NumPorts == want.NumPorts
		}}
}

// BytesProbe is a probe whose answer must begin with want (a forwarding
// table block, say).
func BytesProbe(path smp.DRPath, attr uint16, mod uint32, want []byte, what string) Probe {
	w := bytes.Clone(want)
	return Probe{Path: path, Attr: attr, Mod: mod, What: what,
		Same: func(got []byte) bool { return len(got) >= len(w) && bytes.Equal(got[:len(w)], w) }}
}

// samePortInfo compares a PortInfo as discovered with one read again.
func samePortInfo(want *smp.PortInfo, got []byte) bool {
	var pi smp.PortInfo
	if pi.UnmarshalBinary(got) != nil {
		return false
	}
	a := *want
	a.MKeyViolations, a.PKeyViolations, a.QKeyViolations, a.LocalPortNum = 0, 0, 0, 0
	pi.MKeyViolations, pi.PKeyViolations, pi.QKeyViolations, pi.LocalPortNum = 0, 0, 0, 0
	return a == pi
}

// LightResult is what a light sweep found.
type LightResult struct {
	// Changed: the fabric no longer answers as discovered; Why says the
	// first difference seen.
	Changed bool
	Why     string
	// Marked is the number of switches whose PortStateChange bit was set.
	Marked int
	// Dirty is the number of nodes whose answers changed or could not be
	// checked, Cut the number of ports whose link changed or could not be
	// checked (see Rediscover).
	Dirty, Cut int
	// SMPs is the number of SMPs the light sweep sent.
	SMPs int64

	fabric *model.Fabric
	dirty  map[*model.Node]bool
	cut    map[*model.PhysPort]bool
	// swInfo holds the SwitchInfo read from each switch found unchanged,
	// portInfo the PortInfo read from the ports of each neighbourhood
	// read, along the node's path.
	swInfo   map[*model.Node][]byte
	portInfo map[nodePort][]byte
	// untrusted says why what was read cannot tell what changed (the
	// local port's link, say): a full discovery must say.
	untrusted string
}

// nodePort names port num of a node.
type nodePort struct {
	n   *model.Node
	num uint8
}

// ChangedNode reports whether the light sweep found n (a node of the fabric
// swept) changed: Rediscover reads it again.
func (r *LightResult) ChangedNode(n *model.Node) bool { return r.dirty[n] }

// LightSweep reads what tells whether f, a fabric discovered before
// (complete: a partial one should be discovered again), changed, with
// workers SMPs at most in flight through q, and what changed: the nodes
// whose answers differ and the links that changed, for Rediscover. Its
// error is a fatal transport error or ctx's; SMPs that fail are recorded
// by q and make a change.
//
// A light sweep, as OpenSM's, tells whether a fabric discovered before
// still answers as it did, for about one SMP per switch; a caller then
// rediscovers only when it does not, and only what changed. It reads,
// with SubnGet only:
//
//  1. every switch's SwitchInfo. A SwitchInfo that differs from the one
//     discovered (the PortStateChange bit aside), or does not answer,
//     is a change of that switch. A set PortStateChange bit marks the
//     switch: the bit is set by the switch when one of its ports changes
//     state and cleared only by a Set (the SM's), so a set bit says
//     "maybe changed since the SM last looked", not "changed since we
//     last looked". Reading never clears it.
//  2. the probes the caller gives (Probe: say, every port and forwarding
//     table block on a watched route; one node's one after the other, as
//     an SMA serves one SMP at a time), and the PortInfo of every port
//     discovered Initialize or Armed (one an SM is bringing up: the bit
//     it sets may be cleared before we look): an answer the probe does
//     not accept, or none, is a change (of Probe.Node, when set).
//  3. for every marked switch and every node changed so far, its
//     neighbourhood: the PortInfo of each of its ports, and through each
//     port linked when discovered the NodeInfo (GUID, port entered) and
//     PortInfo of the port at the far end. A PortInfo that differs is a
//     change of its node; a port that is down, does not answer, or leads
//     to another node or port than discovered is a changed link (cut),
//     as is a port not linked when discovered that now differs. A node
//     whose SwitchInfo or probe did not answer is not read again: every
//     port of it is cut. A marked switch where nothing differs is
//     unchanged for this sweep only (a bit no SM clears marks the switch
//     again at the next sweep).
//
// So an idle sweep of a fabric whose SM clears PortStateChange costs
// one SMP per switch plus the probes; a changed switch costs three SMPs
// per port more. What a light sweep cannot see: a change that sets no
// switch's bit, changes no SwitchInfo and touches no probe (a width
// renegotiated without a state change, a node that stops answering), and
// a state change whose bit the SM set and cleared between two light
// sweeps. A caller that must see those runs a full discovery now and then
// (ibavtrack watch --full-interval).
//
// Without an SM clearing the bits every switch stays marked, and a light
// sweep reads every switch port and its peer: no saving, and nothing
// missed but what none of those reads shows (a NodeDescription, say).
func LightSweep(ctx context.Context, q *Querier, f *model.Fabric, probes []Probe, workers int) (*LightResult, error) {
	start := q.SMPs()
	res := &LightResult{fabric: f, dirty: make(map[*model.Node]bool), cut: make(map[*model.PhysPort]bool),
		swInfo: make(map[*model.Node][]byte), portInfo: make(map[nodePort][]byte)}
	var mu sync.Mutex
	change := func(why string) {
		mu.Lock()
		if !res.Changed {
			res.Changed, res.Why = true, why
		}
		mu.Unlock()
	}
	dirty := func(n *model.Node, why string) {
		change(why)
		mu.Lock()
		res.dirty[n] = true
		mu.Unlock()
	}
	// gone holds the nodes that did not answer along their path: their
	// neighbourhood is not read (it would not answer either), every port
	// of theirs is cut.
	gone := make(map[*model.Node]bool)
	silent := func(n *model.Node, why string) {
		dirty(n, why)
		mu.Lock()
		gone[n] = true
		mu.Unlock()
	}
	cut := func(pp *model.PhysPort, why string) {
		change(why)
		mu.Lock()
		res.dirty[pp.Node] = true
		res.cut[pp] = true
		mu.Unlock()
	}
	// get reads one attribute; a failure other than a stop is a change
	// (fail says of what), and get reports whether it answered.
	get := func(ctx context.Context, path smp.DRPath, attr uint16, mod uint32, out []byte, what string, fail func(string)) (bool, error) {
		if err := q.Get(ctx, path, attr, mod, out); err != nil {
			if IsStop(err) {
				return false, err
			}
			fail(what + ": " + err.Error())
			return false, nil
		}
		return true, nil
	}
	workers = max(workers, 1)
	finish := func(err error) (*LightResult, error) {
		res.SMPs = q.SMPs() - start
		res.Dirty, res.Cut = len(res.dirty), len(res.cut)
		if local := f.From; local != nil {
			if pp := local.Port(int(f.FromPort)); pp == nil || res.cut[pp] {
				res.untrusted = "the local port's link changed"
			}
		}
		return res, err
	}

	sws := f.Switches()
	marked := make([]bool, len(sws))
	err := Parallel(ctx, workers, len(sws), func(ctx context.Context, i int) error {
		sw := sws[i]
		var b [smp.DataSize]byte
		what := "SwitchInfo of " + sw.Description()
		if ok, err := get(ctx, sw.Path, smp.AttrSwitchInfo, 0, b[:], what, func(why string) { silent(sw, why) }); !ok {
			return err
		}
		fresh := b
		want := sw.RawSwitchInfo()
		marked[i] = b[11]&0x04 != 0
		b[11] &^= 0x04
		want[11] &^= 0x04
		if !sw.HasSwitchInfo || b != want {
			dirty(sw, what+" differs")
			return nil
		}
		mu.Lock()
		res.swInfo[sw] = fresh[:]
		mu.Unlock()
		return nil
	})
	if err != nil {
		return finish(err)
	}
	// A port discovered Initialize or Armed is one an SM is bringing up:
	// the bit its switch sets may be cleared again before we look.
	for _, n := range f.Nodes {
		for _, pp := range n.Ports {
			if pp != nil && pp.HasInfo && (pp.Info.PortState == 2 || pp.Info.PortState == 3) {
				probes = append(probes[:len(probes):len(probes)], PortInfoProbe(pp))
			}
		}
	}
	// One node's probes go one after the other: an SMA serves one SMP
	// at a time, and drops one that arrives while it is busy.
	var groups [][]*Probe
	byPath := make(map[smp.DRPath]int)
	for i := range probes {
		p := &probes[i]
		g, ok := byPath[p.Path]
		if !ok {
			g = len(groups)
			byPath[p.Path] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], p)
	}
	err = Parallel(ctx, workers, len(groups), func(ctx context.Context, i int) error {
		for _, p := range groups[i] {
			fail, failGet := change, change
			if p.Node != nil {
				fail = func(why string) { dirty(p.Node, why) }
				failGet = func(why string) { silent(p.Node, why) }
			}
			var b [smp.DataSize]byte
			ok, err := get(ctx, p.Path, p.Attr, p.Mod, b[:], p.What, failGet)
			if err != nil {
				return err
			}
			if ok && !p.Same(b[:]) {
				fail(p.What + " differs")
			}
		}
		return nil
	})
	if err != nil {
		return finish(err)
	}
	var work []*model.Node
	for i, m := range marked {
		if m && !res.dirty[sws[i]] {
			work = append(work, sws[i])
		}
	}
	res.Marked = len(work)
	for _, n := range f.Nodes { // (in discovery order: the same reads every run)
		if res.dirty[n] {
			work = append(work, n)
			if n.IsSwitch() {
				mu.Lock()
				delete(res.swInfo, n)
				mu.Unlock()
			}
		}
	}
	err = Parallel(ctx, workers, len(work), func(ctx context.Context, i int) error {
		if n := work[i]; gone[n] {
			for _, pp := range n.Ports {
				if pp != nil {
					cut(pp, n.Description()+" does not answer")
				}
			}
			return nil
		}
		return lightNeighbourhood(ctx, work[i], get, dirty, cut, func(n *model.Node, num int, b []byte) {
			mu.Lock()
			res.portInfo[nodePort{n, uint8(num)}] = bytes.Clone(b)
			mu.Unlock()
		})
	})
	return finish(err)
}

// lightNeighbourhood reads a node's ports and their peers.
func lightNeighbourhood(ctx context.Context, n *model.Node, get func(context.Context, smp.DRPath, uint16, uint32, []byte, string, func(string)) (bool, error), dirty func(*model.Node, string), cut func(*model.PhysPort, string), keep func(*model.Node, int, []byte)) error {
	var b [smp.DataSize]byte
	first := 0
	if !n.IsSwitch() {
		first = 1
	}
	for num := first; num <= n.NumPorts(); num++ {
		pp := n.Port(num)
		what := fmt.Sprintf("PortInfo of %s port %d", n.Description(), num)
		ok, err := get(ctx, n.Path, smp.AttrPortInfo, uint32(num), b[:], what, func(why string) { dirty(n, why) })
		if err != nil {
			return err
		}
		if !ok {
			// The node no longer answers along its path: nothing of it
			// can be trusted.
			for _, pp := range n.Ports {
				if pp != nil {
					cut(pp, what+" does not answer")
				}
			}
			return nil
		}
		keep(n, num, b[:])
		var pi smp.PortInfo
		if pi.UnmarshalBinary(b[:]) != nil {
			dirty(n, what+" undecodable")
			if pp != nil {
				cut(pp, what+" undecodable")
			}
			continue
		}
		if pp == nil || !pp.HasInfo || !samePortInfo(&pp.Info, b[:]) {
			dirty(n, what+" differs")
			if pp != nil && pp.Remote == nil && num != 0 {
				cut(pp, what+" differs (a port not linked when discovered)")
			}
		}
		if pp == nil || num == 0 || pp.Remote == nil {
			continue
		}
		r := pp.Remote
		if pi.PortState <= 1 || pi.PortPhysicalState != 5 {
			cut(pp, what+" is down")
			continue
		}
		path, err := n.Path.Extend(uint8(num))
		if err != nil {
			cut(pp, what+": "+err.Error())
			continue
		}
		peer := fmt.Sprintf("the node behind %s port %d", n.Description(), num)
		cutPP := func(why string) { cut(pp, why) }
		if ok, err := get(ctx, path, smp.AttrNodeInfo, 0, b[:], "NodeInfo of "+peer, cutPP); !ok {
			if err != nil {
				return err
			}
			continue
		}
		var ni smp.NodeInfo
		if ni.UnmarshalBinary(b[:]) != nil || ni.NodeGUID != r.Node.GUID() || ni.LocalPortNum != r.Num ||
			ni.NumPorts != r.Node.Info.NumPorts || ni.NodeType != r.Node.Type() {
			cut(pp, "NodeInfo of "+peer+" differs")
			continue
		}
		if ok, err := get(ctx, path, smp.AttrPortInfo, uint32(r.Num), b[:], "PortInfo of "+peer, cutPP); !ok {
			if err != nil {
				return err
			}
			continue
		}
		if !r.HasInfo || !samePortInfo(&r.Info, b[:]) {
			dirty(r.Node, "PortInfo of "+peer+" differs")
		}
	}
	return nil
}
