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

// bullVendorID is Bull's (Atos') IEEE vendor ID: libibnetdisc reads the
// Mellanox ExtendedPortInfo of Bull's Mellanox-based devices too.
const bullVendorID = 0x119f

// mlnxEPIDevice is libibnetdisc's is_mlnx_ext_port_info_supported
// (rdma-core v44, diags-formats §2.2): the Mellanox switch and HCA device
// IDs whatever the vendor ID, and Bull's devices built on them (SwitchX,
// Switch-IB 1 and 2, Quantum; ConnectX-3, Connect-IB, ConnectX-4,
// Sequana HDR and HDR100) only under Bull's vendor ID.
func mlnxEPIDevice(vendor uint32, id uint16) bool {
	switch {
	case id >= 0xc738 && id <= 0xc73b, id == 0xc839, id == 0xcb20,
		id == 0xcf08, id == 0xcf09, id == 0xd2f0:
		return true // switches
	case id >= 0x1003 && id <= 0x101b, id == 0xa2d2:
		return true // HCAs
	}
	if vendor != bullVendorID {
		return false
	}
	switch {
	case id == 0x1b02, id == 0x1b50, // SwitchX
		id == 0x1ba0, id >= 0x1bd0 && id <= 0x1bd5, // Switch-IB, Switch-IB 2
		id == 0x1bf0: // Quantum
		return true
	case id == 0x1b33, id == 0x1b73, id == 0x1b40, id == 0x1b41, id == 0x1b60, id == 0x1b61, // ConnectX-3
		id == 0x1b83, id == 0x1b93, id == 0x1b94, // Connect-IB
		id == 0x1bb4, id == 0x1bb5, id >= 0x1bc4 && id <= 0x1bc6: // ConnectX-4, Sequana HDR, HDR100
		return true
	}
	return false
}

// wantsMlnxEPI reports whether ibnetdiscover would read the Mellanox
// ExtendedPortInfo of pp: a device of libibnetdisc's list, the port LinkUp at QDR with
// no extended speed active.
func wantsMlnxEPI(pp *model.PhysPort) bool {
	// (the port's own fields first: they rule out most ports at once)
	pi := &pp.Info
	if !pp.HasInfo || pi.PortPhysicalState != smp.PhysLinkUp || pi.LinkSpeedActive != smp.SpeedQDR {
		return false
	}
	if !mlnxEPIDevice(pp.Node.Info.VendorID, pp.Node.Info.DeviceID) {
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
//
// The replay also makes the fabric read as ibnetdiscover reads it: every
// node it reaches gets ibnetdiscover's directed route (Node.Path), the
// NodeInfo LocalPortNum (and, on a CA, PortGUID) of the port ibnetdiscover
// enters it by, and on a switch the PortInfo LocalPortNum of that port;
// f.PortHashOrder gets the order in which libibnetdisc enters the ports
// into its port hash (the order of ibnetdiscover's cache).
func OrderAsIBNetDiscover(f *model.Fabric, epi bool) Replay {
	return ReplayIBNetDiscover(f, ReplayOptions{MlnxEPI: epi})
}

// ReplayOptions tunes ReplayIBNetDiscover.
type ReplayOptions struct {
	// MlnxEPI replays the Mellanox ExtendedPortInfo step (ibnetdiscover's
	// default).
	MlnxEPI bool
	// Progress, when set, receives ibnetdiscover -s's lines: one per
	// NodeInfo answer in ibnetdiscover's order, "known" probes included,
	// with the LIDs and description libibnetdisc knows at that moment.
	Progress func(Progress)
	// strays: for ports the graph leaves unlinked, the NodeInfo answer
	// that came through them (a second node with a known GUID).
	strays map[*model.PhysPort]*strayAnswer
}

// A strayAnswer is a NodeInfo answer the graph does not link: the node
// GUID, port GUID and the port it was entered by, the route it came
// along, and for the twin of a CA the PortInfo of that port (nil when
// not read) and its ExtendedPortInfo.
type strayAnswer struct {
	guid     uint64
	portGUID uint64
	port     uint8
	path     smp.DRPath
	info     *[smp.DataSize]byte
	ext      *[smp.DataSize]byte // its Mellanox ExtendedPortInfo, when read
}

// A twin is a node libibnetdisc reached through via and took, by its
// GUID, for a node it knew: it reads a CA twin's PortInfo (into the known
// node's port) along path, and explores no twin, but a twin of a CA start
// node, which it leaves backwards as it leaves the start node.
type twin struct {
	path smp.DRPath
	via  *model.PhysPort
}

// ReplayIBNetDiscover is OrderAsIBNetDiscover with options.
func ReplayIBNetDiscover(f *model.Fabric, o ReplayOptions) Replay {
	if f.From == nil {
		return Replay{}
	}
	// Per-node state, indexed by the node's Index (its position in
	// f.Nodes before the reordering).
	for i, n := range f.Nodes {
		n.Index = i
	}
	created := make([]bool, len(f.Nodes))
	described := make([]bool, len(f.Nodes))
	depth := make([]int32, len(f.Nodes))
	entry := make([]uint8, len(f.Nodes))
	// A reached node's Path is set to ibnetdiscover's route at once (it
	// is only read for reached nodes from then on).
	nodes := f.Nodes
	// portBase[i]+p indexes port p of node i in hashed.
	portBase := make([]int, len(f.Nodes)+1)
	for i, n := range f.Nodes {
		portBase[i+1] = portBase[i] + len(n.Ports)
	}
	hashed := make([]bool, portBase[len(f.Nodes)])
	hashOrder := make([]*model.PhysPort, 0, len(hashed))
	maxHops := int(f.From.Path.Len())
	order := make([]*model.Node, 0, len(f.Nodes))
	var queue replayQueue
	queue.push(replayItem{k: kNodeInfo, init: true})
	var twins []twin
	// libibnetdisc's state of the ports twins touch: links (link_ports
	// on every NodeInfo answer, the last one winning), PortInfo (a CA
	// twin's, read into the known node's port, until the node's own is
	// read again) and port GUIDs (each NodeInfo answer's), applied to the
	// graph when twins were met. Only a fabric with answers the graph
	// does not link (strays) can have twins: elsewhere nothing is kept.
	var ls libState
	track := len(o.strays) > 0
	explore := func(n *model.Node, pp *model.PhysPort, tw int32) {
		if pp.Num == 0 || pp.Info.PortPhysicalState != smp.PhysLinkUp {
			return
		}
		if tw != 0 {
			// a twin of the CA start node, entered by the start port:
			// libibnetdisc leaves it along the twin's own route
			if n != f.From || n.IsSwitch() || pp.Num != f.FromPort {
				return
			}
			path := twins[tw-1].path
			if path.Len() > 1 {
				maxHops++ // (retract_dpath counts a hop each time)
				queue.push(replayItem{k: kNodeInfo, node: int32(n.Index), num: pp.Num, retract: true, twin: tw})
				return
			}
			// DR through the twin itself: nothing answers
			if d := int(path.Len()) + 1; d > maxHops {
				maxHops = d
			}
			queue.push(replayItem{k: kNodeInfo, node: int32(n.Index), num: pp.Num, twin: tw})
			return
		}
		if !n.IsSwitch() && pp.Remote != nil && pp.Remote.Node == n {
			return // a CA cabled to itself (only in a broken graph) would loop
		}
		if (n.IsSwitch() && pp.Num != entry[n.Index]) || (n == f.From && pp.Num == f.FromPort) {
			d := int(depth[n.Index]) + 1
			retract := false
			if n == f.From && !n.IsSwitch() && d > 1 {
				d = int(depth[n.Index]) - 1 // retracted from a CA start node
				retract = true
				if d+2 > maxHops {
					maxHops = d + 2
				}
			} else if d > smp.MaxHops {
				// libibmad's add_port_to_dpath fails past 63 hops:
				// libibnetdisc sends nothing and counts no further hop.
				return
			}
			if d > maxHops {
				maxHops = d
			}
			queue.push(replayItem{k: kNodeInfo, node: int32(n.Index), num: pp.Num, d: int32(d), retract: retract})
		}
	}
	// lids is what libibnetdisc's port shell holds when a NodeInfo
	// answer arrives: its base LID and LMC once its PortInfo was taken.
	lids := func(n *model.Node, q uint8) (uint16, uint8) {
		pp := ls.port(n, q)
		if pp == nil {
			return 0, 0
		}
		if n.Port(int(q)) != pp {
			if !ls.hashed[pp] {
				return 0, 0
			}
		} else if !hashed[portBase[n.Index]+int(q)] {
			return 0, 0
		}
		if n.IsSwitch() {
			return n.SMALID(), n.SMALMC()
		}
		return pp.BaseLID(), pp.LMC()
	}
	smps := 0
	for queue.len() > 0 {
		it := queue.pop()
		smps++
		switch it.k {
		case kNodeInfo:
			var n *model.Node
			var q uint8
			var path smp.DRPath
			var stray *strayAnswer
			if it.twin != 0 {
				if !it.retract {
					continue
				}
				tw := twins[it.twin-1]
				path = tw.path.Retract()
				// (the node before the twin, entered as by its own
				// route)
				n = tw.via.Node
				q = entry[n.Index]
				it.d = int32(path.Len())
			} else if it.init {
				n, q = f.From, f.FromPort
				it.d = int32(f.From.Path.Len())
				path = f.From.Path
			} else {
				from := nodes[it.node]
				via := from.Port(int(it.num))
				if via.Remote != nil {
					n, q = via.Remote.Node, via.Remote.Num
				} else if a, ok := o.strays[via]; ok && f.NodeByGUID(a.guid) != nil {
					// libibnetdisc finds the node by its GUID
					n, q = f.NodeByGUID(a.guid), a.port
					stray = a
				} else {
					continue
				}
				if it.retract {
					path = from.Path.Retract()
				} else {
					var err error
					if path, err = from.Path.Extend(it.num); err != nil {
						continue // (explore queues nothing past 63 hops)
					}
				}
			}
			isNew := !created[n.Index]
			if track && !it.init {
				ls.answer(n, q, nodes[it.node].Port(int(it.num)), stray)
			}
			if o.Progress != nil {
				p := Progress{Path: path, New: isNew, Node: n, Nodes: len(order), SMPs: int64(smps)}
				if isNew {
					p.Nodes++
				} else {
					p.LID, p.LMC = lids(n, q)
					p.HasDesc = described[n.Index]
				}
				if !n.IsSwitch() {
					p.Port = q
				}
				o.Progress(p)
			}
			if isNew {
				created[n.Index] = true
				entry[n.Index] = q
				depth[n.Index] = it.d
				n.Path = path
				order = append(order, n)
				ni := int32(n.Index)
				queue.push(replayItem{k: kDesc, node: ni})
				if n.IsSwitch() {
					queue.push(replayItem{k: kSwitchInfo, node: ni})
					queue.push(replayItem{k: kPortInfo, node: ni, num: 0})
				}
			}
			if !n.IsSwitch() {
				var tw int32
				if stray != nil && !isNew {
					twins = append(twins, twin{path: path, via: nodes[it.node].Port(int(it.num))})
					tw = int32(len(twins))
				}
				queue.push(replayItem{k: kPortInfo, node: int32(n.Index), num: q, twin: tw})
			}
		case kDesc:
			described[it.node] = true
		case kSwitchInfo:
		case kPortInfo:
			n := nodes[it.node]
			pp := ls.port(n, it.num)
			if it.twin != 0 {
				if !ls.twinInfo(pp, o.strays[twins[it.twin-1].via]) {
					continue
				}
			} else {
				ls.ownInfo(pp)
			}
			if pp == nil || !pp.HasInfo {
				continue
			}
			if n.Port(int(it.num)) != pp {
				// (past the node's ports)
				if !ls.hashed[pp] {
					ls.hashed[pp] = true
					hashOrder = append(hashOrder, pp)
				}
			} else if h := portBase[it.node] + int(it.num); !hashed[h] {
				hashed[h] = true
				hashOrder = append(hashOrder, pp)
			}
			if n.IsSwitch() && it.num == 0 {
				if o.MlnxEPI && wantsMlnxEPI(pp) {
					queue.push(replayItem{k: kEPI, node: it.node, num: 0})
				}
				for p := 1; p <= n.NumPorts(); p++ {
					queue.push(replayItem{k: kPortInfo, node: it.node, num: uint8(p)})
				}
				continue
			}
			if o.MlnxEPI && wantsMlnxEPI(pp) {
				queue.push(replayItem{k: kEPI, node: it.node, num: it.num, twin: it.twin})
				continue
			}
			explore(n, pp, it.twin)
		case kEPI:
			n := nodes[it.node]
			pp := ls.port(n, it.num)
			if it.twin != 0 {
				ls.twinExt(pp, o.strays[twins[it.twin-1].via])
			} else {
				ls.ownExt(pp)
			}
			explore(n, pp, it.twin)
		}
	}
	ls.apply()
	for _, n := range order {
		asReachedBy(n, entry[n.Index])
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
	f.PortHashOrder = hashOrder
	return Replay{MaxHops: maxHops, SMPs: smps}
}

// libState follows, during the replay, what libibnetdisc makes of the
// ports twins touch: it links the port a NodeInfo answer comes from
// whichever node answered (link_ports, which unlinks both ports' earlier
// peers), sets the port GUID the answer gives, and reads a CA twin's
// PortInfo into the known CA's port. The graph holds each node's own
// answers; apply makes it read as libibnetdisc's when twins were met.
type libState struct {
	twins bool
	link  map[*model.PhysPort]*model.PhysPort
	// own: the graph's PortInfo and port GUID of a port a twin
	// overwrote; twin: whether the port holds the twin's PortInfo now
	own       map[*model.PhysPort]ownPort
	twin      map[*model.PhysPort]bool
	twinExtIn map[*model.PhysPort]bool // the port holds the twin's ExtendedPortInfo now
	// beyond: ports past their node's port count, which a twin with
	// more ports answered from (libibnetdisc stores them past the end
	// of the node's port array: they are linked and hashed, and the
	// node does not list them); hashed: those entered in the port hash
	beyond map[beyondKey]*model.PhysPort
	hashed map[*model.PhysPort]bool
}

type beyondKey struct {
	n   *model.Node
	num uint8
}

// beyondPort is the port past n's ports that twins entered at q.
func (s *libState) beyondPort(n *model.Node, q uint8, guid uint64) *model.PhysPort {
	if s.beyond == nil {
		s.beyond = make(map[beyondKey]*model.PhysPort)
		s.hashed = make(map[*model.PhysPort]bool)
	}
	k := beyondKey{n, q}
	if p := s.beyond[k]; p != nil {
		return p
	}
	p := &model.PhysPort{Node: n, Num: q, GUID: guid, Healthy: true}
	s.beyond[k] = p
	return p
}

// port is n's port q, or the port past n's ports twins entered at q.
func (s *libState) port(n *model.Node, q uint8) *model.PhysPort {
	if p := n.Port(int(q)); p != nil {
		return p
	}
	return s.beyond[beyondKey{n, q}]
}

type ownPort struct {
	guid    uint64
	hasInfo bool
	info    [smp.DataSize]byte
	ext     *[smp.DataSize]byte // the ExtendedPortInfo (nil: none)
}

// answer takes a NodeInfo answer of node n entered at port q through
// via: a twin's (stray set) or the node's own.
func (s *libState) answer(n *model.Node, q uint8, via *model.PhysPort, stray *strayAnswer) {
	if s.link == nil {
		s.link = make(map[*model.PhysPort]*model.PhysPort)
		s.own = make(map[*model.PhysPort]ownPort)
		s.twin = make(map[*model.PhysPort]bool)
		s.twinExtIn = make(map[*model.PhysPort]bool)
	}
	var at *model.PhysPort
	if stray != nil {
		s.twins = true
		if at = n.EnsurePort(int(q), stray.portGUID); at == nil { // (a shell when new)
			at = s.beyondPort(n, q, stray.portGUID)
		}
		s.save(at)
		at.GUID = stray.portGUID
	} else {
		if at = n.Port(int(q)); at == nil {
			return
		}
		if o, ok := s.own[at]; ok {
			at.GUID = o.guid
		}
	}
	if via == nil {
		return
	}
	if r := s.link[at]; r != nil && r != via {
		s.link[r] = nil
	}
	if r := s.link[via]; r != nil && r != at {
		s.link[r] = nil
	}
	s.link[at], s.link[via] = via, at
}

func (s *libState) save(pp *model.PhysPort) {
	if _, ok := s.own[pp]; !ok {
		o := ownPort{guid: pp.GUID, hasInfo: pp.HasInfo, info: pp.RawInfo()}
		if pp.HasExtInfo && pp.ExtInfo != nil {
			o.ext = new([smp.DataSize]byte)
			*o.ext = *pp.ExtInfo
		}
		s.own[pp] = o
	}
}

// twinInfo takes a CA twin's PortInfo answer into pp; false when it was
// not read (a lost SMP).
func (s *libState) twinInfo(pp *model.PhysPort, a *strayAnswer) bool {
	if pp == nil || a == nil || a.info == nil {
		return false
	}
	s.save(pp)
	if pp.SetInfo(a.info[:]) != nil {
		return false
	}
	s.twin[pp] = true
	return true
}

// ownInfo takes the node's own PortInfo answer into pp again after a
// twin's (when the node's own was read).
func (s *libState) ownInfo(pp *model.PhysPort) {
	if pp == nil || !s.twin[pp] {
		return
	}
	if o := s.own[pp]; o.hasInfo {
		_ = pp.SetInfo(o.info[:])
		s.twin[pp] = false
	}
}

// twinExt takes a CA twin's ExtendedPortInfo answer into pp (a lost one
// leaves pp's as it was).
func (s *libState) twinExt(pp *model.PhysPort, a *strayAnswer) {
	if pp == nil || a == nil || a.ext == nil {
		return
	}
	s.save(pp)
	pp.SetExtInfo(a.ext[:])
	s.twinExtIn[pp] = true
}

// ownExt takes the node's own ExtendedPortInfo answer into pp again
// after a twin's.
func (s *libState) ownExt(pp *model.PhysPort) {
	if pp == nil || !s.twinExtIn[pp] {
		return
	}
	if o := s.own[pp]; o.ext != nil {
		pp.SetExtInfo(o.ext[:])
		s.twinExtIn[pp] = false
	}
}

// apply links the graph's ports as libibnetdisc's when twins were met:
// each port a NodeInfo answer linked gets its last peer (or none), and a
// port left pointing at a port now linked elsewhere is unlinked.
func (s *libState) apply() {
	if !s.twins {
		return
	}
	var before []*model.PhysPort // the graph's peers of the ports relinked
	for p := range s.link {
		if p.Remote != nil {
			before = append(before, p.Remote)
		}
	}
	for p, r := range s.link {
		p.Remote = r
	}
	for _, p := range before {
		if _, relinked := s.link[p]; !relinked && p.Remote != nil && p.Remote.Remote != p {
			p.Remote = nil
		}
	}
}

// asReachedBy makes n read as libibnetdisc reads it when it first
// reaches n entering at port q (the replay has set n.Path already):
// NodeInfo's LocalPortNum (and a CA's PortGUID, which is per port) and, on
// a switch, every PortInfo's LocalPortNum (the port the SMP entered by).
func asReachedBy(n *model.Node, q uint8) {
	if n.Info.LocalPortNum == q {
		return
	}
	n.SetLocalPortNum(q)
	if !n.IsSwitch() {
		if pp := n.Port(int(q)); pp != nil && pp.GUID != 0 {
			n.SetPortGUID(pp.GUID)
		}
		return
	}
	for _, pp := range n.Ports {
		if pp != nil && pp.HasInfo {
			pp.SetLocalPortNum(q)
		}
	}
}

// The replay's queue: the SMPs ibnetdiscover sends, in its order.
type replayKind uint8

const (
	kNodeInfo replayKind = iota
	kDesc
	kSwitchInfo
	kPortInfo
	kEPI
)

// A replayItem is 16 bytes (node indexes, not pointers).
type replayItem struct {
	k       replayKind
	init    bool
	retract bool
	num     uint8 // PortInfo, EPI: the port read; NodeInfo: the port of node probed through
	node    int32 // the node read; NodeInfo: the node probed from
	d       int32
	twin    int32 // 1 + the index in twins of the twin read or probed from (0: none)
}

// replayQueue is a FIFO of items in blocks of queueBlock, a consumed
// block reused for new items: its memory is what is pending at most (a
// level's worth), not every item ever queued nor a doubling slice's
// copies.
type replayQueue struct {
	blocks [][]replayItem // blocks[0][head:] is the front; the last block fills up to its capacity
	head   int
	n      int
	spare  []replayItem
}

const queueBlock = 1024

func (q *replayQueue) len() int { return q.n }

func (q *replayQueue) push(it replayItem) {
	last := len(q.blocks) - 1
	if last < 0 || len(q.blocks[last]) == cap(q.blocks[last]) {
		b := q.spare
		q.spare = nil
		if b == nil {
			b = make([]replayItem, 0, queueBlock)
		}
		q.blocks = append(q.blocks, b[:0])
		last++
	}
	q.blocks[last] = append(q.blocks[last], it)
	q.n++
}

func (q *replayQueue) pop() replayItem {
	b := q.blocks[0]
	it := b[q.head]
	q.head++
	q.n--
	if q.head == len(b) {
		// the front block is used up: keep it for reuse
		q.spare = b
		q.blocks[0] = nil
		q.blocks = q.blocks[1:]
		q.head = 0
	}
	return it
}
