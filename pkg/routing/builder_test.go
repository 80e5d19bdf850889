package routing_test

import (
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// builder assembles fabrics directly with the model API for the updn
// and dnup tests and benchmarks (a copy of pkg/model's test builder) (no simulator). Nodes get consecutive LIDs in creation order
// unless told otherwise.
type builder struct {
	tb      testing.TB
	f       *model.Fabric
	nextLID uint16
}

func newBuilder(tb testing.TB) *builder {
	return &builder{tb: tb, f: model.NewFabric(), nextLID: 1}
}

func (b *builder) node(typ uint8, guid uint64, nports int, desc string) *model.Node {
	n := &model.Node{Info: smp.NodeInfo{
		BaseVersion: 1, ClassVersion: 1,
		NodeType: typ, NumPorts: uint8(nports),
		SystemImageGUID: guid, NodeGUID: guid, PortGUID: guid,
	}}
	n.Desc.SetString(desc)
	n.Ports = make([]*model.PhysPort, nports+1)
	if err := b.f.AppendNode(n); err != nil {
		b.tb.Fatal(err)
	}
	return n
}

// lid returns lid, or the next free LID when lid is 0.
func (b *builder) lid(lid uint16) uint16 {
	if lid == 0 {
		lid = b.nextLID
	}
	if lid >= b.nextLID {
		b.nextLID = lid + 1
	}
	return lid
}

// sw adds a switch with nports external ports and port 0 holding lid
// (0: next free LID).
func (b *builder) sw(guid uint64, nports int, lid uint16) *model.Node {
	n := b.node(smp.NodeSwitch, guid, nports, fmt.Sprintf("switch %#x", guid))
	z := n.EnsurePort(0, guid)
	z.Info.LID = b.lid(lid)
	z.Info.PortState = smp.PortStateActive
	z.HasInfo = true
	for p := 1; p <= nports; p++ {
		n.EnsurePort(p, guid)
	}
	if err := b.f.RegisterPort(z); err != nil {
		b.tb.Fatal(err)
	}
	return n
}

// ca adds a CA whose port p has GUID guid+p and LID lid+p-1 (lid 0:
// next free LIDs).
func (b *builder) ca(guid uint64, nports int, lid uint16) *model.Node {
	n := b.node(smp.NodeCA, guid, nports, fmt.Sprintf("ca %#x", guid))
	n.Info.PortGUID = guid + 1
	for p := 1; p <= nports; p++ {
		pp := n.EnsurePort(p, guid+uint64(p))
		l := lid
		if l != 0 {
			l += uint16(p - 1)
		}
		pp.Info.LID = b.lid(l)
		pp.Info.PortState = smp.PortStateActive
		pp.HasInfo = true
		if err := b.f.RegisterPort(pp); err != nil {
			b.tb.Fatal(err)
		}
	}
	return n
}

// link connects port pa of a and port pb of b.
func (b *builder) link(a *model.Node, pa int, c *model.Node, pc int) {
	x, y := a.Port(pa), c.Port(pc)
	if x == nil || y == nil {
		b.tb.Fatalf("link %v[%d] - %v[%d]: no such port", a.GUID(), pa, c.GUID(), pc)
	}
	x.Link(y)
}

// fatTree builds a 3-level fat tree of k-port switches with the given
// number of pods (at most k): each pod has k/2 edge and k/2 aggregation
// switches, (k/2)² core switches link to every pod, and every edge switch
// carries k/2 single-port CAs.
func fatTree(tb testing.TB, k, pods int) *model.Fabric {
	b := newBuilder(tb)
	h := k / 2
	core := make([]*model.Node, h*h)
	for i := range core {
		core[i] = b.sw(0x0003000000000000|uint64(i), k, 0)
	}
	for pod := 0; pod < pods; pod++ {
		aggs := make([]*model.Node, h)
		for a := range aggs {
			aggs[a] = b.sw(0x0002000000000000|uint64(pod)<<16|uint64(a), k, 0)
			for u := 0; u < h; u++ { // uplinks: ports h+1..k
				b.link(aggs[a], h+1+u, core[a*h+u], pod+1)
			}
		}
		for e := 0; e < h; e++ {
			edge := b.sw(0x0001000000000000|uint64(pod)<<16|uint64(e), k, 0)
			for a := 0; a < h; a++ {
				b.link(edge, h+1+a, aggs[a], e+1)
			}
			for c := 0; c < h; c++ {
				ca := b.ca(0x0004000000000000|uint64(pod)<<24|uint64(e)<<16|uint64(c)<<4, 1, 0)
				b.link(edge, c+1, ca, 1)
			}
		}
	}
	return b.f
}
