// Package mad encodes and decodes the common header every InfiniBand
// management datagram (MAD) starts with: base version, management class,
// class version, method, status, transaction ID and attribute ID and
// modifier. The class codecs (pkg/smp for SMPs, pkg/pma for PerfMgt GMPs)
// build on it and add their own fields and data areas.
//
// Decoding never allocates and never panics. All multi-byte wire fields
// are big-endian.
package mad

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of a MAD.
const (
	Size       = 256 // a whole MAD
	HeaderSize = 24  // the common MAD header
	// BaseVersion is the only MAD base version there is.
	BaseVersion uint8 = 1
)

// Methods common to the management classes. A response has the R bit set.
const (
	MethodGet          uint8 = 0x01
	MethodSet          uint8 = 0x02
	MethodGetResp      uint8 = 0x81
	MethodTrap         uint8 = 0x05
	MethodTrapRepress  uint8 = 0x07
	MethodResponseFlag uint8 = 0x80
)

// Status bits of the common header (bits 0..4; bits 8..15 are class
// specific).
const (
	StatusBusy             uint16 = 0x0001
	StatusRedirect         uint16 = 0x0002
	StatusBadVersion       uint16 = 0x0004 // unsupported base or class version
	StatusMethodUnsupp     uint16 = 0x0008 // method not supported
	StatusMethodAttrUnsupp uint16 = 0x000C // method/attribute combination not supported
	StatusInvalidField     uint16 = 0x001C // invalid attribute value or modifier
)

// Sentinel errors of the header codec.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = errors.New("mad: buffer too short")
	// ErrVersion: the MAD's base version is not 1.
	ErrVersion = errors.New("mad: unsupported MAD base version")
)

// Header is the 24-byte common MAD header. Bytes 6 and 7 (class specific:
// the hop pointer and hop count of a directed-route SMP) are left to the
// class codec.
type Header struct {
	BaseVersion  uint8
	Class        uint8
	ClassVersion uint8
	Method       uint8  // including the R bit
	Status       uint16 // raw 16 bits
	TID          uint64
	AttrID       uint16
	AttrMod      uint32
}

// IsResponse reports whether the R bit of the method is set.
func (h *Header) IsResponse() bool { return h.Method&MethodResponseFlag != 0 }

// MarshalTo encodes h into the first 24 bytes of b; bytes 6 and 7 are
// left as they are.
func (h *Header) MarshalTo(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	b[0] = h.BaseVersion
	b[1] = h.Class
	b[2] = h.ClassVersion
	b[3] = h.Method
	binary.BigEndian.PutUint16(b[4:], h.Status)
	binary.BigEndian.PutUint64(b[8:], h.TID)
	binary.BigEndian.PutUint16(b[16:], h.AttrID)
	binary.BigEndian.PutUint32(b[20:], h.AttrMod)
	return nil
}

// UnmarshalBinary decodes the common header from the first 24 bytes of b.
// It checks the base version, not the class: that is the class codec's.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	if b[0] != BaseVersion {
		return ErrVersion
	}
	h.BaseVersion = b[0]
	h.Class = b[1]
	h.ClassVersion = b[2]
	h.Method = b[3]
	h.Status = binary.BigEndian.Uint16(b[4:])
	h.TID = binary.BigEndian.Uint64(b[8:])
	h.AttrID = binary.BigEndian.Uint16(b[16:])
	h.AttrMod = binary.BigEndian.Uint32(b[20:])
	return nil
}

// StatusError is a non-zero MAD status returned by the target's agent.
type StatusError struct {
	Status uint16 // for a directed-route SMP, without the D bit
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("bad status 0x%x (%s)", e.Status, StatusText(e.Status))
}

// StatusText names a MAD status code as the IB specification does.
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
