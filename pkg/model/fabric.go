// Package model holds the fabric object model: nodes, physical ports
// linked to their peers, logical ports addressed by GUID and LID, and the
// objects built over them (LID hop matrix, MAD pool, AV tracker).
//
// The graph follows OpenSM's split between a physical port (PhysPort: one
// per port number of a node, with its PortInfo and its remote peer) and a
// logical port (Port: one per port GUID, owning a LID range). A switch has
// one logical port (port 0) whose GUID all its physical ports share.
package model

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ErrDuplicateGUID: a node or port GUID is already in the fabric.
var ErrDuplicateGUID = errors.New("duplicate GUID")

// Node is one InfiniBand device: a switch, channel adapter or router.
// (A fabric holds one per node: the attributes as received are kept only
// where they differ from the decoded fields' encoding, see RawInfo; 256
// bytes in all.)
type Node struct {
	Info          smp.NodeInfo
	Desc          smp.NodeDescription
	SwitchInfo    smp.SwitchInfo
	HasSwitchInfo bool

	// Ports is indexed by port number, 0..NumPorts; an entry is nil for a
	// port that was never read or reached (CAs have no port 0).
	Ports []*PhysPort

	// Path is the directed route by which the node was first reached
	// (after a discovery from another node than the local one, the
	// shortest route from the local port over the links found).
	Path smp.DRPath
	// Index is the node's position in discovery order (0 = first).
	Index int

	raw *nodeRaw // attributes as received, where they differ from Info's and SwitchInfo's encoding
}

// nodeRaw holds a node's attributes as received where re-encoding the
// decoded fields would not give them back (reserved bits, bytes beyond
// the attribute, or a field the caller changed on purpose).
type nodeRaw [2]rawAttr

// The attributes of a nodeRaw.
const (
	rawNodeInfo   = 0
	rawSwitchInfo = 1
)

// rawAttr is one attribute as received, when has is set.
type rawAttr struct {
	b   [smp.DataSize]byte
	has bool
}

// asReceived returns raw (its first 64 bytes) and whether it differs from
// enc, the decoded fields' encoding: whether it must be kept to be given
// back. (Callers encode: a MarshalTo called through an interface would
// move its buffer to the heap.)
func asReceived(raw []byte, enc *[smp.DataSize]byte) (b [smp.DataSize]byte, differs bool) {
	copy(b[:], raw)
	return b, b != *enc
}

// rawOf returns attribute k as received, if it was kept.
func (n *Node) rawOf(k int) (b [smp.DataSize]byte, ok bool) {
	if n.raw != nil && n.raw[k].has {
		return n.raw[k].b, true
	}
	return b, false
}

// rawSet records raw as attribute k as received where it differs from
// enc, the decoded fields' encoding.
func (n *Node) rawSet(k int, raw []byte, enc *[smp.DataSize]byte) {
	b, differs := asReceived(raw, enc)
	switch {
	case differs:
		if n.raw == nil {
			n.raw = new(nodeRaw)
		}
		n.raw[k] = rawAttr{b: b, has: true}
	case n.raw != nil:
		n.raw[k].has = false
	}
}

// RawInfo returns the NodeInfo as received (see SetRawInfo): the bytes
// recorded where they differ from Info's encoding, else that encoding.
func (n *Node) RawInfo() [smp.DataSize]byte {
	b, ok := n.rawOf(rawNodeInfo)
	if !ok {
		n.Info.MarshalTo(b[:])
	}
	return b
}

// SetRawInfo records raw (at most 64 bytes are used) as the NodeInfo as
// received, for RawInfo. Set Info first: the bytes are stored only where
// they differ from its encoding.
func (n *Node) SetRawInfo(raw []byte) {
	var enc [smp.DataSize]byte
	n.Info.MarshalTo(enc[:])
	n.rawSet(rawNodeInfo, raw, &enc)
}

// RawSwitchInfo returns the SwitchInfo as received (see SetRawSwitchInfo),
// or SwitchInfo's encoding.
func (n *Node) RawSwitchInfo() [smp.DataSize]byte {
	b, ok := n.rawOf(rawSwitchInfo)
	if !ok {
		n.SwitchInfo.MarshalTo(b[:])
	}
	return b
}

// SetRawSwitchInfo records raw as the SwitchInfo as received, for
// RawSwitchInfo. Set SwitchInfo first: the bytes are stored only where
// they differ from its encoding.
func (n *Node) SetRawSwitchInfo(raw []byte) {
	var enc [smp.DataSize]byte
	n.SwitchInfo.MarshalTo(enc[:])
	n.rawSet(rawSwitchInfo, raw, &enc)
}

// SetSwitchInfo decodes raw into SwitchInfo, records it as received and
// sets HasSwitchInfo.
func (n *Node) SetSwitchInfo(raw []byte) error {
	var si smp.SwitchInfo
	if err := si.UnmarshalBinary(raw); err != nil {
		return err
	}
	n.SwitchInfo = si
	n.SetRawSwitchInfo(raw)
	n.HasSwitchInfo = true
	return nil
}

// SetLocalPortNum sets NodeInfo's LocalPortNum, in Info and as received.
func (n *Node) SetLocalPortNum(q uint8) {
	n.Info.LocalPortNum = q
	if n.raw != nil && n.raw[rawNodeInfo].has {
		n.raw[rawNodeInfo].b[nodeInfoLocalPortOff] = q
	}
}

// SetPortGUID sets NodeInfo's PortGUID, in Info and as received.
func (n *Node) SetPortGUID(g uint64) {
	n.Info.PortGUID = g
	if n.raw != nil && n.raw[rawNodeInfo].has {
		binary.BigEndian.PutUint64(n.raw[rawNodeInfo].b[nodeInfoPortGUIDOff:], g)
	}
}

// Byte offsets in the NodeInfo and PortInfo attributes.
const (
	nodeInfoPortGUIDOff  = 20
	nodeInfoLocalPortOff = 36
	portInfoLocalPortOff = 28
)

// GUID is the node GUID.
func (n *Node) GUID() uint64 { return n.Info.NodeGUID }

// Type is the node type (smp.NodeCA, smp.NodeSwitch, smp.NodeRouter).
func (n *Node) Type() uint8 { return n.Info.NodeType }

// NumPorts is the number of physical ports.
func (n *Node) NumPorts() int { return int(n.Info.NumPorts) }

// IsSwitch reports whether n is a switch.
func (n *Node) IsSwitch() bool { return n.Info.NodeType == smp.NodeSwitch }

// Port returns physical port num, or nil.
func (n *Node) Port(num int) *PhysPort {
	if num < 0 || num >= len(n.Ports) {
		return nil
	}
	return n.Ports[num]
}

// Description is the NodeDescription as the tools print it.
func (n *Node) Description() string { return n.Desc.String() }

// EnsurePort returns physical port num, creating an empty one with the
// given GUID if it does not exist. It returns nil for a port number
// outside 0..NumPorts.
func (n *Node) EnsurePort(num int, guid uint64) *PhysPort {
	if num < 0 || num > n.NumPorts() {
		return nil
	}
	if n.Ports == nil {
		n.Ports = make([]*PhysPort, n.NumPorts()+1)
	}
	p := n.Ports[num]
	if p == nil {
		p = &PhysPort{Node: n, Num: uint8(num), GUID: guid, Healthy: true}
		n.Ports[num] = p
	}
	return p
}

// SMALID is the switch management port's LID (port 0), or for a CA or
// router the base LID of its lowest-numbered port that has PortInfo.
func (n *Node) SMALID() uint16 {
	if p := n.managementPort(); p != nil {
		return p.Info.LID
	}
	return 0
}

// SMALMC is the LMC matching SMALID.
func (n *Node) SMALMC() uint8 {
	if p := n.managementPort(); p != nil {
		return p.Info.LMC
	}
	return 0
}

func (n *Node) managementPort() *PhysPort {
	if n.IsSwitch() {
		if p := n.Port(0); p != nil && p.HasInfo {
			return p
		}
		return nil
	}
	for _, p := range n.Ports {
		if p != nil && p.HasInfo {
			return p
		}
	}
	return nil
}

// PhysPort is one physical port of a node. (A fabric holds one per
// port: the PortInfo as received is kept only where it differs from
// Info's encoding, see RawInfo, and the small fields share one word, 144
// bytes in all.)
type PhysPort struct {
	Node *Node
	GUID uint64

	Info    smp.PortInfo
	rawInfo *[smp.DataSize]byte // PortInfo as received, where it differs from Info's encoding

	// ExtInfo is the Mellanox ExtendedPortInfo (0xFF90), when read
	// (HasExtInfo); most ports have none, so it is kept apart.
	ExtInfo *[smp.DataSize]byte

	// Remote is the peer port at the other end of the link, or nil.
	Remote *PhysPort

	Num        uint8
	HasInfo    bool
	HasExtInfo bool
	// Healthy is false when the port misbehaved (errors, contradictions).
	Healthy bool
}

// Link connects p and q both ways, first breaking any link either had.
func (p *PhysPort) Link(q *PhysPort) {
	if p == nil || q == nil {
		return
	}
	if p.Remote == q && q.Remote == p {
		return
	}
	p.Unlink()
	q.Unlink()
	p.Remote = q
	q.Remote = p
}

// Unlink breaks p's link on both ends.
func (p *PhysPort) Unlink() {
	if p == nil || p.Remote == nil {
		return
	}
	r := p.Remote
	p.Remote = nil
	if r.Remote == p {
		r.Remote = nil
	}
}

// BaseLID is the port's base LID; external switch ports report the
// switch's port-0 LID, as infiniband-diags do.
func (p *PhysPort) BaseLID() uint16 {
	if p.Node.IsSwitch() {
		return p.Node.SMALID()
	}
	return p.Info.LID
}

// LMC is the port's LMC (switch ports: port 0's).
func (p *PhysPort) LMC() uint8 {
	if p.Node.IsSwitch() {
		return p.Node.SMALMC()
	}
	return p.Info.LMC
}

// SetInfo decodes a PortInfo into Info, records it as received (see
// RawInfo) and sets HasInfo.
func (p *PhysPort) SetInfo(raw []byte) error {
	var pi smp.PortInfo
	if err := pi.UnmarshalBinary(raw); err != nil {
		return err
	}
	p.Info = pi
	if !outsideBits((*[smp.DataSize]byte)(raw[:smp.DataSize]), &portInfoKept) {
		p.rawInfo = nil
	} else {
		if p.rawInfo == nil {
			p.rawInfo = new([smp.DataSize]byte)
		}
		copy(p.rawInfo[:], raw)
	}
	p.HasInfo = true
	return nil
}

// portInfoKept has, for each byte of a PortInfo, the bits that decoding
// and re-encoding give back: a PortInfo as received differs from Info's
// encoding exactly where it has a bit outside them (a reserved bit). The
// codec copies every field bit for bit, so each bit is kept or lost on
// its own, and the re-encoding of a PortInfo of all ones is the mask
// (TestPortInfoKeptBits compares the rule with the re-encoding, bit by
// bit and on random PortInfos). SetInfo checks the mask instead of
// encoding every PortInfo it keeps.
var portInfoKept = keptBits(func(in, out *[smp.DataSize]byte) {
	var pi smp.PortInfo
	_ = pi.UnmarshalBinary(in[:])
	pi.MarshalTo(out[:])
})

// keptBits is the mask of the bits that roundTrip gives back, for a
// codec whose bits are kept or lost each on its own.
func keptBits(roundTrip func(in, out *[smp.DataSize]byte)) (kept [smp.DataSize]byte) {
	var ones [smp.DataSize]byte
	for i := range ones {
		ones[i] = 0xff
	}
	roundTrip(&ones, &kept)
	return kept
}

// outsideBits reports whether b has a bit set outside mask (eight bytes
// at a time).
func outsideBits(b, mask *[smp.DataSize]byte) bool {
	var or uint64
	for i := 0; i < smp.DataSize; i += 8 {
		or |= binary.LittleEndian.Uint64(b[i:]) &^ binary.LittleEndian.Uint64(mask[i:])
	}
	return or != 0
}

// RawInfo returns the PortInfo as received by SetInfo: the bytes recorded
// where they differ from Info's encoding (reserved bits), else that
// encoding.
func (p *PhysPort) RawInfo() (b [smp.DataSize]byte) {
	if p.rawInfo != nil {
		return *p.rawInfo
	}
	p.Info.MarshalTo(b[:])
	return b
}

// SetLocalPortNum sets PortInfo's LocalPortNum, in Info and as received.
func (p *PhysPort) SetLocalPortNum(q uint8) {
	p.Info.LocalPortNum = q
	if p.rawInfo != nil {
		p.rawInfo[portInfoLocalPortOff] = q
	}
}

// CapInfo is the PortInfo that supplies capability masks for this port:
// switch port 0 for a switch's ports, the port itself otherwise. It
// returns nil when that PortInfo was not read.
func (p *PhysPort) CapInfo() *smp.PortInfo {
	if p.Node.IsSwitch() {
		if z := p.Node.Port(0); z != nil && z.HasInfo {
			return &z.Info
		}
		return nil
	}
	if !p.HasInfo {
		return nil
	}
	return &p.Info
}

// FDR10 reports whether the Mellanox ExtendedPortInfo says the link runs FDR10.
func (p *PhysPort) FDR10() bool {
	return p.HasExtInfo && p.ExtInfo != nil && p.ExtInfo[15]&smp.MlnxSpeedFDR10 != 0
}

// SetExtInfo stores a Mellanox ExtendedPortInfo.
func (p *PhysPort) SetExtInfo(raw []byte) {
	if p.ExtInfo == nil {
		p.ExtInfo = new([smp.DataSize]byte)
	}
	copy(p.ExtInfo[:], raw)
	p.HasExtInfo = true
}

func (p *PhysPort) String() string {
	return fmt.Sprintf("0x%016x[%d]", p.Node.GUID(), p.Num)
}

// Port is a logical port: one per port GUID, owning a LID range.
type Port struct {
	GUID uint64
	Node *Node
	Phys *PhysPort // for a switch, port 0
}

// BaseLID is the logical port's base LID.
func (p *Port) BaseLID() uint16 { return p.Phys.BaseLID() }

// LMC is the logical port's LMC.
func (p *Port) LMC() uint8 { return p.Phys.LMC() }

// LIDRange returns the first and last LID of the port (base .. base+2^LMC-1).
func (p *Port) LIDRange() (uint16, uint16) {
	b := p.BaseLID()
	if b == 0 {
		return 0, 0
	}
	return b, b + uint16(1)<<p.LMC() - 1
}

// Fabric is a discovered (or loaded) subnet.
type Fabric struct {
	// Nodes in discovery order.
	Nodes []*Node
	// From is the node discovery started at, FromPort its port.
	From     *Node
	FromPort uint8
	// MaxHops is the largest hop count seen from the start node.
	MaxHops int
	// PortHashOrder, when set, is the order in which libibnetdisc enters
	// the ports into its port hash table (ibnetdiscover's cache lists each
	// hash bucket newest first); discovery's replay of ibnetdiscover and
	// the cache loader set it.
	PortHashOrder []*PhysPort

	byGUID map[uint64]*Node
	ports  map[uint64]*Port
	lids   []*Port // by unicast LID, as long as the highest LID registered needs
}

// NewFabric returns an empty fabric.
func NewFabric() *Fabric {
	return &Fabric{
		byGUID: make(map[uint64]*Node),
		ports:  make(map[uint64]*Port),
	}
}

// AddNode adds a node built from a NodeInfo (raw 64 bytes) reached by
// path. It fails with ErrDuplicateGUID when the node GUID is known: the
// caller decides what a duplicate means, the model never merges.
func (f *Fabric) AddNode(raw []byte, path smp.DRPath) (*Node, error) {
	var ni smp.NodeInfo
	if err := ni.UnmarshalBinary(raw); err != nil {
		return nil, err
	}
	if old, ok := f.byGUID[ni.NodeGUID]; ok {
		return old, fmt.Errorf("node 0x%016x: %w", ni.NodeGUID, ErrDuplicateGUID)
	}
	n := &Node{Info: ni, Path: path, Index: len(f.Nodes)}
	n.SetRawInfo(raw)
	n.Ports = make([]*PhysPort, int(ni.NumPorts)+1)
	f.Nodes = append(f.Nodes, n)
	f.byGUID[ni.NodeGUID] = n
	if f.From == nil {
		f.From = n
		f.FromPort = ni.LocalPortNum
	}
	return n, nil
}

// AppendNode adds n as it is (used by cache loaders and simulators); it
// fails with ErrDuplicateGUID when its GUID is known.
func (f *Fabric) AppendNode(n *Node) error {
	if _, ok := f.byGUID[n.GUID()]; ok {
		return fmt.Errorf("node 0x%016x: %w", n.GUID(), ErrDuplicateGUID)
	}
	n.Index = len(f.Nodes)
	f.Nodes = append(f.Nodes, n)
	f.byGUID[n.GUID()] = n
	return nil
}

// NodeByGUID returns the node with that GUID, or nil.
func (f *Fabric) NodeByGUID(guid uint64) *Node { return f.byGUID[guid] }

// PortByGUID returns the logical port with that GUID, or nil.
func (f *Fabric) PortByGUID(guid uint64) *Port { return f.ports[guid] }

// PortByLID returns the logical port whose LID range holds lid, or nil.
func (f *Fabric) PortByLID(lid uint16) *Port {
	if int(lid) < len(f.lids) {
		return f.lids[lid]
	}
	return nil
}

// RegisterPort records the logical port behind physical port pp (its GUID
// and its LID range) once its PortInfo is known. The first port to claim
// a GUID or a LID keeps it; a later claimant gets ErrDuplicateGUID (GUID)
// or an error naming the LID, and is not registered.
func (f *Fabric) RegisterPort(pp *PhysPort) error {
	if pp.Node.IsSwitch() && pp.Num != 0 {
		return nil // external switch ports share port 0's logical port
	}
	lp, ok := f.ports[pp.GUID]
	if ok && lp.Phys != pp {
		return fmt.Errorf("port 0x%016x: %w", pp.GUID, ErrDuplicateGUID)
	}
	if !ok {
		lp = &Port{GUID: pp.GUID, Node: pp.Node, Phys: pp}
		f.ports[pp.GUID] = lp
	}
	lo, hi := lp.LIDRange()
	if lo == 0 {
		return nil
	}
	var err error
	for l := uint32(lo); l <= uint32(hi) && l <= 0xBFFF; l++ {
		// a slice, not a map: 8 bytes a LID up to the highest, a
		// fraction of a map's cost on a fabric of any size
		for int(l) >= len(f.lids) {
			f.lids = append(f.lids, nil)
		}
		if other := f.lids[l]; other != nil && other != lp {
			if err == nil {
				err = fmt.Errorf("LID %d of port 0x%016x already belongs to port 0x%016x", l, lp.GUID, other.GUID)
			}
			continue
		}
		f.lids[l] = lp
	}
	return err
}

// NumLogicalPorts returns the number of logical ports registered.
func (f *Fabric) NumLogicalPorts() int { return len(f.ports) }

// MaxLID returns the highest LID registered.
func (f *Fabric) MaxLID() uint16 {
	for l := len(f.lids) - 1; l > 0; l-- {
		if f.lids[l] != nil {
			return uint16(l)
		}
	}
	return 0
}

// Switches returns the switches in discovery order.
func (f *Fabric) Switches() []*Node { return f.ofType(smp.NodeSwitch) }

// CAs returns the channel adapters in discovery order.
func (f *Fabric) CAs() []*Node { return f.ofType(smp.NodeCA) }

// Routers returns the routers in discovery order.
func (f *Fabric) Routers() []*Node { return f.ofType(smp.NodeRouter) }

func (f *Fabric) ofType(t uint8) []*Node {
	var out []*Node
	for _, n := range f.Nodes {
		if n.Type() == t {
			out = append(out, n)
		}
	}
	return out
}

// Links calls fn once for every link (each pair of linked ports once,
// from the end whose node comes first in discovery order, or the lower
// port number on a loopback link).
func (f *Fabric) Links(fn func(a, b *PhysPort)) {
	for _, n := range f.Nodes {
		for _, p := range n.Ports {
			if p == nil || p.Remote == nil {
				continue
			}
			r := p.Remote
			if r.Node.Index < n.Index || (r.Node == n && r.Num < p.Num) {
				continue
			}
			fn(p, r)
		}
	}
}
