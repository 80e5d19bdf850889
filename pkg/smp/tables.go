package smp

import "encoding/binary"

// Table geometry of the forwarding, partition, SL-to-VL, VL arbitration
// and GUID attributes.
const (
	LFTBlockSize    = 64 // LinearForwardingTable entries (LIDs) per block
	MFTBlockSize    = 32 // MulticastForwardingTable MLIDs per block
	MFTPortsPerMask = 16 // ports covered by one MFT position
	PKeyBlockSize   = 32 // P_KeyTable entries per block
	VLArbBlockSize  = 32 // VLArbitrationTable entries per block
	GUIDBlockSize   = 8  // GUIDInfo GUIDs per block
	NumSLs          = 16 // service levels mapped by SLtoVLMappingTable

	// MulticastLIDBase is the first multicast LID (block 0, entry 0 of the MFT).
	MulticastLIDBase uint16 = 0xC000
	// LFTNoRoute is the LinearForwardingTable entry meaning "no route".
	LFTNoRoute uint8 = 0xFF
	// VLDrop is the SLtoVLMappingTable VL meaning "drop packets on this SL".
	VLDrop uint8 = 15
)

// LinearForwardingTable is one block of the LinearForwardingTable
// attribute (0x0019): the egress port for LIDs 64*block .. 64*block+63
// (0 = management port, LFTNoRoute = no route).
type LinearForwardingTable [LFTBlockSize]uint8

// UnmarshalBinary decodes the 64 entries from the first 64 bytes of b.
func (t *LinearForwardingTable) UnmarshalBinary(b []byte) error {
	if len(b) < LFTBlockSize {
		return ErrShort
	}
	copy(t[:], b)
	return nil
}

// MarshalTo encodes t into the first 64 bytes of b.
func (t *LinearForwardingTable) MarshalTo(b []byte) error {
	if len(b) < LFTBlockSize {
		return ErrShort
	}
	copy(b, t[:])
	return nil
}

// MarshalBinary encodes t as a 64-byte attribute.
func (t *LinearForwardingTable) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, t.MarshalTo(b)
}

// LFTBlock returns the LinearForwardingTable block (the attribute
// modifier) that holds lid, and the entry index of lid inside it.
func LFTBlock(lid uint16) (block uint32, index int) {
	return uint32(lid / LFTBlockSize), int(lid % LFTBlockSize)
}

// LFTBlocks is the number of blocks to read for a switch whose
// SwitchInfo.LinearFDBTop is top (blocks 0 .. top/64).
func LFTBlocks(top uint16) int { return int(top/LFTBlockSize) + 1 }

// MulticastForwardingTable is one block of the MulticastForwardingTable
// attribute (0x001B): 32 port masks, one per MLID, each covering the 16
// ports of the modifier's position (bit i = port 16*position+i).
type MulticastForwardingTable [MFTBlockSize]uint16

// UnmarshalBinary decodes the 32 masks from the first 64 bytes of b.
func (t *MulticastForwardingTable) UnmarshalBinary(b []byte) error {
	if len(b) < 2*MFTBlockSize {
		return ErrShort
	}
	for i := range t {
		t[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return nil
}

// MarshalTo encodes t into the first 64 bytes of b.
func (t *MulticastForwardingTable) MarshalTo(b []byte) error {
	if len(b) < 2*MFTBlockSize {
		return ErrShort
	}
	for i, v := range t {
		binary.BigEndian.PutUint16(b[2*i:], v)
	}
	return nil
}

// MarshalBinary encodes t as a 64-byte attribute.
func (t *MulticastForwardingTable) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, t.MarshalTo(b)
}

// MFTModifier is the attribute modifier of a MulticastForwardingTable
// block (bits 8..0) at a port-mask position (bits 31..28).
func MFTModifier(block uint16, position uint8) uint32 {
	return uint32(position&0x0F)<<28 | uint32(block&0x1FF)
}

// MFTSplitModifier returns the block and position of an MFT modifier.
func MFTSplitModifier(mod uint32) (block uint16, position uint8) {
	return uint16(mod & 0x1FF), uint8(mod >> 28)
}

// MFTBlock returns the MFT block holding a multicast LID and its entry
// index. ok is false for LIDs outside 0xC000..0xFFFE.
func MFTBlock(mlid uint16) (block uint16, index int, ok bool) {
	if mlid < MulticastLIDBase || mlid == PermissiveLID {
		return 0, 0, false
	}
	off := mlid - MulticastLIDBase
	return off / MFTBlockSize, int(off % MFTBlockSize), true
}

// MFTPosition returns the MFT position covering port and the bit of port
// inside that position's masks.
func MFTPosition(port uint8) (position uint8, mask uint16) {
	return port / MFTPortsPerMask, 1 << (port % MFTPortsPerMask)
}

// PKey is a partition key: bit 15 is the membership bit (1 = full member,
// 0 = limited member), bits 14..0 the base.
type PKey uint16

// PKey constants.
const (
	PKeyFullMember PKey = 0x8000 // membership bit
	PKeyBaseMask   PKey = 0x7FFF
	PKeyDefault    PKey = 0xFFFF // full member of the default partition
	PKeyInvalid    PKey = 0x0000 // unused table entry
)

// Base is the partition number without the membership bit.
func (k PKey) Base() uint16 { return uint16(k & PKeyBaseMask) }

// Full reports whether the membership bit is set.
func (k PKey) Full() bool { return k&PKeyFullMember != 0 }

// Valid reports whether k names a partition (a base of 0 is invalid).
func (k PKey) Valid() bool { return k.Base() != 0 }

// SameBase reports whether k and o are the same partition, whatever their
// membership.
func (k PKey) SameBase(o PKey) bool { return k.Base() == o.Base() }

// PKeyTable is one block of the P_KeyTable attribute (0x0016).
type PKeyTable [PKeyBlockSize]PKey

// UnmarshalBinary decodes the 32 keys from the first 64 bytes of b.
func (t *PKeyTable) UnmarshalBinary(b []byte) error {
	if len(b) < 2*PKeyBlockSize {
		return ErrShort
	}
	for i := range t {
		t[i] = PKey(binary.BigEndian.Uint16(b[2*i:]))
	}
	return nil
}

// MarshalTo encodes t into the first 64 bytes of b.
func (t *PKeyTable) MarshalTo(b []byte) error {
	if len(b) < 2*PKeyBlockSize {
		return ErrShort
	}
	for i, v := range t {
		binary.BigEndian.PutUint16(b[2*i:], uint16(v))
	}
	return nil
}

// MarshalBinary encodes t as a 64-byte attribute.
func (t *PKeyTable) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, t.MarshalTo(b)
}

// PKeyModifier is the P_KeyTable attribute modifier: block in bits 15..0,
// and for switch external ports the port number in bits 31..16 (0 for CA
// ports and switch port 0).
func PKeyModifier(block uint16, port uint8) uint32 {
	return uint32(port)<<16 | uint32(block)
}

// PKeyBlocks is the number of P_KeyTable blocks holding capacity entries
// (NodeInfo.PartitionCap, or SwitchInfo.PartitionEnforcementCap for
// switch external ports).
func PKeyBlocks(capacity uint16) int {
	return (int(capacity) + PKeyBlockSize - 1) / PKeyBlockSize
}

// SLtoVLMappingTable is the SLtoVLMappingTable attribute (0x0017): the VL
// (0..15, VLDrop = drop) for each of the 16 SLs.
type SLtoVLMappingTable [NumSLs]uint8

// SLtoVLSize is the number of bytes the SLtoVLMappingTable uses.
const SLtoVLSize = 8

// UnmarshalBinary decodes the table from the first 8 bytes of b: SL i is
// in byte i/2, the high nibble for even SLs.
func (t *SLtoVLMappingTable) UnmarshalBinary(b []byte) error {
	if len(b) < SLtoVLSize {
		return ErrShort
	}
	for i := 0; i < SLtoVLSize; i++ {
		t[2*i] = b[i] >> 4
		t[2*i+1] = b[i] & 0x0F
	}
	return nil
}

// MarshalTo encodes t into the first 8 bytes of b.
func (t *SLtoVLMappingTable) MarshalTo(b []byte) error {
	if len(b) < SLtoVLSize {
		return ErrShort
	}
	for i := 0; i < SLtoVLSize; i++ {
		b[i] = t[2*i]<<4 | t[2*i+1]&0x0F
	}
	return nil
}

// MarshalBinary encodes t as a 64-byte attribute.
func (t *SLtoVLMappingTable) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, t.MarshalTo(b)
}

// SL2VLModifier is the SLtoVLMappingTable modifier for a switch: input
// port in bits 15..8, output port in bits 7..0 (0 for CAs and routers).
func SL2VLModifier(in, out uint8) uint32 { return uint32(in)<<8 | uint32(out) }

// VLArbEntry is one VLArbitrationTable entry.
type VLArbEntry struct {
	VL     uint8 // 4 bits
	Weight uint8
}

// VLArbitrationTable is one block of the VLArbitrationTable attribute
// (0x0018): 32 VL/weight entries.
type VLArbitrationTable [VLArbBlockSize]VLArbEntry

// UnmarshalBinary decodes the 32 entries from the first 64 bytes of b.
func (t *VLArbitrationTable) UnmarshalBinary(b []byte) error {
	if len(b) < 2*VLArbBlockSize {
		return ErrShort
	}
	for i := range t {
		t[i] = VLArbEntry{VL: b[2*i] & 0x0F, Weight: b[2*i+1]}
	}
	return nil
}

// MarshalTo encodes t into the first 64 bytes of b; reserved bits are zero.
func (t *VLArbitrationTable) MarshalTo(b []byte) error {
	if len(b) < 2*VLArbBlockSize {
		return ErrShort
	}
	for i, e := range t {
		b[2*i] = e.VL & 0x0F
		b[2*i+1] = e.Weight
	}
	return nil
}

// MarshalBinary encodes t as a 64-byte attribute.
func (t *VLArbitrationTable) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, t.MarshalTo(b)
}

// VLArbitrationTable blocks (the modifier's bits 31..16).
const (
	VLArbLowLower  uint8 = 1 // low-priority entries 0..31
	VLArbLowUpper  uint8 = 2 // low-priority entries 32..63
	VLArbHighLower uint8 = 3 // high-priority entries 0..31
	VLArbHighUpper uint8 = 4 // high-priority entries 32..63
)

// VLArbModifier is the VLArbitrationTable modifier: block (1..4) in bits
// 31..16, the output port in bits 15..0 (switches; 0 otherwise).
func VLArbModifier(block, port uint8) uint32 { return uint32(block)<<16 | uint32(port) }

// GUIDInfo is one block of the GUIDInfo attribute (0x0014): 8 GUIDs.
type GUIDInfo [GUIDBlockSize]uint64

// UnmarshalBinary decodes the 8 GUIDs from the first 64 bytes of b.
func (g *GUIDInfo) UnmarshalBinary(b []byte) error {
	if len(b) < 8*GUIDBlockSize {
		return ErrShort
	}
	for i := range g {
		g[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return nil
}

// MarshalTo encodes g into the first 64 bytes of b.
func (g *GUIDInfo) MarshalTo(b []byte) error {
	if len(b) < 8*GUIDBlockSize {
		return ErrShort
	}
	for i, v := range g {
		binary.BigEndian.PutUint64(b[8*i:], v)
	}
	return nil
}

// MarshalBinary encodes g as a 64-byte attribute.
func (g *GUIDInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, g.MarshalTo(b)
}

// GUIDBlocks is the number of GUIDInfo blocks for a port whose
// PortInfo.GUIDCap is capacity.
func GUIDBlocks(capacity uint8) int {
	return (int(capacity) + GUIDBlockSize - 1) / GUIDBlockSize
}
