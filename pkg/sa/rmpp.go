package sa

import (
	"encoding/binary"
	"fmt"
)

// Window is the number of RMPP segments the client lets the SA send
// between two ACKs.
const Window = 16

// Table is a GetTable answer: its records, Stride bytes apart.
type Table struct {
	AttrID uint16
	// Stride is the distance between records (AttributeOffset × 8).
	Stride int
	// Data holds the records.
	Data []byte
	// Segments is how many MADs the answer came in.
	Segments int
	// Unsized: the SA sent its answer in one MAD without RMPP sizing
	// (OpenSM under libumad2sim, whose kernel-RMPP answer the shim cuts
	// to one MAD). Its records end at the first all-zero slot, and
	// records that did not fit in the MAD are missing (saquery under
	// the shim sees the same).
	Unsized bool
	// Cut, for an Unsized answer: the MAD's bytes past its last whole
	// record are not all zero, so at least one record was cut off.
	Cut bool
}

// Len returns the number of records.
func (t *Table) Len() int {
	if t.Stride <= 0 {
		return 0
	}
	return len(t.Data) / t.Stride
}

// Record returns record i's bytes (Stride long).
func (t *Table) Record(i int) []byte { return t.Data[i*t.Stride : (i+1)*t.Stride] }

// reassembly is the receiving side of one RMPP transfer: it checks each
// DATA segment, appends its records and says when to ACK.
type reassembly struct {
	attr    uint16
	next    uint32 // the segment expected next
	winLast uint32 // the last segment of the current window
	total   int    // the first segment's PayloadLength, 0 when not given
	stride  int
	data    []byte
	done    bool
}

func newReassembly(attr uint16) *reassembly {
	return &reassembly{attr: attr, next: 1, winLast: 1}
}

// add takes one answer MAD (already checked to be a GetTable response
// with no error status). It returns whether to ACK and the segment and
// window the ACK carries; r.done says when the transfer is complete. As
// the kernel's receiver (mad_rmpp.c), it ACKs segment 1 opening a window
// of Window segments, the last segment of each window opening the next,
// the last segment, and a resent segment it already holds; unlike the
// kernel, which holds segments that come early within the window, it
// takes a segment past the next one expected for a broken transfer.
func (r *reassembly) add(h *Header, b []byte) (ack bool, seg, newWin uint32, err error) {
	rh := &h.RMPP
	if !rh.Active() {
		return false, 0, 0, fmt.Errorf("%w: segment without the RMPP Active flag inside a transfer", ErrRMPP)
	}
	switch rh.Type {
	case RMPPTypeData:
	case RMPPTypeStop, RMPPTypeAbort:
		return false, 0, 0, fmt.Errorf("%w: the SA sent RMPP %s (status %d)", ErrRMPP, rmppTypeName(rh.Type), rh.Status)
	default:
		return false, 0, 0, fmt.Errorf("%w: RMPP type %d in a transfer", ErrRMPP, rh.Type)
	}
	if rh.Version != RMPPVersion {
		return false, 0, 0, fmt.Errorf("%w: RMPP version %d", ErrRMPP, rh.Version)
	}
	s := rh.Data1
	switch {
	case s < r.next:
		// A resend: the SA missed our ACK. ACK again what we hold.
		return true, r.next - 1, r.winLast, nil
	case s > r.next:
		return false, 0, 0, fmt.Errorf("%w: segment %d where %d was expected", ErrOutOfOrder, s, r.next)
	}
	first := rh.Flags&RMPPFlagFirst != 0
	last := rh.Flags&RMPPFlagLast != 0
	if first != (s == 1) {
		return false, 0, 0, fmt.Errorf("%w: segment %d with First flag %v", ErrRMPP, s, first)
	}
	if s == 1 {
		r.total = int(rh.Data2)
		r.stride = int(h.AttributeOffset) * 8
	}
	n := DataSize
	if last {
		if rh.Data2 < saHeaderSize || rh.Data2 > RMPPSegmentSize {
			return false, 0, 0, fmt.Errorf("%w: last segment %d has PayloadLength %d", ErrTruncated, s, rh.Data2)
		}
		n = int(rh.Data2) - saHeaderSize
	}
	r.data = append(r.data, b[DataOffset:DataOffset+n]...)
	r.next = s + 1
	if last {
		if r.total != 0 && r.total != int(s)*RMPPSegmentSize-(RMPPSegmentSize-int(rh.Data2)) {
			return false, 0, 0, fmt.Errorf("%w: %d segments of PayloadLength %d (last %d) where the first announced %d", ErrTruncated, s, RMPPSegmentSize, rh.Data2, r.total)
		}
		r.done = true
		return true, s, max(r.winLast, s), nil
	}
	if s == r.winLast {
		r.winLast = s + Window
		return true, s, r.winLast, nil
	}
	return false, 0, 0, nil
}

func rmppTypeName(t uint8) string {
	switch t {
	case RMPPTypeData:
		return "DATA"
	case RMPPTypeAck:
		return "ACK"
	case RMPPTypeStop:
		return "STOP"
	case RMPPTypeAbort:
		return "ABORT"
	}
	return fmt.Sprintf("type %d", t)
}

// table returns the reassembled records.
func (r *reassembly) table(segments int) Table {
	t := Table{AttrID: r.attr, Stride: r.stride, Data: r.data, Segments: segments}
	if r.stride > 0 {
		t.Data = t.Data[:len(t.Data)/r.stride*r.stride]
	}
	return t
}

// unsized returns the records of a one-MAD answer that carries no RMPP
// sizing: the slots up to the first all-zero one.
func unsized(h *Header, b []byte) Table {
	t := Table{AttrID: h.AttrID, Stride: int(h.AttributeOffset) * 8, Segments: 1, Unsized: true}
	if t.Stride <= 0 {
		return t
	}
	data := b[DataOffset:MADSize]
	n := 0
	for ; (n+1)*t.Stride <= len(data); n++ {
		if allZero(data[n*t.Stride : (n+1)*t.Stride]) {
			break
		}
	}
	t.Data = append([]byte(nil), data[:n*t.Stride]...)
	t.Cut = !allZero(data[n*t.Stride:])
	return t
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// putSeg sets a DATA segment's RMPP fields in an SA MAD b (used by the
// simulators that answer SA queries): segment seg of n, PayloadLength
// paylen.
func putSeg(b []byte, seg, n uint32, paylen uint32) {
	b[24], b[25] = RMPPVersion, RMPPTypeData
	f := RMPPFlagActive
	if seg == 1 {
		f |= RMPPFlagFirst
	}
	if seg == n {
		f |= RMPPFlagLast
	}
	b[26] = RMPPNoRespTime<<3 | f
	b[27] = 0
	binary.BigEndian.PutUint32(b[28:], seg)
	binary.BigEndian.PutUint32(b[32:], paylen)
}

// Segments returns how many RMPP segments an answer of n record bytes
// takes (at least 1).
func Segments(n int) uint32 {
	if n <= DataSize {
		return 1
	}
	return uint32((n + DataSize - 1) / DataSize)
}

// MarshalSegment writes into b (at least 256 bytes) DATA segment seg (1
// based) of the GetTable answer to req carrying records (stride bytes
// apart): the request's headers with the R bit, RMPP version 1, the
// First and Last flags and PayloadLength as a kernel RMPP sender sets
// them. It is the sending side a simulated SA uses.
func MarshalSegment(b, req []byte, stride int, records []byte, seg uint32) error {
	if len(b) < MADSize || len(req) < HeaderSize {
		return ErrShort
	}
	n := Segments(len(records))
	if seg < 1 || seg > n || stride <= 0 || stride%8 != 0 {
		return fmt.Errorf("%w: segment %d of %d, stride %d", ErrRequest, seg, n, stride)
	}
	b = b[:MADSize]
	clear(b)
	copy(b, req[:HeaderSize])
	b[3] = MethodGetTableResp
	b[4], b[5] = 0, 0
	binary.BigEndian.PutUint16(b[44:], uint16(stride/8))
	part := records[(seg-1)*DataSize:]
	if len(part) > DataSize {
		part = part[:DataSize]
	}
	copy(b[DataOffset:], part)
	var paylen uint32
	switch {
	case seg == 1:
		paylen = uint32(len(records)) + n*saHeaderSize
	case seg == n:
		paylen = uint32(len(part)) + saHeaderSize
	}
	if seg == n && n == 1 {
		paylen = uint32(len(part)) + saHeaderSize
	}
	putSeg(b, seg, n, paylen)
	return nil
}
