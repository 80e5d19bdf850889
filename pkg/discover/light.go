package discover

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

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
}

// PortInfoProbe is a probe of pp's PortInfo: it accepts a PortInfo equal
// to the one discovered, the key violation counters and LocalPortNum
// (which depends on the route) aside.
func PortInfoProbe(pp *model.PhysPort) Probe {
	want := pp.Info
	return Probe{Path: pp.Node.Path, Attr: smp.AttrPortInfo, Mod: uint32(pp.Num),
		What: fmt.Sprintf("PortInfo of %s port %d", pp.Node.Description(), pp.Num),
		Same: func(got []byte) bool { return samePortInfo(&want, got) }}
}

// NodeInfoProbe is a probe of n's NodeInfo: it accepts the node's GUID,
// type and number of ports.
func NodeInfoProbe(n *model.Node) Probe {
	want := n.Info
	return Probe{Path: n.Path, Attr: smp.AttrNodeInfo,
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
	// SMPs is the number of SMPs the light sweep sent.
	SMPs int64
}

// LightSweep reads what tells whether f, a fabric discovered before
// (complete: a partial one should be discovered again), changed, with
// workers SMPs at most in flight through q, and stops at the first
// difference. Its error is a fatal transport error or ctx's; SMPs that
// fail are recorded by q and make a change.
//
// A light sweep, as OpenSM's, tells whether a fabric discovered before
// still answers as it did, for about one SMP per switch; a caller then
// rediscovers only when it does not. It reads, with SubnGet only:
//
//  1. every switch's SwitchInfo. A SwitchInfo that differs from the one
//     discovered (the PortStateChange bit aside) is a change. A set
//     PortStateChange bit marks the switch: the bit is set by the switch
//     when one of its ports changes state and cleared only by a Set (the
//     SM's), so a set bit says "maybe changed since the SM last looked",
//     not "changed since we last looked". Reading never clears it.
//  2. the probes the caller gives (Probe: say, every port and forwarding
//     table block on a watched route): an answer the probe does not
//     accept is a change.
//  3. for every marked switch, its neighbourhood: the PortInfo of each of
//     its ports, and through each port linked when discovered the
//     NodeInfo (GUID, port entered) and PortInfo of the port at the far
//     end. Any difference from the discovered fabric is a change; none
//     clears the mark for this sweep only (a bit no SM clears marks the
//     switch again at the next sweep).
//
// Any SMP that fails is a change (the discovery then says what it is).
//
// So an idle sweep of a fabric whose SM clears PortStateChange costs
// one SMP per switch plus the probes. What a light sweep cannot see: a
// change that sets no switch's bit, changes no SwitchInfo and touches no
// probe (a width renegotiated without a state change, a node that
// stops answering), and a state change whose bit the SM set and cleared
// between two light sweeps. A caller that must see those runs a full
// discovery now and then (ibavtrack watch --full-interval).
//
// Without an SM clearing the bits every switch stays marked, and a light
// sweep reads every switch port and its peer: no saving, and nothing
// missed but what none of those reads shows (a NodeDescription, say).
func LightSweep(ctx context.Context, q *Querier, f *model.Fabric, probes []Probe, workers int) (*LightResult, error) {
	start := q.SMPs()
	res := &LightResult{}
	var mu sync.Mutex
	var changed atomic.Bool
	change := func(why string) {
		mu.Lock()
		if !res.Changed {
			res.Changed, res.Why = true, why
		}
		mu.Unlock()
		changed.Store(true)
	}
	// get reads one attribute; it reports whether to go on.
	get := func(ctx context.Context, path smp.DRPath, attr uint16, mod uint32, out []byte, what string) (bool, error) {
		if changed.Load() {
			return false, nil
		}
		if err := q.Get(ctx, path, attr, mod, out); err != nil {
			if IsStop(err) {
				return false, err
			}
			change(what + ": " + err.Error())
			return false, nil
		}
		return true, nil
	}
	workers = max(workers, 1)
	finish := func(err error) (*LightResult, error) {
		res.SMPs = q.SMPs() - start
		return res, err
	}

	sws := f.Switches()
	marked := make([]bool, len(sws))
	err := Parallel(ctx, workers, len(sws), func(ctx context.Context, i int) error {
		sw := sws[i]
		var b [smp.DataSize]byte
		what := "SwitchInfo of " + sw.Description()
		if ok, err := get(ctx, sw.Path, smp.AttrSwitchInfo, 0, b[:], what); !ok {
			return err
		}
		want := sw.RawSwitchInfo()
		marked[i] = b[11]&0x04 != 0
		b[11] &^= 0x04
		want[11] &^= 0x04
		if !sw.HasSwitchInfo || b != want {
			change(what + " differs")
		}
		return nil
	})
	if err != nil || changed.Load() {
		return finish(err)
	}
	err = Parallel(ctx, workers, len(probes), func(ctx context.Context, i int) error {
		p := &probes[i]
		var b [smp.DataSize]byte
		if ok, err := get(ctx, p.Path, p.Attr, p.Mod, b[:], p.What); !ok {
			return err
		}
		if !p.Same(b[:]) {
			change(p.What + " differs")
		}
		return nil
	})
	if err != nil || changed.Load() {
		return finish(err)
	}
	var work []*model.Node
	for i, m := range marked {
		if m {
			work = append(work, sws[i])
		}
	}
	res.Marked = len(work)
	err = Parallel(ctx, workers, len(work), func(ctx context.Context, i int) error {
		return lightNeighbourhood(ctx, work[i], get, change)
	})
	return finish(err)
}

// lightNeighbourhood reads a marked switch's ports and their peers.
func lightNeighbourhood(ctx context.Context, sw *model.Node, get func(context.Context, smp.DRPath, uint16, uint32, []byte, string) (bool, error), change func(string)) error {
	var b [smp.DataSize]byte
	for num := 0; num <= sw.NumPorts(); num++ {
		pp := sw.Port(num)
		what := fmt.Sprintf("PortInfo of %s port %d", sw.Description(), num)
		if ok, err := get(ctx, sw.Path, smp.AttrPortInfo, uint32(num), b[:], what); !ok {
			return err
		}
		if pp == nil || !pp.HasInfo || !samePortInfo(&pp.Info, b[:]) {
			change(what + " differs")
			return nil
		}
		r := pp.Remote
		if num == 0 || r == nil {
			continue
		}
		path, err := sw.Path.Extend(uint8(num))
		if err != nil {
			change(what + ": " + err.Error())
			return nil
		}
		peer := fmt.Sprintf("the node behind %s port %d", sw.Description(), num)
		if ok, err := get(ctx, path, smp.AttrNodeInfo, 0, b[:], "NodeInfo of "+peer); !ok {
			return err
		}
		var ni smp.NodeInfo
		if ni.UnmarshalBinary(b[:]) != nil || ni.NodeGUID != r.Node.GUID() || ni.LocalPortNum != r.Num ||
			ni.NumPorts != r.Node.Info.NumPorts || ni.NodeType != r.Node.Type() {
			change("NodeInfo of " + peer + " differs")
			return nil
		}
		if ok, err := get(ctx, path, smp.AttrPortInfo, uint32(r.Num), b[:], "PortInfo of "+peer); !ok {
			return err
		}
		if !r.HasInfo || !samePortInfo(&r.Info, b[:]) {
			change("PortInfo of " + peer + " differs")
			return nil
		}
	}
	return nil
}
