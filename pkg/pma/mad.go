// Package pma encodes and decodes Performance Management (PerfMgt, class
// 0x04) GMPs: the 256-byte MAD with the common MAD header and the PerfMgt
// attributes ClassPortInfo, PortCounters and PortCountersExtended, with the
// field names perfquery prints.
//
// A PerfMgt GMP has the same 24-byte common header as an SMP; its data
// area starts at byte 64, after 40 reserved bytes, and is 192 bytes long.
// GMPs travel on QP1 (Q_Key 0x80010000) and are LID-routed.
//
// Every decoder takes any byte slice and returns a value or an error; none
// panics and none allocates. All multi-byte wire fields are big-endian.
package pma

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/mad"
)

// Sizes and fixed values of a PerfMgt GMP.
const (
	MADSize      = mad.Size       // a whole MAD
	HeaderSize   = mad.HeaderSize // the common MAD header
	DataOffset   = 64             // offset of the PerfMgt data area
	DataSize     = 192            // size of the PerfMgt data area
	Class        = 0x04           // the PerfMgt management class
	ClassVersion = 1              // PerfMgt class version
	QP1QKey      = 0x80010000     // the well-known GSI Q_Key
	// AllPorts is the PortSelect value asking a switch for the sum over
	// all its ports (when ClassPortInfo has CapAllPortSelect).
	AllPorts uint8 = 0xFF
)

// Attribute IDs.
const (
	AttrClassPortInfo          uint16 = 0x0001
	AttrPortSamplesControl     uint16 = 0x0010
	AttrPortSamplesResult      uint16 = 0x0011
	AttrPortCounters           uint16 = 0x0012
	AttrPortRcvErrorDetails    uint16 = 0x0015
	AttrPortXmitDiscardDetails uint16 = 0x0016
	AttrPortCountersExtended   uint16 = 0x001D
)

// Methods. A response has the R bit (0x80) set.
const (
	MethodGet     = mad.MethodGet
	MethodSet     = mad.MethodSet
	MethodGetResp = mad.MethodGetResp
)

// Sentinel errors of the codec.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = mad.ErrShort
	// ErrVersion: the MAD's base version is not 1.
	ErrVersion = mad.ErrVersion
	// ErrClass: the MAD is not a PerfMgt GMP (class 0x04).
	ErrClass = errors.New("pma: not a performance management MAD")
)

// MAD is a decoded 256-byte PerfMgt GMP: the common MAD header and the
// data area (the 40 bytes between them are reserved).
type MAD struct {
	mad.Header
	Data [DataSize]byte
}

// MarshalTo encodes m into b, which must hold at least 256 bytes.
func (m *MAD) MarshalTo(b []byte) error {
	if len(b) < MADSize {
		return ErrShort
	}
	b = b[:MADSize]
	clear(b)
	m.Header.MarshalTo(b)
	copy(b[DataOffset:], m.Data[:])
	return nil
}

// MarshalBinary encodes m into a new 256-byte slice.
func (m *MAD) MarshalBinary() ([]byte, error) {
	b := make([]byte, MADSize)
	return b, m.MarshalTo(b)
}

// UnmarshalBinary decodes a 256-byte PerfMgt GMP. It checks the base
// version and the class; it does not judge the other fields.
func (m *MAD) UnmarshalBinary(b []byte) error {
	if len(b) < MADSize {
		return ErrShort
	}
	if b[0] != mad.BaseVersion {
		return ErrVersion
	}
	if b[1] != Class {
		return ErrClass
	}
	m.Header.UnmarshalBinary(b) // cannot fail: length and version checked
	copy(m.Data[:], b[DataOffset:DataOffset+DataSize])
	return nil
}

// NewGet returns a PerfMgtGet request for attr. For PortCounters and
// PortCountersExtended portSelect is the port asked for (AllPorts for the
// sum over a switch's ports); libibmad sets it for ClassPortInfo too.
func NewGet(attr uint16, portSelect uint8) MAD {
	m := newMAD(MethodGet, attr)
	m.Data[1] = portSelect
	return m
}

// NewClear returns a PerfMgtSet of PortCounters that resets the counters
// selected by mask (CounterSelect in bits 0..15, CounterSelect2 in bits
// 16..23) on port portSelect. This is the only Set the tools send, and
// only when asked to.
func NewClear(portSelect uint8, mask uint32) MAD {
	m := newMAD(MethodSet, AttrPortCounters)
	m.Data[1] = portSelect
	binary.BigEndian.PutUint16(m.Data[2:], uint16(mask))
	m.Data[18] = uint8(mask >> 16)
	return m
}

// NewClearDetails returns a PerfMgtSet of a details attribute
// (PortXmitDiscardDetails, PortRcvErrorDetails) resetting the counters
// selected by mask (CounterSelect), as libibmad's performance_reset_via.
func NewClearDetails(attr uint16, portSelect uint8, mask uint16) MAD {
	m := newMAD(MethodSet, attr)
	m.Data[1] = portSelect
	binary.BigEndian.PutUint16(m.Data[2:], mask)
	return m
}

// NewClearExtended returns a PerfMgtSet of PortCountersExtended resetting
// the counters selected by mask (CounterSelect bits 0..15, CounterSelect2
// bits 16..).
func NewClearExtended(portSelect uint8, mask uint32) MAD {
	m := newMAD(MethodSet, AttrPortCountersExtended)
	m.Data[1] = portSelect
	binary.BigEndian.PutUint16(m.Data[2:], uint16(mask))
	binary.BigEndian.PutUint32(m.Data[4:], mask>>16)
	return m
}

// newMAD returns a PerfMgt request with method and attr.
func newMAD(method uint8, attr uint16) MAD {
	return MAD{Header: mad.Header{BaseVersion: mad.BaseVersion, Class: Class, ClassVersion: ClassVersion, Method: method, AttrID: attr}}
}

// StatusError is a non-zero MAD status in a response.
type StatusError = mad.StatusError

// StatusText names a MAD status.
func StatusText(s uint16) string { return mad.StatusText(s) }

// AttrName names a PerfMgt attribute ID.
func AttrName(id uint16) string {
	switch id {
	case AttrClassPortInfo:
		return "ClassPortInfo"
	case AttrPortSamplesControl:
		return "PortSamplesControl"
	case AttrPortSamplesResult:
		return "PortSamplesResult"
	case AttrPortCounters:
		return "PortCounters"
	case AttrPortRcvErrorDetails:
		return "PortRcvErrorDetails"
	case AttrPortXmitDiscardDetails:
		return "PortXmitDiscardDetails"
	case AttrPortCountersExtended:
		return "PortCountersExtended"
	}
	return fmt.Sprintf("0x%04x", id)
}
