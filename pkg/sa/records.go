package sa

import (
	"encoding/binary"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Record sizes (bytes used) and their strides in an answer
// (AttributeOffset × 8).
const (
	PathRecordSize     = 64
	NodeRecordSize     = 108 // stride 112
	PortInfoRecordSize = 68  // stride 72
	MCMemberRecordSize = 52  // stride 56
)

// PathRecord component mask bits (ComponentMask of a PathRecord query).
const (
	PRServiceIDMSB  uint64 = 1 << 0
	PRServiceIDLSB  uint64 = 1 << 1
	PRDGID          uint64 = 1 << 2
	PRSGID          uint64 = 1 << 3
	PRDLID          uint64 = 1 << 4
	PRSLID          uint64 = 1 << 5
	PRRawTraffic    uint64 = 1 << 6
	PRFlowLabel     uint64 = 1 << 8
	PRHopLimit      uint64 = 1 << 9
	PRTClass        uint64 = 1 << 10
	PRReversible    uint64 = 1 << 11
	PRNumbPath      uint64 = 1 << 12
	PRPKey          uint64 = 1 << 13
	PRQoSClass      uint64 = 1 << 14
	PRSL            uint64 = 1 << 15
	PRMTUSelector   uint64 = 1 << 16
	PRMTU           uint64 = 1 << 17
	PRRateSelector  uint64 = 1 << 18
	PRRate          uint64 = 1 << 19
	PRPLTSelector   uint64 = 1 << 20
	PRPacketLife    uint64 = 1 << 21
	PRPreference    uint64 = 1 << 22
	NRLID           uint64 = 1 << 0 // NodeRecord: LID
	NRNodeGUID      uint64 = 1 << 7 // NodeRecord: NodeInfo.NodeGUID
	NRPortGUID      uint64 = 1 << 8 // NodeRecord: NodeInfo.PortGUID
	PIRLID          uint64 = 1 << 0 // PortInfoRecord: EndportLID
	PIRPortNum      uint64 = 1 << 1 // PortInfoRecord: PortNum
	MCRMGID         uint64 = 1 << 0 // MCMemberRecord: MGID
	MCRPortGID      uint64 = 1 << 1 // MCMemberRecord: PortGID
	MCRMLID         uint64 = 1 << 3 // MCMemberRecord: MLID
	MCRJoinState    uint64 = 1 << 16
	selectorExactly uint8  = 2
)

// Selectors of the MTU, rate and packet-lifetime fields.
const (
	SelectorGreater uint8 = 0
	SelectorLess    uint8 = 1
	SelectorExactly uint8 = selectorExactly
	SelectorLargest uint8 = 3
)

// GID is a 128-bit global identifier in wire order.
type GID [16]byte

// PathRecord is the SA PathRecord (attribute 0x0035), 64 bytes.
type PathRecord struct {
	ServiceID          uint64
	DGID, SGID         GID
	DLID, SLID         uint16
	RawTraffic         bool
	FlowLabel          uint32 // 20 bits
	HopLimit           uint8
	TClass             uint8
	Reversible         bool
	NumbPath           uint8  // 7 bits
	PKey               uint16 //
	QoSClass           uint16 // 12 bits
	SL                 uint8  // 4 bits
	MTUSelector        uint8  // 2 bits
	MTU                uint8  // 6 bits, 1=256 .. 5=4096
	RateSelector       uint8  // 2 bits
	Rate               uint8  // 6 bits, PathRecord rate code
	PacketLifeSelector uint8  // 2 bits
	PacketLife         uint8  // 6 bits
	Preference         uint8
}

// UnmarshalBinary decodes a PathRecord from the first 64 bytes of b.
func (p *PathRecord) UnmarshalBinary(b []byte) error {
	if len(b) < PathRecordSize {
		return ErrShort
	}
	p.ServiceID = binary.BigEndian.Uint64(b[0:])
	copy(p.DGID[:], b[8:24])
	copy(p.SGID[:], b[24:40])
	p.DLID = binary.BigEndian.Uint16(b[40:])
	p.SLID = binary.BigEndian.Uint16(b[42:])
	w := binary.BigEndian.Uint32(b[44:])
	p.RawTraffic = w>>31 != 0
	p.FlowLabel = w >> 8 & 0xFFFFF
	p.HopLimit = uint8(w)
	p.TClass = b[48]
	p.Reversible = b[49]&0x80 != 0
	p.NumbPath = b[49] & 0x7F
	p.PKey = binary.BigEndian.Uint16(b[50:])
	q := binary.BigEndian.Uint16(b[52:])
	p.QoSClass = q >> 4
	p.SL = uint8(q & 0xF)
	p.MTUSelector, p.MTU = b[54]>>6, b[54]&0x3F
	p.RateSelector, p.Rate = b[55]>>6, b[55]&0x3F
	p.PacketLifeSelector, p.PacketLife = b[56]>>6, b[56]&0x3F
	p.Preference = b[57]
	return nil
}

// MarshalTo encodes p into the first 64 bytes of b (reserved bits zero).
func (p *PathRecord) MarshalTo(b []byte) error {
	if len(b) < PathRecordSize {
		return ErrShort
	}
	clear(b[:PathRecordSize])
	binary.BigEndian.PutUint64(b[0:], p.ServiceID)
	copy(b[8:], p.DGID[:])
	copy(b[24:], p.SGID[:])
	binary.BigEndian.PutUint16(b[40:], p.DLID)
	binary.BigEndian.PutUint16(b[42:], p.SLID)
	w := (p.FlowLabel&0xFFFFF)<<8 | uint32(p.HopLimit)
	if p.RawTraffic {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[44:], w)
	b[48] = p.TClass
	b[49] = p.NumbPath & 0x7F
	if p.Reversible {
		b[49] |= 0x80
	}
	binary.BigEndian.PutUint16(b[50:], p.PKey)
	binary.BigEndian.PutUint16(b[52:], (p.QoSClass&0xFFF)<<4|uint16(p.SL&0xF))
	b[54] = p.MTUSelector<<6 | p.MTU&0x3F
	b[55] = p.RateSelector<<6 | p.Rate&0x3F
	b[56] = p.PacketLifeSelector<<6 | p.PacketLife&0x3F
	b[57] = p.Preference
	return nil
}

// NodeRecord is the SA NodeRecord (attribute 0x0011): a node's LID with
// its NodeInfo and NodeDescription.
type NodeRecord struct {
	LID             uint16
	NodeInfo        smp.NodeInfo
	NodeDescription smp.NodeDescription
}

// UnmarshalBinary decodes a NodeRecord from the first 108 bytes of b.
func (n *NodeRecord) UnmarshalBinary(b []byte) error {
	if len(b) < NodeRecordSize {
		return ErrShort
	}
	n.LID = binary.BigEndian.Uint16(b)
	n.NodeInfo.UnmarshalBinary(b[4:])         // cannot fail: length checked
	n.NodeDescription.UnmarshalBinary(b[44:]) // idem
	return nil
}

// MarshalTo encodes n into the first 108 bytes of b.
func (n *NodeRecord) MarshalTo(b []byte) error {
	if len(b) < NodeRecordSize {
		return ErrShort
	}
	clear(b[:NodeRecordSize])
	binary.BigEndian.PutUint16(b, n.LID)
	n.NodeInfo.MarshalTo(b[4:44])
	n.NodeDescription.MarshalTo(b[44:])
	return nil
}

// PortInfoRecord is the SA PortInfoRecord (attribute 0x0012): a port's
// LID (its node's for a switch port) and number with its PortInfo.
type PortInfoRecord struct {
	LID      uint16
	PortNum  uint8
	Options  uint8
	PortInfo smp.PortInfo
}

// UnmarshalBinary decodes a PortInfoRecord from the first 68 bytes of b.
func (p *PortInfoRecord) UnmarshalBinary(b []byte) error {
	if len(b) < PortInfoRecordSize {
		return ErrShort
	}
	p.LID = binary.BigEndian.Uint16(b)
	p.PortNum = b[2]
	p.Options = b[3]
	p.PortInfo.UnmarshalBinary(b[4:]) // cannot fail: length checked
	return nil
}

// MarshalTo encodes p into the first 68 bytes of b.
func (p *PortInfoRecord) MarshalTo(b []byte) error {
	if len(b) < PortInfoRecordSize {
		return ErrShort
	}
	clear(b[:PortInfoRecordSize])
	binary.BigEndian.PutUint16(b, p.LID)
	b[2], b[3] = p.PortNum, p.Options
	p.PortInfo.MarshalTo(b[4:])
	return nil
}

// MCMemberRecord is the SA MCMemberRecord (attribute 0x0038), 52 bytes
// used: a multicast group's address vector and one member's join state.
type MCMemberRecord struct {
	MGID, PortGID      GID
	QKey               uint32
	MLID               uint16
	MTUSelector, MTU   uint8
	TClass             uint8
	PKey               uint16
	RateSelector, Rate uint8
	PacketLifeSelector uint8
	PacketLife         uint8
	SL                 uint8  // 4 bits
	FlowLabel          uint32 // 20 bits
	HopLimit           uint8
	Scope              uint8 // 4 bits
	JoinState          uint8 // 4 bits: full, non, send-only non member
	ProxyJoin          bool
}

// UnmarshalBinary decodes an MCMemberRecord from the first 52 bytes of b.
func (m *MCMemberRecord) UnmarshalBinary(b []byte) error {
	if len(b) < MCMemberRecordSize {
		return ErrShort
	}
	copy(m.MGID[:], b[0:16])
	copy(m.PortGID[:], b[16:32])
	m.QKey = binary.BigEndian.Uint32(b[32:])
	m.MLID = binary.BigEndian.Uint16(b[36:])
	m.MTUSelector, m.MTU = b[38]>>6, b[38]&0x3F
	m.TClass = b[39]
	m.PKey = binary.BigEndian.Uint16(b[40:])
	m.RateSelector, m.Rate = b[42]>>6, b[42]&0x3F
	m.PacketLifeSelector, m.PacketLife = b[43]>>6, b[43]&0x3F
	w := binary.BigEndian.Uint32(b[44:])
	m.SL = uint8(w >> 28)
	m.FlowLabel = w >> 8 & 0xFFFFF
	m.HopLimit = uint8(w)
	m.Scope, m.JoinState = b[48]>>4, b[48]&0xF
	m.ProxyJoin = b[49]&0x80 != 0
	return nil
}

// MarshalTo encodes m into the first 52 bytes of b.
func (m *MCMemberRecord) MarshalTo(b []byte) error {
	if len(b) < MCMemberRecordSize {
		return ErrShort
	}
	clear(b[:MCMemberRecordSize])
	copy(b[0:], m.MGID[:])
	copy(b[16:], m.PortGID[:])
	binary.BigEndian.PutUint32(b[32:], m.QKey)
	binary.BigEndian.PutUint16(b[36:], m.MLID)
	b[38] = m.MTUSelector<<6 | m.MTU&0x3F
	b[39] = m.TClass
	binary.BigEndian.PutUint16(b[40:], m.PKey)
	b[42] = m.RateSelector<<6 | m.Rate&0x3F
	b[43] = m.PacketLifeSelector<<6 | m.PacketLife&0x3F
	binary.BigEndian.PutUint32(b[44:], uint32(m.SL&0xF)<<28|(m.FlowLabel&0xFFFFF)<<8|uint32(m.HopLimit))
	b[48] = m.Scope<<4 | m.JoinState&0xF
	if m.ProxyJoin {
		b[49] = 0x80
	}
	return nil
}
