// Package smp encodes and decodes InfiniBand Subnet Management Packets:
// the 256-byte MAD with its LID-routed and directed-route SMP headers, and
// the SMP attributes (NodeInfo, PortInfo, SwitchInfo, ...).
//
// Every decoder takes any byte slice and returns a value or an error; none
// panics and none allocates. All multi-byte wire fields are big-endian.
package smp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the MAD and its parts.
const (
	MADSize       = 256 // a whole MAD
	HeaderSize    = 24  // the common MAD header
	DataOffset    = 64  // offset of the 64-byte SMP data area
	DataSize      = 64  // size of the SMP data area (one attribute)
	InitPathOff   = 128 // directed-route initial path
	RetPathOff    = 192 // directed-route return path
	MaxHops       = 63  // the longest directed route
	PermissiveLID = 0xFFFF
)

// Management classes carried on QP0.
const (
	ClassLIDRouted   uint8 = 0x01 // LID-routed SMP
	ClassDirectRoute uint8 = 0x81 // directed-route SMP
)

// MAD methods. A response has the R bit (0x80) set.
const (
	MethodGet          uint8 = 0x01
	MethodSet          uint8 = 0x02
	MethodGetResp      uint8 = 0x81
	MethodTrap         uint8 = 0x05
	MethodTrapRepress  uint8 = 0x07
	MethodResponseFlag uint8 = 0x80
)

// Status bits of the MAD header.
const (
	StatusBusy             uint16 = 0x0001
	StatusRedirect         uint16 = 0x0002
	StatusBadVersion       uint16 = 0x0004 // unsupported base or class version
	StatusMethodUnsupp     uint16 = 0x0008 // method not supported
	StatusMethodAttrUnsupp uint16 = 0x000C // method/attribute combination not supported
	StatusInvalidField     uint16 = 0x001C // invalid attribute value or modifier
	StatusDirection        uint16 = 0x8000 // D bit of a directed-route SMP
)

// Sentinel errors of the codec.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = errors.New("smp: buffer too short")
	// ErrVersion: the MAD's base version is not 1.
	ErrVersion = errors.New("smp: unsupported MAD base version")
	// ErrClass: the MAD is not an SMP (class 0x01 or 0x81).
	ErrClass = errors.New("smp: not a subnet management class")
	// ErrHopCount: a directed route longer than 63 hops.
	ErrHopCount = errors.New("smp: directed route longer than 63 hops")
)

// MAD is a decoded 256-byte subnet management packet. For LID-routed
// SMPs the directed-route fields (HopPointer, HopCount, DrSLID, DrDLID and
// the paths) are reserved and encode as zero.
type MAD struct {
	BaseVersion  uint8
	Class        uint8
	ClassVersion uint8
	Method       uint8  // including the R bit
	Status       uint16 // raw 16 bits; for DR SMPs bit 15 is the D bit
	HopPointer   uint8
	HopCount     uint8
	TID          uint64
	AttrID       uint16
	AttrMod      uint32
	MKey         uint64
	DrSLID       uint16
	DrDLID       uint16
	Data         [DataSize]byte
	InitialPath  [64]byte
	ReturnPath   [64]byte
}

// IsDirectRoute reports whether m is a directed-route SMP.
func (m *MAD) IsDirectRoute() bool { return m.Class == ClassDirectRoute }

// IsResponse reports whether the R bit of the method is set.
func (m *MAD) IsResponse() bool { return m.Method&MethodResponseFlag != 0 }

// Returning reports whether the D bit of a directed-route SMP is set.
func (m *MAD) Returning() bool { return m.IsDirectRoute() && m.Status&StatusDirection != 0 }

// StatusCode is the status without the D bit of a directed-route SMP.
func (m *MAD) StatusCode() uint16 {
	if m.IsDirectRoute() {
		return m.Status &^ StatusDirection
	}
	return m.Status
}

// MarshalBinary encodes m into a new 256-byte slice.
func (m *MAD) MarshalBinary() ([]byte, error) {
	b := make([]byte, MADSize)
	if err := m.MarshalTo(b); err != nil {
		return nil, err
	}
	return b, nil
}

// MarshalTo encodes m into b, which must hold at least 256 bytes.
func (m *MAD) MarshalTo(b []byte) error {
	if len(b) < MADSize {
		return ErrShort
	}
	if m.HopCount > MaxHops {
		return ErrHopCount
	}
	b = b[:MADSize]
	clear(b)
	b[0] = m.BaseVersion
	b[1] = m.Class
	b[2] = m.ClassVersion
	b[3] = m.Method
	binary.BigEndian.PutUint16(b[4:], m.Status)
	binary.BigEndian.PutUint64(b[8:], m.TID)
	binary.BigEndian.PutUint16(b[16:], m.AttrID)
	binary.BigEndian.PutUint32(b[20:], m.AttrMod)
	binary.BigEndian.PutUint64(b[24:], m.MKey)
	copy(b[DataOffset:], m.Data[:])
	if m.IsDirectRoute() {
		b[6] = m.HopPointer
		b[7] = m.HopCount
		binary.BigEndian.PutUint16(b[32:], m.DrSLID)
		binary.BigEndian.PutUint16(b[34:], m.DrDLID)
		copy(b[InitPathOff:], m.InitialPath[:])
		copy(b[RetPathOff:], m.ReturnPath[:])
	}
	return nil
}

// UnmarshalBinary decodes a 256-byte SMP. It checks the base version and
// the class; it does not judge the other fields.
func (m *MAD) UnmarshalBinary(b []byte) error {
	if len(b) < MADSize {
		return ErrShort
	}
	if b[0] != 1 {
		return ErrVersion
	}
	if b[1] != ClassLIDRouted && b[1] != ClassDirectRoute {
		return ErrClass
	}
	m.BaseVersion = b[0]
	m.Class = b[1]
	m.ClassVersion = b[2]
	m.Method = b[3]
	m.Status = binary.BigEndian.Uint16(b[4:])
	m.TID = binary.BigEndian.Uint64(b[8:])
	m.AttrID = binary.BigEndian.Uint16(b[16:])
	m.AttrMod = binary.BigEndian.Uint32(b[20:])
	m.MKey = binary.BigEndian.Uint64(b[24:])
	copy(m.Data[:], b[DataOffset:DataOffset+DataSize])
	if m.Class == ClassDirectRoute {
		m.HopPointer = b[6]
		m.HopCount = b[7]
		m.DrSLID = binary.BigEndian.Uint16(b[32:])
		m.DrDLID = binary.BigEndian.Uint16(b[34:])
		copy(m.InitialPath[:], b[InitPathOff:InitPathOff+64])
		copy(m.ReturnPath[:], b[RetPathOff:RetPathOff+64])
	} else {
		m.HopPointer, m.HopCount, m.DrSLID, m.DrDLID = 0, 0, 0, 0
		m.InitialPath = [64]byte{}
		m.ReturnPath = [64]byte{}
	}
	return nil
}

// NewGet returns a SubnGet request for attr/mod along the directed route p
// (pure DR: DrSLID = DrDLID = permissive).
func NewGet(p DRPath, attr uint16, mod uint32) MAD {
	m := MAD{
		BaseVersion:  1,
		Class:        ClassDirectRoute,
		ClassVersion: 1,
		Method:       MethodGet,
		HopCount:     p.Len(),
		AttrID:       attr,
		AttrMod:      mod,
		DrSLID:       PermissiveLID,
		DrDLID:       PermissiveLID,
	}
	copy(m.InitialPath[:], p.ports[:p.hops+1])
	return m
}

// NewLIDGet returns a LID-routed SubnGet request for attr/mod.
func NewLIDGet(attr uint16, mod uint32) MAD {
	return MAD{
		BaseVersion:  1,
		Class:        ClassLIDRouted,
		ClassVersion: 1,
		Method:       MethodGet,
		AttrID:       attr,
		AttrMod:      mod,
	}
}

// Path returns the directed route of a DR SMP (its initial path).
func (m *MAD) Path() DRPath {
	var p DRPath
	h := m.HopCount
	if h > MaxHops {
		h = MaxHops
	}
	p.hops = h
	copy(p.ports[1:], m.InitialPath[1:h+1])
	return p
}

// StatusError is a non-zero SMP status returned by the target's SMA.
type StatusError struct {
	Status uint16 // without the D bit
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("bad status 0x%x (%s)", e.Status, StatusText(e.Status))
}

// StatusText names an SMP status code as the IB specification does.
func StatusText(s uint16) string {
	switch {
	case s == 0:
		return "success"
	case s&StatusBusy != 0:
		return "busy"
	case s&StatusRedirect != 0:
		return "redirect"
	}
	switch s & 0x1C {
	case StatusBadVersion:
		return "bad version"
	case StatusMethodUnsupp:
		return "method not supported"
	case StatusMethodAttrUnsupp:
		return "method/attribute combination not supported"
	case StatusInvalidField:
		return "invalid attribute or modifier"
	}
	return "class specific"
}
