// Package sa is a Subnet Administration (SA, management class 0x03)
// client: SubnAdmGet and SubnAdmGetTable of PathRecord, NodeRecord,
// PortInfoRecord and MCMemberRecord over the project's one transport,
// addressed LID-routed to QP1 of the master SM (PortInfo.MasterSMLID of
// the local port), with RMPP reassembly of answers that span several
// MADs.
//
// The client is read-only: it builds only Get and GetTable requests and,
// within a GetTable, the RMPP ACKs the transfer needs (an ACK carries the
// GetTable method with RMPP type ACK, as the kernel's RMPP receiver sends
// it). It never builds a Set, a Delete (a multicast leave) or a join.
//
// An SA MAD is the 24-byte common MAD header, the 12-byte RMPP header
// (bytes 24..35), the SA header (SM_Key 36..43, AttributeOffset 44..45 in
// 8-byte words, ComponentMask 48..55) and 200 bytes of records (56..255).
// Every decoder takes any byte slice, decodes into a caller's struct and
// returns an error; none panics and none allocates. Multi-byte fields are
// big-endian.
//
// # RMPP
//
// A GetTable answer longer than one MAD comes as an RMPP transfer: the
// client reassembles it when the transport is a transport.Streamer (it
// can carry several answer MADs and the client's ACKs under one TID),
// ACKing segment 1, the last segment of each window of Window segments
// and the last segment. A resent segment is ACKed again; a segment past
// the expected one is ErrOutOfOrder; a transfer that stops is
// ErrTruncated; STOP or ABORT from the SA is ErrRMPP. Through a
// transport without Stream, an answer of more than one segment is
// ErrMultiSegment. The kernel umad device (pkg/umad, whose SA agent asks
// for no kernel RMPP so that the segments reach us) and the embedded
// simulator (pkg/sim) implement Stream; ibsim's client does not (see
// below).
//
// # Through ibsim
//
// ibsim carries single 256-byte MADs and no RMPP, and OpenSM under
// libumad2sim relies on kernel RMPP that the shim does not have: OpenSM's
// GetTable answer reaches us as its first 256 bytes, with only the RMPP
// Active flag set (no segment number, no PayloadLength) and records past
// the first 200 bytes cut off. The client takes such an answer as
// Table.Unsized: records up to the first all-zero slot (pkg/ibsim clears
// the bytes past the length OpenSM wrote). saquery under the shim sees
// the same cut answer. Queries that select one record (a PathRecord by
// SLID and DLID, a NodeRecord by LID, a PortInfoRecord by LID and port)
// are whole.
package sa

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/mad"
)

// Sizes and fixed values of an SA MAD.
const (
	MADSize      = mad.Size // a whole MAD
	HeaderSize   = 56       // common + RMPP + SA headers
	DataOffset   = HeaderSize
	DataSize     = MADSize - HeaderSize // 200 bytes of records per MAD
	Class        = 0x03                 // the SubnAdm management class
	ClassVersion = 2                    // SA class version
	// RMPPSegmentSize is what one RMPP segment of an SA transfer counts
	// toward PayloadLength: the 20-byte SA header and the 200 data bytes
	// (everything after the RMPP header).
	RMPPSegmentSize = MADSize - 36
	saHeaderSize    = 20
)

// SA methods. A response has the R bit (0x80) set.
const (
	MethodGet          uint8 = 0x01
	MethodGetResp      uint8 = 0x81
	MethodGetTable     uint8 = 0x12
	MethodGetTableResp uint8 = 0x92
	// MethodSet and MethodDelete change the SA (a multicast join or
	// leave); the client never sends them.
	MethodSet    uint8 = 0x02
	MethodDelete uint8 = 0x15
)

// Attribute IDs.
const (
	AttrClassPortInfo  uint16 = 0x0001
	AttrNodeRecord     uint16 = 0x0011
	AttrPortInfoRecord uint16 = 0x0012
	AttrPathRecord     uint16 = 0x0035
	AttrMCMemberRecord uint16 = 0x0038
)

// RMPP types and flags.
const (
	RMPPVersion   uint8 = 1
	RMPPTypeData  uint8 = 1
	RMPPTypeAck   uint8 = 2
	RMPPTypeStop  uint8 = 3
	RMPPTypeAbort uint8 = 4

	RMPPFlagActive uint8 = 1 << 0
	RMPPFlagFirst  uint8 = 1 << 1
	RMPPFlagLast   uint8 = 1 << 2

	// RMPPNoRespTime is the RRespTimeValue "no time given".
	RMPPNoRespTime uint8 = 0x1F
)

// SA status codes (the class-specific bits 15..8 of the MAD status).
const (
	StatusNoResources     uint16 = 0x0100
	StatusReqInvalid      uint16 = 0x0200
	StatusNoRecords       uint16 = 0x0300
	StatusTooManyRecords  uint16 = 0x0400
	StatusInvalidGID      uint16 = 0x0500
	StatusInsufficientCMP uint16 = 0x0600
	StatusDenied          uint16 = 0x0700
)

// Sentinel errors.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = mad.ErrShort
	// ErrVersion: the MAD's base version is not 1.
	ErrVersion = mad.ErrVersion
	// ErrClass: the MAD is not an SA MAD (class 0x03).
	ErrClass = errors.New("sa: not a subnet administration MAD")
	// ErrNoSM: the local port knows no subnet manager (MasterSMLID 0).
	ErrNoSM = errors.New("no subnet manager: the local port's MasterSMLID is 0")
	// ErrNoAnswer: the SA did not answer before the timeout (it also
	// matches transport.ErrTimeout).
	ErrNoAnswer = errors.New("the SA did not answer")
	// ErrStatus: the SA answered with a non-zero status (see
	// *StatusError for which).
	ErrStatus = errors.New("SA error status")
	// ErrNoRecords: the SA has no record matching the query (status
	// 0x0300, ERR_NO_RECORDS); it also matches ErrStatus.
	ErrNoRecords = errors.New("no records")
	// ErrTruncated: an RMPP transfer ended before its last segment (the
	// SA stopped sending), or its last segment's length disagrees with
	// the first's.
	ErrTruncated = errors.New("truncated RMPP transfer")
	// ErrOutOfOrder: an RMPP segment arrived past the one expected next.
	ErrOutOfOrder = errors.New("out-of-order RMPP segment")
	// ErrRMPP: the RMPP header of an answer is malformed, or the SA
	// stopped or aborted the transfer.
	ErrRMPP = errors.New("bad RMPP transfer")
	// ErrMultiSegment: the answer spans several MADs and the transport
	// carries one answer MAD per request (it implements no
	// transport.Streamer).
	ErrMultiSegment = errors.New("the SA's answer spans several MADs and the transport carries only one")
	// ErrBadAnswer: the answer is not a response to the request (class,
	// method or attribute differ) or its records are malformed.
	ErrBadAnswer = errors.New("malformed SA answer")
)

// StatusError is a non-zero status in the SA's answer. It matches
// ErrStatus, and ErrNoRecords for status 0x0300.
type StatusError struct {
	Status uint16
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("SA status 0x%04x (%s)", e.Status, StatusText(e.Status))
}

// Is makes errors.Is(err, ErrStatus) and, for ERR_NO_RECORDS,
// errors.Is(err, ErrNoRecords) true.
func (e *StatusError) Is(target error) bool {
	return target == ErrStatus || (target == ErrNoRecords && e.Status&0xff00 == StatusNoRecords)
}

// StatusText names an SA status as the IB specification does.
func StatusText(s uint16) string {
	if s&0xff != 0 {
		return mad.StatusText(s & 0xff)
	}
	switch s & 0xff00 {
	case 0:
		return "success"
	case StatusNoResources:
		return "ERR_NO_RESOURCES"
	case StatusReqInvalid:
		return "ERR_REQ_INVALID"
	case StatusNoRecords:
		return "ERR_NO_RECORDS"
	case StatusTooManyRecords:
		return "ERR_TOO_MANY_RECORDS"
	case StatusInvalidGID:
		return "ERR_REQ_INVALID_GID"
	case StatusInsufficientCMP:
		return "ERR_REQ_INSUFFICIENT_COMPONENTS"
	case StatusDenied:
		return "ERR_REQ_DENIED"
	}
	return "class specific"
}

// RMPPHeader is the 12-byte RMPP header (bytes 24..35 of an SA MAD).
type RMPPHeader struct {
	Version  uint8
	Type     uint8
	RespTime uint8 // RRespTimeValue, 5 bits
	Flags    uint8 // RMPPFlag*, 3 bits
	Status   uint8
	// Data1 is the SegmentNumber of a DATA or ACK segment.
	Data1 uint32
	// Data2 is the PayloadLength of a DATA segment (the first's: the
	// whole transfer's; the last's: its own) or the NewWindowLast of an
	// ACK.
	Data2 uint32
}

// Active reports whether the RMPP Active flag is set.
func (r *RMPPHeader) Active() bool { return r.Flags&RMPPFlagActive != 0 }

// Header is the header of an SA MAD: the common MAD header, the RMPP
// header and the SA header.
type Header struct {
	mad.Header
	RMPP            RMPPHeader
	SMKey           uint64
	AttributeOffset uint16 // record stride in 8-byte words
	ComponentMask   uint64
}

// UnmarshalBinary decodes the 56-byte SA header from b. It checks the
// base version and the class.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	if err := h.Header.UnmarshalBinary(b); err != nil {
		return err
	}
	if b[1] != Class {
		return ErrClass
	}
	h.RMPP = RMPPHeader{
		Version:  b[24],
		Type:     b[25],
		RespTime: b[26] >> 3,
		Flags:    b[26] & 7,
		Status:   b[27],
		Data1:    binary.BigEndian.Uint32(b[28:]),
		Data2:    binary.BigEndian.Uint32(b[32:]),
	}
	h.SMKey = binary.BigEndian.Uint64(b[36:])
	h.AttributeOffset = binary.BigEndian.Uint16(b[44:])
	h.ComponentMask = binary.BigEndian.Uint64(b[48:])
	return nil
}

// MarshalTo encodes h into the first 56 bytes of b (the reserved bytes
// 46..47 are cleared).
func (h *Header) MarshalTo(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	h.Header.MarshalTo(b)
	b[6], b[7] = 0, 0
	b[24] = h.RMPP.Version
	b[25] = h.RMPP.Type
	b[26] = h.RMPP.RespTime<<3 | h.RMPP.Flags&7
	b[27] = h.RMPP.Status
	binary.BigEndian.PutUint32(b[28:], h.RMPP.Data1)
	binary.BigEndian.PutUint32(b[32:], h.RMPP.Data2)
	binary.BigEndian.PutUint64(b[36:], h.SMKey)
	binary.BigEndian.PutUint16(b[44:], h.AttributeOffset)
	b[46], b[47] = 0, 0
	binary.BigEndian.PutUint64(b[48:], h.ComponentMask)
	return nil
}

// MarshalRequest writes into b (at least 256 bytes) an SA request:
// method (Get or GetTable) of attr with component mask mask and template
// record rec (at most 200 bytes), with transaction ID tid. It refuses
// every method but Get and GetTable with ErrRequest.
func MarshalRequest(b []byte, method uint8, attr uint16, mask uint64, rec []byte, tid uint64) error {
	if len(b) < MADSize {
		return ErrShort
	}
	if method != MethodGet && method != MethodGetTable {
		return fmt.Errorf("%w: method 0x%02x", ErrRequest, method)
	}
	if len(rec) > DataSize {
		return fmt.Errorf("%w: template record of %d bytes", ErrRequest, len(rec))
	}
	b = b[:MADSize]
	clear(b)
	h := Header{
		Header: mad.Header{BaseVersion: mad.BaseVersion, Class: Class, ClassVersion: ClassVersion,
			Method: method, TID: tid, AttrID: attr},
		ComponentMask: mask,
	}
	if n := len(rec); n > 0 {
		h.AttributeOffset = uint16((n + 7) / 8)
	}
	h.MarshalTo(b)
	copy(b[DataOffset:], rec)
	return nil
}

// ErrRequest: a request the client does not send (a method other than
// Get and GetTable, or a template record too long for one MAD).
var ErrRequest = errors.New("sa: request refused")

// MarshalAck writes into b (at least 256 bytes) the RMPP ACK of segment
// seg of the DATA segment data, opening the window up to segment
// newWindowLast: data's 56 header bytes with the R bit cleared (the
// GetTable method, not a Set), RMPP type ACK and flags Active only, as
// the Linux kernel's RMPP receiver (mad_rmpp.c format_ack) sends it.
func MarshalAck(b, data []byte, seg, newWindowLast uint32) error {
	if len(b) < MADSize || len(data) < HeaderSize {
		return ErrShort
	}
	b = b[:MADSize]
	clear(b)
	copy(b, data[:HeaderSize])
	b[3] &^= mad.MethodResponseFlag
	b[4], b[5] = 0, 0
	b[24] = RMPPVersion
	b[25] = RMPPTypeAck
	b[26] = b[26]&^7 | RMPPFlagActive // RRespTimeValue kept, as the kernel keeps it
	b[27] = 0
	binary.BigEndian.PutUint32(b[28:], seg)
	binary.BigEndian.PutUint32(b[32:], newWindowLast)
	return nil
}

// AttrName names an SA attribute ID as saquery does.
func AttrName(id uint16) string {
	switch id {
	case AttrClassPortInfo:
		return "ClassPortInfo"
	case AttrNodeRecord:
		return "NodeRecord"
	case AttrPortInfoRecord:
		return "PortInfoRecord"
	case AttrPathRecord:
		return "PathRecord"
	case AttrMCMemberRecord:
		return "MCMemberRecord"
	}
	return fmt.Sprintf("0x%04x", id)
}
