package discover

import (
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Replay is what the replay of libibnetdisc's discovery found.
type Replay struct {
	// MaxHops is ibnetdiscover's "max hops discovered": the longest
	// directed route it extends to (at least the start node's own).
	MaxHops int
	// SMPs is the number of SMPs libibnetdisc sends on this fabric when
	// every SMP is answered ("Total MADs used").
	SMPs int
}

// Mellanox device IDs for which libibnetdisc reads the Mellanox
// ExtendedPortInfo (diags-formats §2.2).
func mlnxEPIDevice(id uint16) bool {
	switch {
	case id >= 0xc738 && id <= 0xc73b, id == 0xc839, id == 0xcb20,
		id == 0xcf08, id == 0xcf09, id == 0xd2f0:
		return true
	case id >= 0x1003 && id <= 0x101b, id == 0xa2d2:
		return true
	}
	return false
}

// wantsMlnxEPI reports whether ibnetdiscover would read the Mellanox
// ExtendedPortInfo of pp: a Mellanox device, the port LinkUp at QDR with
// no extended speed active.
func wantsMlnxEPI(pp *model.PhysPort) bool {
	if !mlnxEPIDevice(pp.Node.Info.DeviceID) || !pp.HasInfo {
		return false
	}
	pi := &pp.Info
	if pi.PortPhysicalState != smp.PhysLinkUp || pi.LinkSpeedActive != smp.SpeedQDR {
		return false
	}
	return extSpeedActive(pp) == 0
}

// extSpeedActive is the extended speed a port runs, 0 when its capability
// PortInfo does not advertise extended speeds.
func extSpeedActive(pp *model.PhysPort) uint8 {
	cp := pp.CapInfo()
	if cp == nil || cp.CapabilityMask&smp.CapIsExtendedSpeedsSupp == 0 {
		return 0
	}
	return pp.Info.LinkSpeedExtActive
}

// OrderAsIBNetDiscover reorders f.Nodes (and their Index) into the order
// in which ibnetdiscover -o 1 creates them on the same fabric: it replays
// libibnetdisc's FIFO discovery (one SMP on the wire) over the graph.
// Nodes the replay does not reach keep their relative order after the
// others. epi says whether the Mellanox ExtendedPortInfo step is replayed.
// It returns what ibnetdiscover would report on the same fabric.
func OrderAsIBNetDiscover(f *model.Fabric, epi bool) Replay {
	if f.From == nil {
		return Replay{}
	}
	type kind uint8
	const (
		kNodeInfo kind = iota
		kPortInfo
		kEPI
	)
	type item struct {
		k    kind
		n    *model.Node
		num  uint8
		via  *model.PhysPort
		init bool
		d    int
	}
	// Per-node state, indexed by the node's Index (its position in
	// f.Nodes before the reordering).
	for i, n := range f.Nodes {
		n.Index = i
	}
	created := make([]bool, len(f.Nodes))
	depth := make([]int32, len(f.Nodes))
	entry := make([]uint8, len(f.Nodes))
	maxHops := int(f.From.Path.Len())
	order := make([]*model.Node, 0, len(f.Nodes))
	queue := make([]item, 0, 1024)
	queue = append(queue, item{k: kNodeInfo, init: true})
	explore := func(n *model.Node, pp *model.PhysPort) {
		if pp.Num == 0 || pp.Info.PortPhysicalState != smp.PhysLinkUp {
			return
		}
		if !n.IsSwitch() && pp.Remote != nil && pp.Remote.Node == n {
			return // a CA cabled to itself (only in a broken graph) would loop
		}
		if (n.IsSwitch() && pp.Num != entry[n.Index]) || (n == f.From && pp.Num == f.FromPort) {
			d := int(depth[n.Index]) + 1
			if n == f.From && !n.IsSwitch() && d > 1 {
				d = int(depth[n.Index]) - 1 // retracted from a CA start node
				if d+2 > maxHops {
					maxHops = d + 2
				}
			}
			if d > maxHops {
				maxHops = d
			}
			queue = append(queue, item{k: kNodeInfo, via: pp, d: d})
		}
	}
	smps := 0
	for head := 0; head < len(queue); head++ {
		it := queue[head]
		if head >= 4096 && head*2 >= len(queue) {
			// drop the consumed front so the queue does not grow forever
			queue = append(queue[:0], queue[head:]...)
			head = 0
			it = queue[0]
		}
		smps++
		switch it.k {
		case kNodeInfo:
			var n *model.Node
			var q uint8
			if it.init {
				n, q = f.From, f.FromPort
				it.d = int(f.From.Path.Len())
			} else {
				if it.via.Remote == nil {
					continue
				}
				n, q = it.via.Remote.Node, it.via.Remote.Num
			}
			if !created[n.Index] {
				created[n.Index] = true
				entry[n.Index] = q
				depth[n.Index] = int32(it.d)
				order = append(order, n)
				smps++ // NodeDescription
				if n.IsSwitch() {
					smps++ // SwitchInfo
					queue = append(queue, item{k: kPortInfo, n: n, num: 0})
				} else {
					queue = append(queue, item{k: kPortInfo, n: n, num: q})
				}
			} else if !n.IsSwitch() {
				queue = append(queue, item{k: kPortInfo, n: n, num: q})
			}
		case kPortInfo:
			pp := it.n.Port(int(it.num))
			if pp == nil || !pp.HasInfo {
				continue
			}
			if it.n.IsSwitch() && it.num == 0 {
				for p := 1; p <= it.n.NumPorts(); p++ {
					queue = append(queue, item{k: kPortInfo, n: it.n, num: uint8(p)})
				}
				continue
			}
			if epi && wantsMlnxEPI(pp) {
				queue = append(queue, item{k: kEPI, n: it.n, num: it.num})
				continue
			}
			explore(it.n, pp)
		case kEPI:
			explore(it.n, it.n.Port(int(it.num)))
		}
	}
	if len(order) < len(f.Nodes) {
		for _, n := range f.Nodes {
			if !created[n.Index] {
				order = append(order, n)
			}
		}
	}
	for i, n := range order {
		n.Index = i
	}
	copy(f.Nodes, order)
	return Replay{MaxHops: maxHops, SMPs: smps}
}
