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

	"github.com/ibfabric/ibdiag/pkg/mad"
)

// Sizes of the MAD and its parts.
const (
	MADSize       = mad.Size       // a whole MAD
	HeaderSize    = mad.HeaderSize // the common MAD header
	DataOffset    = 64             // offset of the 64-byte SMP data area
	DataSize      = 64             // size of the SMP data area (one attribute)
	InitPathOff   = 128            // directed-route initial path
	RetPathOff    = 192            // directed-route return path
	MaxHops       = 63             // the longest directed route
	PermissiveLID = 0xFFFF
)

// Management classes carried on QP0.
const (
	ClassLIDRouted   uint8 = 0x01 // LID-routed SMP
	ClassDirectRoute uint8 = 0x81 // directed-route SMP
)

// MAD methods. A response has the R bit (0x80) set.
const (
	MethodGet          = mad.MethodGet
	MethodSet          = mad.MethodSet
	MethodGetResp      = mad.MethodGetResp
	MethodTrap         = mad.MethodTrap
	MethodTrapRepress  = mad.MethodTrapRepress
	MethodResponseFlag = mad.MethodResponseFlag
)

// Status bits of the MAD header.
const (
	StatusBusy             = mad.StatusBusy
	StatusRedirect         = mad.StatusRedirect
	StatusBadVersion       = mad.StatusBadVersion       // unsupported base or class version
	StatusMethodUnsupp     = mad.StatusMethodUnsupp     // method not supported
	StatusMethodAttrUnsupp = mad.StatusMethodAttrUnsupp // method/attribute combination not supported
	StatusInvalidField     = mad.StatusInvalidField     // invalid attribute value or modifier
)

// StatusDirection is the D bit of a directed-route SMP's status (set on
// the way back).
const StatusDirection uint16 = 0x8000

// Sentinel errors of the codec.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = mad.ErrShort
	// ErrVersion: the MAD's base version is not 1.
	ErrVersion = mad.ErrVersion
	// ErrClass: the MAD is not an SMP (class 0x01 or 0x81).
	ErrClass = errors.New("smp: not a subnet management class")
	// ErrHopCount: a directed route longer than 63 hops.
	ErrHopCount = errors.New("smp: directed route longer than 63 hops")
)

// MAD is a decoded 256-byte subnet management packet: the common MAD
// header and the SMP's own fields. For LID-routed SMPs the directed-route
// fields (HopPointer, HopCount, DrSLID, DrDLID and the paths) are reserved
// and encode as zero.
type MAD struct {
	mad.Header  // Status: raw 16 bits; for DR SMPs bit 15 is the D bit
	HopPointer  uint8
	HopCount    uint8
	MKey        uint64
	DrSLID      uint16
	DrDLID      uint16
	Data        [DataSize]byte
	InitialPath [64]byte
	ReturnPath  [64]byte
}

// IsDirectRoute reports whether m is a directed-route SMP.
func (m *MAD) IsDirectRoute() bool { return m.Class == ClassDirectRoute }

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
	m.Header.MarshalTo(b)
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
	if b[0] != mad.BaseVersion {
		return ErrVersion
	}
	if b[1] != ClassLIDRouted && b[1] != ClassDirectRoute {
		return ErrClass
	}
	m.Header.UnmarshalBinary(b) // cannot fail: length and version checked
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
		Header: mad.Header{
			BaseVersion:  mad.BaseVersion,
			Class:        ClassDirectRoute,
			ClassVersion: 1,
			Method:       MethodGet,
			AttrID:       attr,
			AttrMod:      mod,
		},
		HopCount: p.Len(),
		DrSLID:   PermissiveLID,
		DrDLID:   PermissiveLID,
	}
	copy(m.InitialPath[:], p.ports[:p.hops+1])
	return m
}

// MarshalGet writes into b (at least 256 bytes) the directed-route
// SubnGet of attr/mod along p with M_Key mkey: the bytes of NewGet(p,
// attr, mod) with MKey set, without building the MAD first (the engine
// sends one per SMP).
func MarshalGet(b []byte, p DRPath, attr uint16, mod uint32, mkey uint64) error {
	if len(b) < MADSize {
		return ErrShort
	}
	b = b[:MADSize]
	clear(b)
	b[0], b[1], b[2], b[3] = mad.BaseVersion, ClassDirectRoute, 1, MethodGet
	b[7] = p.hops
	binary.BigEndian.PutUint16(b[16:], attr)
	binary.BigEndian.PutUint32(b[20:], mod)
	binary.BigEndian.PutUint64(b[24:], mkey)
	binary.BigEndian.PutUint16(b[32:], PermissiveLID)
	binary.BigEndian.PutUint16(b[34:], PermissiveLID)
	copy(b[InitPathOff:], p.ports[:p.hops+1])
	return nil
}

// NewLIDGet returns a LID-routed SubnGet request for attr/mod.
func NewLIDGet(attr uint16, mod uint32) MAD {
	return MAD{Header: mad.Header{
		BaseVersion:  mad.BaseVersion,
		Class:        ClassLIDRouted,
		ClassVersion: 1,
		Method:       MethodGet,
		AttrID:       attr,
		AttrMod:      mod,
	}}
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
type StatusError = mad.StatusError

// StatusText names an SMP status code as the IB specification does.
func StatusText(s uint16) string { return mad.StatusText(s) }
