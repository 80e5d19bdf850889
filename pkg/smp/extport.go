package smp

import "encoding/binary"

// MlnxExtPortInfoSize is the number of bytes MlnxExtPortInfo uses.
const MlnxExtPortInfoSize = 16

// Mellanox extended link speed bits (MlnxExtPortInfo speed fields).
const MlnxSpeedFDR10 uint8 = 1 << 0

// MlnxExtPortInfo is the Mellanox vendor ExtendedPortInfo attribute
// (0xFF90, modifier = port). Only the fields the diagnostics read are
// decoded; the rest of the 64 bytes is reserved.
type MlnxExtPortInfo struct {
	StateChangeEnable  uint8 // byte 3
	LinkSpeedSupported uint8 // byte 7
	LinkSpeedEnabled   uint8 // byte 11
	LinkSpeedActive    uint8 // byte 15; bit 0 = FDR10
}

// FDR10 reports whether the link runs at FDR10 (LinkSpeedActive bit 0).
func (e *MlnxExtPortInfo) FDR10() bool { return e.LinkSpeedActive&MlnxSpeedFDR10 != 0 }

// UnmarshalBinary decodes the attribute from the first 16 bytes of b.
func (e *MlnxExtPortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < MlnxExtPortInfoSize {
		return ErrShort
	}
	e.StateChangeEnable = b[3]
	e.LinkSpeedSupported = b[7]
	e.LinkSpeedEnabled = b[11]
	e.LinkSpeedActive = b[15]
	return nil
}

// MarshalTo encodes e into the first 16 bytes of b; reserved bytes are zero.
func (e *MlnxExtPortInfo) MarshalTo(b []byte) error {
	if len(b) < MlnxExtPortInfoSize {
		return ErrShort
	}
	clear(b[:MlnxExtPortInfoSize])
	b[3] = e.StateChangeEnable
	b[7] = e.LinkSpeedSupported
	b[11] = e.LinkSpeedEnabled
	b[15] = e.LinkSpeedActive
	return nil
}

// MarshalBinary encodes e as a 64-byte attribute.
func (e *MlnxExtPortInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, e.MarshalTo(b)
}

// PortInfoExtendedSize is the number of bytes PortInfoExtended uses.
const PortInfoExtendedSize = 22

// PortInfoExtended capability and FEC mode bits.
const (
	PortExtCapIsFECModeSupported uint32 = 1 << 0

	FECModeNone uint16 = 0x0 // FECModeActive: no FEC
	FECModeFC   uint16 = 0x1 // FECModeActive: Firecode FEC
	FECModeRS   uint16 = 0x2 // FECModeActive: RS-FEC
	FECModeLLRS uint16 = 0x3 // FECModeActive: low-latency RS-FEC
)

// PortInfoExtended is the PortInfoExtended attribute (0x0033, modifier =
// port): capability mask and per-speed FEC modes.
type PortInfoExtended struct {
	CapMask             uint32 // bytes 0-3
	FECModeActive       uint16 // bytes 4-5
	FDRFECModeSupported uint16 // bytes 6-7
	FDRFECModeEnabled   uint16 // bytes 8-9
	EDRFECModeSupported uint16 // bytes 10-11
	EDRFECModeEnabled   uint16 // bytes 12-13
	HDRFECModeSupported uint16 // bytes 14-15
	HDRFECModeEnabled   uint16 // bytes 16-17
	NDRFECModeSupported uint16 // bytes 18-19
	NDRFECModeEnabled   uint16 // bytes 20-21
}

// UnmarshalBinary decodes the attribute from the first 22 bytes of b.
func (p *PortInfoExtended) UnmarshalBinary(b []byte) error {
	if len(b) < PortInfoExtendedSize {
		return ErrShort
	}
	p.CapMask = binary.BigEndian.Uint32(b[0:])
	p.FECModeActive = binary.BigEndian.Uint16(b[4:])
	p.FDRFECModeSupported = binary.BigEndian.Uint16(b[6:])
	p.FDRFECModeEnabled = binary.BigEndian.Uint16(b[8:])
	p.EDRFECModeSupported = binary.BigEndian.Uint16(b[10:])
	p.EDRFECModeEnabled = binary.BigEndian.Uint16(b[12:])
	p.HDRFECModeSupported = binary.BigEndian.Uint16(b[14:])
	p.HDRFECModeEnabled = binary.BigEndian.Uint16(b[16:])
	p.NDRFECModeSupported = binary.BigEndian.Uint16(b[18:])
	p.NDRFECModeEnabled = binary.BigEndian.Uint16(b[20:])
	return nil
}

// MarshalTo encodes p into the first 22 bytes of b.
func (p *PortInfoExtended) MarshalTo(b []byte) error {
	if len(b) < PortInfoExtendedSize {
		return ErrShort
	}
	binary.BigEndian.PutUint32(b[0:], p.CapMask)
	binary.BigEndian.PutUint16(b[4:], p.FECModeActive)
	binary.BigEndian.PutUint16(b[6:], p.FDRFECModeSupported)
	binary.BigEndian.PutUint16(b[8:], p.FDRFECModeEnabled)
	binary.BigEndian.PutUint16(b[10:], p.EDRFECModeSupported)
	binary.BigEndian.PutUint16(b[12:], p.EDRFECModeEnabled)
	binary.BigEndian.PutUint16(b[14:], p.HDRFECModeSupported)
	binary.BigEndian.PutUint16(b[16:], p.HDRFECModeEnabled)
	binary.BigEndian.PutUint16(b[18:], p.NDRFECModeSupported)
	binary.BigEndian.PutUint16(b[20:], p.NDRFECModeEnabled)
	return nil
}

// MarshalBinary encodes p as a 64-byte attribute.
func (p *PortInfoExtended) MarshalBinary() ([]byte, error) {
	b := make([]byte, DataSize)
	return b, p.MarshalTo(b)
}
