package topology

import (
	"github.com/ibfabric/ibdiag/pkg/model"
)

// Vendor IDs with chassis rules in libibnetdisc.
const (
	vendorVoltaire = 0x08f1
	vendorTopspin  = 0x05ad
	vendorSilver   = 0x066a // SilverStorm/QLogic, Topspin-style GUIDs
)

// chassis is a group of nodes sharing a chassis GUID.
type chassis struct {
	num   int    // 1.., or 0 when the group has a single node
	guid  uint64 // chassis GUID (SystemImageGUID, Topspin slot masked)
	count int
	nodes []*model.Node // discovery order
}

// grouping is ibnetdiscover -g's generic chassis grouping: nodes with the
// same non-zero SystemImageGUID form a chassis when there are at least
// two of them. The vendor chassis tables of libibnetdisc (Voltaire ISR
// spines and lines, Mellanox IS4 "MF0;" descriptions, Xsigo) are not
// implemented: Voltaire nodes are left ungrouped and the others are
// grouped generically.
type grouping struct {
	chassis []*chassis
	of      map[*model.Node]*chassis
}

func chassisGUID(n *model.Node) uint64 {
	g := n.Info.SystemImageGUID
	switch n.Info.VendorID {
	case vendorTopspin, vendorSilver:
		return g & 0xffffffff00ffffff
	}
	return g
}

// groupNodes groups f's nodes; chassis are numbered in the order
// ibnetdiscover numbers them (all-nodes list order: reverse discovery).
func groupNodes(f *model.Fabric) *grouping {
	g := &grouping{of: make(map[*model.Node]*chassis)}
	byGUID := make(map[uint64]*chassis)
	eligible := func(n *model.Node) bool {
		return n.Info.VendorID != vendorVoltaire && n.Info.SystemImageGUID != 0
	}
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		if !eligible(n) {
			continue
		}
		cg := chassisGUID(n)
		ch := byGUID[cg]
		if ch == nil {
			ch = &chassis{guid: cg}
			byGUID[cg] = ch
			g.chassis = append(g.chassis, ch)
		}
		ch.count++
	}
	num := 0
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		if !eligible(n) {
			continue
		}
		ch := byGUID[chassisGUID(n)]
		if ch.count < 2 {
			continue
		}
		if ch.num == 0 {
			num++
			ch.num = num
		}
		g.of[n] = ch
		// libibnetdisc prepends: the chassis lists nodes in discovery order.
		ch.nodes = append([]*model.Node{n}, ch.nodes...)
	}
	return g
}

// chassisNum is the chassis number of n, 0 when n is in no chassis or
// grouping is off (g == nil).
func (g *grouping) chassisNum(n *model.Node) int {
	if g == nil {
		return 0
	}
	if ch := g.of[n]; ch != nil {
		return ch.num
	}
	return 0
}
