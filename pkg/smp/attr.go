package smp

import (
	"encoding/binary"
	"strconv"
)

// SMP attribute IDs.
const (
	AttrNodeDescription       uint16 = 0x0010
	AttrNodeInfo              uint16 = 0x0011
	AttrSwitchInfo            uint16 = 0x0012
	AttrGUIDInfo              uint16 = 0x0014
	AttrPortInfo              uint16 = 0x0015
	AttrPKeyTable             uint16 = 0x0016
	AttrSLtoVLMappingTable    uint16 = 0x0017
	AttrVLArbitrationTable    uint16 = 0x0018
	AttrLinearForwardingTable uint16 = 0x0019
	AttrRandomForwardingTable uint16 = 0x001A
	AttrMulticastFwdTable     uint16 = 0x001B
	AttrSMInfo                uint16 = 0x0020
	AttrPortInfoExtended      uint16 = 0x0033
	AttrMlnxExtPortInfo       uint16 = 0xFF90
)

// Node types of NodeInfo.
const (
	NodeCA     uint8 = 1
	NodeSwitch uint8 = 2
	NodeRouter uint8 = 3
)

// NodeInfo is the NodeInfo attribute (0x0011), 40 bytes used.
type NodeInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        uint8
	NumPorts        uint8
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	LocalPortNum    uint8
	VendorID        uint32 // 24 bits
}

// NodeInfoSize is the number of bytes NodeInfo uses.
const NodeInfoSize = 40

// UnmarshalBinary decodes NodeInfo from the first 40 bytes of b.
func (n *NodeInfo) UnmarshalBinary(b []byte) error {
	if len(b) < NodeInfoSize {
		return ErrShort
	}
	n.BaseVersion = b[0]
	n.ClassVersion = b[1]
	n.NodeType = b[2]
	n.NumPorts = b[3]
	n.SystemImageGUID = binary.BigEndian.Uint64(b[4:])
	n.NodeGUID = binary.BigEndian.Uint64(b[12:])
	n.PortGUID = binary.BigEndian.Uint64(b[20:])
	n.PartitionCap = binary.BigEndian.Uint16(b[28:])
	n.DeviceID = binary.BigEndian.Uint16(b[30:])
	n.Revision = binary.BigEndian.Uint32(b[32:])
	n.LocalPortNum = b[36]
	n.VendorID = uint32(b[37])<<16 | uint32(b[38])<<8 | uint32(b[39])
	return nil
}

// MarshalTo encodes n into the first 40 bytes of b; the rest of a 64-byte
// data area is left as it is.
func (n *NodeInfo) MarshalTo(b []byte) error {
	if len(b) < NodeInfoSize {
		return ErrShort
	}
	b[0] = n.BaseVersion
	b[1] = n.ClassVersion
	b[2] = n.NodeType
	b[3] = n.NumPorts
	binary.BigEndian.PutUint64(b[4:], n.SystemImageGUID)
	binary.BigEndian.PutUint64(b[12:], n.NodeGUID)
	binary.BigEndian.PutUint64(b[20:], n.PortGUID)
	binary.BigEndian.PutUint16(b[28:], n.PartitionCap)
	binary.BigEndian.PutUint16(b[30:], n.DeviceID)
	binary.BigEndian.PutUint32(b[32:], n.Revision)
	b[36] = n.LocalPortNum
	b[37] = byte(n.VendorID >> 16)
	b[38] = byte(n.VendorID >> 8)
	b[39] = byte(n.VendorID)
	return nil
}

// MarshalBinary encodes n as a 64-byte attribute.
func (n *NodeInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, n.MarshalTo(b)
}

// NodeDescription is the 64-byte NodeDescription attribute (0x0010).
type NodeDescription [DataSize]byte

// UnmarshalBinary copies the first 64 bytes of b.
func (d *NodeDescription) UnmarshalBinary(b []byte) error {
	if len(b) < DataSize {
		return ErrShort
	}
	copy(d[:], b)
	return nil
}

// MarshalTo copies d into the first 64 bytes of b.
func (d *NodeDescription) MarshalTo(b []byte) error {
	if len(b) < DataSize {
		return ErrShort
	}
	copy(b, d[:])
	return nil
}

// SetString stores s, truncated to 64 bytes and NUL-padded.
func (d *NodeDescription) SetString(s string) {
	*d = NodeDescription{}
	copy(d[:], s)
}

// String returns the description as infiniband-diags print it: up to the
// first NUL, at most 64 bytes, non-printable bytes turned into spaces.
func (d *NodeDescription) String() string {
	n := d.length()
	clean := true
	for _, c := range d[:n] {
		if c < 0x20 || c > 0x7e {
			clean = false
			break
		}
	}
	if clean {
		return string(d[:n])
	}
	b := make([]byte, n)
	for i, c := range d[:n] {
		if c < 0x20 || c > 0x7e {
			c = ' '
		}
		b[i] = c
	}
	return string(b)
}

// AppendTo appends the description as String returns it.
func (d *NodeDescription) AppendTo(b []byte) []byte {
	n := d.length()
	k := len(b)
	b = append(b, d[:n]...)
	for i, c := range b[k:] {
		if c < 0x20 || c > 0x7e {
			b[k+i] = ' '
		}
	}
	return b
}

// length is the description's length up to its first NUL.
func (d *NodeDescription) length() int {
	n := 0
	for n < len(d) && d[n] != 0 {
		n++
	}
	return n
}

// SwitchInfo is the SwitchInfo attribute (0x0012), 20 bytes used.
type SwitchInfo struct {
	LinearFDBCap               uint16
	RandomFDBCap               uint16
	MulticastFDBCap            uint16
	LinearFDBTop               uint16
	DefaultPort                uint8
	DefaultMcastPrimaryPort    uint8
	DefaultMcastNotPrimaryPort uint8
	LifeTimeValue              uint8 // 5 bits
	PortStateChange            bool
	OptimizedSLtoVLMapping     uint8 // 2 bits
	LIDsPerPort                uint16
	PartitionEnforcementCap    uint16
	InboundEnforcementCap      bool
	OutboundEnforcementCap     bool
	FilterRawInboundCap        bool
	FilterRawOutboundCap       bool
	EnhancedPort0              bool
	MulticastFDBTop            uint16
}

// SwitchInfoSize is the number of bytes SwitchInfo uses.
const SwitchInfoSize = 20

// UnmarshalBinary decodes SwitchInfo from the first 20 bytes of b.
func (s *SwitchInfo) UnmarshalBinary(b []byte) error {
	if len(b) < SwitchInfoSize {
		return ErrShort
	}
	s.LinearFDBCap = binary.BigEndian.Uint16(b[0:])
	s.RandomFDBCap = binary.BigEndian.Uint16(b[2:])
	s.MulticastFDBCap = binary.BigEndian.Uint16(b[4:])
	s.LinearFDBTop = binary.BigEndian.Uint16(b[6:])
	s.DefaultPort = b[8]
	s.DefaultMcastPrimaryPort = b[9]
	s.DefaultMcastNotPrimaryPort = b[10]
	s.LifeTimeValue = b[11] >> 3
	s.PortStateChange = b[11]&0x04 != 0
	s.OptimizedSLtoVLMapping = b[11] & 0x03
	s.LIDsPerPort = binary.BigEndian.Uint16(b[12:])
	s.PartitionEnforcementCap = binary.BigEndian.Uint16(b[14:])
	s.InboundEnforcementCap = b[16]&0x80 != 0
	s.OutboundEnforcementCap = b[16]&0x40 != 0
	s.FilterRawInboundCap = b[16]&0x20 != 0
	s.FilterRawOutboundCap = b[16]&0x10 != 0
	s.EnhancedPort0 = b[16]&0x08 != 0
	s.MulticastFDBTop = binary.BigEndian.Uint16(b[18:])
	return nil
}

// MarshalTo encodes s into the first 20 bytes of b.
func (s *SwitchInfo) MarshalTo(b []byte) error {
	if len(b) < SwitchInfoSize {
		return ErrShort
	}
	binary.BigEndian.PutUint16(b[0:], s.LinearFDBCap)
	binary.BigEndian.PutUint16(b[2:], s.RandomFDBCap)
	binary.BigEndian.PutUint16(b[4:], s.MulticastFDBCap)
	binary.BigEndian.PutUint16(b[6:], s.LinearFDBTop)
	b[8] = s.DefaultPort
	b[9] = s.DefaultMcastPrimaryPort
	b[10] = s.DefaultMcastNotPrimaryPort
	b[11] = s.LifeTimeValue<<3 | bit(s.PortStateChange, 0x04) | s.OptimizedSLtoVLMapping&0x03
	binary.BigEndian.PutUint16(b[12:], s.LIDsPerPort)
	binary.BigEndian.PutUint16(b[14:], s.PartitionEnforcementCap)
	b[16] = bit(s.InboundEnforcementCap, 0x80) | bit(s.OutboundEnforcementCap, 0x40) |
		bit(s.FilterRawInboundCap, 0x20) | bit(s.FilterRawOutboundCap, 0x10) | bit(s.EnhancedPort0, 0x08)
	b[17] = 0
	binary.BigEndian.PutUint16(b[18:], s.MulticastFDBTop)
	return nil
}

// MarshalBinary encodes s as a 64-byte attribute.
func (s *SwitchInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, s.MarshalTo(b)
}

func bit(v bool, mask byte) byte {
	if v {
		return mask
	}
	return 0
}

// AttrName names an SMP attribute as the IB specification does
// ("NodeInfo"), or "0x<id>" for one this package does not know.
func AttrName(id uint16) string {
	switch id {
	case AttrNodeDescription:
		return "NodeDescription"
	case AttrNodeInfo:
		return "NodeInfo"
	case AttrSwitchInfo:
		return "SwitchInfo"
	case AttrGUIDInfo:
		return "GUIDInfo"
	case AttrPortInfo:
		return "PortInfo"
	case AttrPKeyTable:
		return "P_KeyTable"
	case AttrSLtoVLMappingTable:
		return "SLtoVLMappingTable"
	case AttrVLArbitrationTable:
		return "VLArbitrationTable"
	case AttrLinearForwardingTable:
		return "LinearForwardingTable"
	case AttrRandomForwardingTable:
		return "RandomForwardingTable"
	case AttrMulticastFwdTable:
		return "MulticastForwardingTable"
	case AttrSMInfo:
		return "SMInfo"
	case AttrPortInfoExtended:
		return "PortInfoExtended"
	case AttrMlnxExtPortInfo:
		return "MlnxExtendedPortInfo"
	}
	return "0x" + strconv.FormatUint(uint64(id), 16)
}
