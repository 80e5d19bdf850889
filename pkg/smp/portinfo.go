package smp

import "encoding/binary"

// PortInfoSize is the size of the PortInfo attribute.
const PortInfoSize = 64

// Capability mask bits of PortInfo used by the tools.
const (
	CapIsSM                    uint32 = 1 << 1
	CapIsTrapSupported         uint32 = 1 << 3
	CapIsSLMappingSupported    uint32 = 1 << 6
	CapIsSystemImageGUIDSupp   uint32 = 1 << 11
	CapIsExtendedSpeedsSupp    uint32 = 1 << 14
	CapIsCapabilityMask2Supp   uint32 = 1 << 15
	CapIsClientReregistration  uint32 = 1 << 25
	Cap2IsExtendedSpeeds2Supp  uint16 = 1 << 11
	Cap2IsLinkWidth2xSupported uint16 = 1 << 4
)

// PortInfo is the PortInfo attribute (0x0015), all 64 bytes.
type PortInfo struct {
	MKey                   uint64
	GIDPrefix              uint64
	LID                    uint16
	MasterSMLID            uint16
	CapabilityMask         uint32
	DiagCode               uint16
	MKeyLeasePeriod        uint16
	LocalPortNum           uint8
	LinkWidthEnabled       uint8
	LinkWidthSupported     uint8
	LinkWidthActive        uint8
	LinkSpeedSupported     uint8 // 4 bits
	PortState              uint8 // 4 bits
	PortPhysicalState      uint8 // 4 bits
	LinkDownDefaultState   uint8 // 4 bits
	MKeyProtectBits        uint8 // 2 bits
	LMC                    uint8 // 3 bits
	LinkSpeedActive        uint8 // 4 bits
	LinkSpeedEnabled       uint8 // 4 bits
	NeighborMTU            uint8 // 4 bits
	MasterSMSL             uint8 // 4 bits
	VLCap                  uint8 // 4 bits
	InitType               uint8 // 4 bits
	VLHighLimit            uint8
	VLArbitrationHighCap   uint8
	VLArbitrationLowCap    uint8
	InitTypeReply          uint8 // 4 bits
	MTUCap                 uint8 // 4 bits
	VLStallCount           uint8 // 3 bits
	HOQLife                uint8 // 5 bits
	OperationalVLs         uint8 // 4 bits
	PartEnforceInbound     bool
	PartEnforceOutbound    bool
	FilterRawInbound       bool
	FilterRawOutbound      bool
	MKeyViolations         uint16
	PKeyViolations         uint16
	QKeyViolations         uint16
	GUIDCap                uint8
	ClientReregister       bool
	McastPKeyTrapSuppress  uint8 // 2 bits
	SubnetTimeOut          uint8 // 5 bits
	RespTimeValue          uint8 // 5 bits
	LocalPhyErrors         uint8 // 4 bits
	OverrunErrors          uint8 // 4 bits
	MaxCreditHint          uint16
	LinkSpeedExtActive2    uint8  // 2 bits (XDR)
	LinkSpeedExtSupported2 uint8  // 2 bits
	LinkSpeedExtEnabled2   uint8  // 3 bits
	LinkRoundTripLatency   uint32 // 24 bits
	CapabilityMask2        uint16
	LinkSpeedExtActive     uint8 // 4 bits
	LinkSpeedExtSupported  uint8 // 4 bits
	LinkSpeedExtEnabled    uint8 // 5 bits
}

// UnmarshalBinary decodes PortInfo from the first 64 bytes of b.
func (p *PortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < PortInfoSize {
		return ErrShort
	}
	p.MKey = binary.BigEndian.Uint64(b[0:])
	p.GIDPrefix = binary.BigEndian.Uint64(b[8:])
	p.LID = binary.BigEndian.Uint16(b[16:])
	p.MasterSMLID = binary.BigEndian.Uint16(b[18:])
	p.CapabilityMask = binary.BigEndian.Uint32(b[20:])
	p.DiagCode = binary.BigEndian.Uint16(b[24:])
	p.MKeyLeasePeriod = binary.BigEndian.Uint16(b[26:])
	p.LocalPortNum = b[28]
	p.LinkWidthEnabled = b[29]
	p.LinkWidthSupported = b[30]
	p.LinkWidthActive = b[31]
	p.LinkSpeedSupported = b[32] >> 4
	p.PortState = b[32] & 0x0F
	p.PortPhysicalState = b[33] >> 4
	p.LinkDownDefaultState = b[33] & 0x0F
	p.MKeyProtectBits = b[34] >> 6
	p.LMC = b[34] & 0x07
	p.LinkSpeedActive = b[35] >> 4
	p.LinkSpeedEnabled = b[35] & 0x0F
	p.NeighborMTU = b[36] >> 4
	p.MasterSMSL = b[36] & 0x0F
	p.VLCap = b[37] >> 4
	p.InitType = b[37] & 0x0F
	p.VLHighLimit = b[38]
	p.VLArbitrationHighCap = b[39]
	p.VLArbitrationLowCap = b[40]
	p.InitTypeReply = b[41] >> 4
	p.MTUCap = b[41] & 0x0F
	p.VLStallCount = b[42] >> 5
	p.HOQLife = b[42] & 0x1F
	p.OperationalVLs = b[43] >> 4
	p.PartEnforceInbound = b[43]&0x08 != 0
	p.PartEnforceOutbound = b[43]&0x04 != 0
	p.FilterRawInbound = b[43]&0x02 != 0
	p.FilterRawOutbound = b[43]&0x01 != 0
	p.MKeyViolations = binary.BigEndian.Uint16(b[44:])
	p.PKeyViolations = binary.BigEndian.Uint16(b[46:])
	p.QKeyViolations = binary.BigEndian.Uint16(b[48:])
	p.GUIDCap = b[50]
	p.ClientReregister = b[51]&0x80 != 0
	p.McastPKeyTrapSuppress = (b[51] >> 5) & 0x03
	p.SubnetTimeOut = b[51] & 0x1F
	p.RespTimeValue = b[52] & 0x1F
	p.LocalPhyErrors = b[53] >> 4
	p.OverrunErrors = b[53] & 0x0F
	p.MaxCreditHint = binary.BigEndian.Uint16(b[54:])
	p.LinkSpeedExtActive2 = (b[56] >> 5) & 0x03
	p.LinkSpeedExtSupported2 = (b[56] >> 3) & 0x03
	p.LinkSpeedExtEnabled2 = b[56] & 0x07
	p.LinkRoundTripLatency = uint32(b[57])<<16 | uint32(b[58])<<8 | uint32(b[59])
	p.CapabilityMask2 = binary.BigEndian.Uint16(b[60:])
	p.LinkSpeedExtActive = b[62] >> 4
	p.LinkSpeedExtSupported = b[62] & 0x0F
	p.LinkSpeedExtEnabled = b[63] & 0x1F
	return nil
}

// MarshalTo encodes p into the first 64 bytes of b. Reserved bits are zero.
func (p *PortInfo) MarshalTo(b []byte) error {
	if len(b) < PortInfoSize {
		return ErrShort
	}
	binary.BigEndian.PutUint64(b[0:], p.MKey)
	binary.BigEndian.PutUint64(b[8:], p.GIDPrefix)
	binary.BigEndian.PutUint16(b[16:], p.LID)
	binary.BigEndian.PutUint16(b[18:], p.MasterSMLID)
	binary.BigEndian.PutUint32(b[20:], p.CapabilityMask)
	binary.BigEndian.PutUint16(b[24:], p.DiagCode)
	binary.BigEndian.PutUint16(b[26:], p.MKeyLeasePeriod)
	b[28] = p.LocalPortNum
	b[29] = p.LinkWidthEnabled
	b[30] = p.LinkWidthSupported
	b[31] = p.LinkWidthActive
	b[32] = p.LinkSpeedSupported<<4 | p.PortState&0x0F
	b[33] = p.PortPhysicalState<<4 | p.LinkDownDefaultState&0x0F
	b[34] = p.MKeyProtectBits<<6 | p.LMC&0x07
	b[35] = p.LinkSpeedActive<<4 | p.LinkSpeedEnabled&0x0F
	b[36] = p.NeighborMTU<<4 | p.MasterSMSL&0x0F
	b[37] = p.VLCap<<4 | p.InitType&0x0F
	b[38] = p.VLHighLimit
	b[39] = p.VLArbitrationHighCap
	b[40] = p.VLArbitrationLowCap
	b[41] = p.InitTypeReply<<4 | p.MTUCap&0x0F
	b[42] = p.VLStallCount<<5 | p.HOQLife&0x1F
	b[43] = p.OperationalVLs<<4 | bit(p.PartEnforceInbound, 0x08) | bit(p.PartEnforceOutbound, 0x04) |
		bit(p.FilterRawInbound, 0x02) | bit(p.FilterRawOutbound, 0x01)
	binary.BigEndian.PutUint16(b[44:], p.MKeyViolations)
	binary.BigEndian.PutUint16(b[46:], p.PKeyViolations)
	binary.BigEndian.PutUint16(b[48:], p.QKeyViolations)
	b[50] = p.GUIDCap
	b[51] = bit(p.ClientReregister, 0x80) | (p.McastPKeyTrapSuppress&0x03)<<5 | p.SubnetTimeOut&0x1F
	b[52] = p.RespTimeValue & 0x1F
	b[53] = p.LocalPhyErrors<<4 | p.OverrunErrors&0x0F
	binary.BigEndian.PutUint16(b[54:], p.MaxCreditHint)
	b[56] = (p.LinkSpeedExtActive2&0x03)<<5 | (p.LinkSpeedExtSupported2&0x03)<<3 | p.LinkSpeedExtEnabled2&0x07
	b[57] = byte(p.LinkRoundTripLatency >> 16)
	b[58] = byte(p.LinkRoundTripLatency >> 8)
	b[59] = byte(p.LinkRoundTripLatency)
	binary.BigEndian.PutUint16(b[60:], p.CapabilityMask2)
	b[62] = p.LinkSpeedExtActive<<4 | p.LinkSpeedExtSupported&0x0F
	b[63] = p.LinkSpeedExtEnabled & 0x1F
	return nil
}

// MarshalBinary encodes p as a 64-byte attribute.
func (p *PortInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, PortInfoSize)
	return b, p.MarshalTo(b)
}

// Port states and physical states.
const (
	PortStateDown   uint8 = 1
	PortStateInit   uint8 = 2
	PortStateArmed  uint8 = 3
	PortStateActive uint8 = 4

	PhysSleep    uint8 = 1
	PhysPolling  uint8 = 2
	PhysDisabled uint8 = 3
	PhysTraining uint8 = 4
	PhysLinkUp   uint8 = 5
	PhysErrRecov uint8 = 6
	PhysPhyTest  uint8 = 7
)

// Link width codes (LinkWidthActive; bits of the masks).
const (
	Width1x  uint8 = 1
	Width4x  uint8 = 2
	Width8x  uint8 = 4
	Width12x uint8 = 8
	Width2x  uint8 = 16
)

// Link speed codes: LinkSpeedActive (SDR..QDR), LinkSpeedExtActive
// (FDR..NDR) and the aggregated extended speed (XDR = 32).
const (
	SpeedSDR uint8 = 1
	SpeedDDR uint8 = 2
	SpeedQDR uint8 = 4

	ExtSpeedNone uint8 = 0
	ExtSpeedFDR  uint8 = 1
	ExtSpeedEDR  uint8 = 2
	ExtSpeedHDR  uint8 = 4
	ExtSpeedNDR  uint8 = 8
	ExtSpeedXDR  uint8 = 32 // LinkSpeedExtActive2 = 1, aggregated << 5
)

// MTU codes.
const (
	MTU256  uint8 = 1
	MTU512  uint8 = 2
	MTU1024 uint8 = 3
	MTU2048 uint8 = 4
	MTU4096 uint8 = 5
)
