package umad

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Sizes of the <rdma/ib_user_mad.h> structures (ABI version 5).
const (
	HeaderSize    = 64 // struct ib_user_mad_hdr
	OldHeaderSize = 56 // struct ib_user_mad_hdr_old (no pkey_index)
	RegReqSize    = 28 // struct ib_user_mad_reg_req
	RegReq2Size   = 40 // struct ib_user_mad_reg_req2
)

// ioctl numbers of the umad device, _IOC(dir, 0x1b, nr, size).
const (
	iocType = 0x1b

	IoctlRegisterAgent   = iocReadWrite<<iocDirShift | RegReqSize<<iocSizeShift | iocType<<8 | 1
	IoctlUnregisterAgent = iocWrite<<iocDirShift | 4<<iocSizeShift | iocType<<8 | 2
	IoctlEnablePKey      = iocNone<<iocDirShift | iocType<<8 | 3
	IoctlRegisterAgent2  = iocReadWrite<<iocDirShift | RegReq2Size<<iocSizeShift | iocType<<8 | 4

	iocReadWrite = iocRead | iocWrite
	iocSizeShift = 16
)

// Values used in headers and registrations.
const (
	StatusTimeout = 110        // hdr.status of a request the kernel gave up on (ETIMEDOUT)
	QP1QKey       = 0x80010000 // IB_DEFAULT_QP1_QKEY
	UserRMPP      = 1          // RegReq2.Flags: userspace does RMPP
)

// ErrShort: a buffer is smaller than the structure it should hold.
var ErrShort = errors.New("umad: buffer too short")

// Header is struct ib_user_mad_hdr, which precedes every MAD read from or
// written to a umad device. The first five fields and PKeyIndex are in
// host byte order, the rest in network order, as in the kernel.
type Header struct {
	ID           uint32 // agent id
	Status       uint32 // 0, or StatusTimeout on a read
	TimeoutMS    uint32 // response timeout of a request; 0 = none expected
	Retries      uint32 // kernel resends
	Length       uint32 // header + MAD length on a read
	QPN          uint32 // remote QP
	QKey         uint32
	LID          uint16 // remote LID; 0xffff for directed-route SMPs
	SL           uint8
	PathBits     uint8
	GRHPresent   uint8
	GIDIndex     uint8
	HopLimit     uint8
	TrafficClass uint8
	GID          [16]byte
	FlowLabel    uint32
	PKeyIndex    uint16 // not in the old 56-byte header
}

// MarshalTo encodes h into the first 64 bytes of b.
func (h *Header) MarshalTo(b []byte) error { return h.marshal(b, HeaderSize) }

// UnmarshalBinary decodes the first 64 bytes of b.
func (h *Header) UnmarshalBinary(b []byte) error { return h.unmarshal(b, HeaderSize) }

// marshal writes the 64-byte header, or the old 56-byte one when size is
// OldHeaderSize.
func (h *Header) marshal(b []byte, size int) error {
	if len(b) < size {
		return ErrShort
	}
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], h.ID)
	ne.PutUint32(b[4:], h.Status)
	ne.PutUint32(b[8:], h.TimeoutMS)
	ne.PutUint32(b[12:], h.Retries)
	ne.PutUint32(b[16:], h.Length)
	binary.BigEndian.PutUint32(b[20:], h.QPN)
	binary.BigEndian.PutUint32(b[24:], h.QKey)
	binary.BigEndian.PutUint16(b[28:], h.LID)
	b[30] = h.SL
	b[31] = h.PathBits
	b[32] = h.GRHPresent
	b[33] = h.GIDIndex
	b[34] = h.HopLimit
	b[35] = h.TrafficClass
	copy(b[36:52], h.GID[:])
	binary.BigEndian.PutUint32(b[52:], h.FlowLabel)
	if size == HeaderSize {
		ne.PutUint16(b[56:], h.PKeyIndex)
		clear(b[58:64])
	}
	return nil
}

func (h *Header) unmarshal(b []byte, size int) error {
	if len(b) < size {
		return ErrShort
	}
	ne := binary.NativeEndian
	h.ID = ne.Uint32(b[0:])
	h.Status = ne.Uint32(b[4:])
	h.TimeoutMS = ne.Uint32(b[8:])
	h.Retries = ne.Uint32(b[12:])
	h.Length = ne.Uint32(b[16:])
	h.QPN = binary.BigEndian.Uint32(b[20:])
	h.QKey = binary.BigEndian.Uint32(b[24:])
	h.LID = binary.BigEndian.Uint16(b[28:])
	h.SL = b[30]
	h.PathBits = b[31]
	h.GRHPresent = b[32]
	h.GIDIndex = b[33]
	h.HopLimit = b[34]
	h.TrafficClass = b[35]
	copy(h.GID[:], b[36:52])
	h.FlowLabel = binary.BigEndian.Uint32(b[52:])
	h.PKeyIndex = 0
	if size == HeaderSize {
		h.PKeyIndex = ne.Uint16(b[56:])
	}
	return nil
}

// MethodMask is the 128-bit set of methods whose unsolicited requests an
// agent receives: bit m of word m/64 is method m.
type MethodMask [2]uint64

// putLongs writes the mask as the kernel's array of unsigned long in host
// order (two 64-bit words, or four 32-bit words on 32-bit systems).
func (m MethodMask) putLongs(b []byte) {
	ne := binary.NativeEndian
	if bits.UintSize == 64 {
		ne.PutUint64(b[0:], m[0])
		ne.PutUint64(b[8:], m[1])
		return
	}
	ne.PutUint32(b[0:], uint32(m[0]))
	ne.PutUint32(b[4:], uint32(m[0]>>32))
	ne.PutUint32(b[8:], uint32(m[1]))
	ne.PutUint32(b[12:], uint32(m[1]>>32))
}

func (m *MethodMask) longs(b []byte) {
	ne := binary.NativeEndian
	if bits.UintSize == 64 {
		m[0], m[1] = ne.Uint64(b[0:]), ne.Uint64(b[8:])
		return
	}
	m[0] = uint64(ne.Uint32(b[0:])) | uint64(ne.Uint32(b[4:]))<<32
	m[1] = uint64(ne.Uint32(b[8:])) | uint64(ne.Uint32(b[12:]))<<32
}

// RegReq is struct ib_user_mad_reg_req, the argument of
// IoctlRegisterAgent. All fields are in host order.
type RegReq struct {
	ID           uint32 // out: agent id
	MethodMask   MethodMask
	QPN          uint8 // 0 = SMI, 1 = GSI
	Class        uint8
	ClassVersion uint8
	OUI          [3]byte
	RMPPVersion  uint8
}

// MarshalTo encodes r into the first 28 bytes of b.
func (r *RegReq) MarshalTo(b []byte) error {
	if len(b) < RegReqSize {
		return ErrShort
	}
	binary.NativeEndian.PutUint32(b[0:], r.ID)
	r.MethodMask.putLongs(b[4:20])
	b[20] = r.QPN
	b[21] = r.Class
	b[22] = r.ClassVersion
	copy(b[23:26], r.OUI[:])
	b[26] = r.RMPPVersion
	b[27] = 0
	return nil
}

// UnmarshalBinary decodes the first 28 bytes of b.
func (r *RegReq) UnmarshalBinary(b []byte) error {
	if len(b) < RegReqSize {
		return ErrShort
	}
	r.ID = binary.NativeEndian.Uint32(b[0:])
	r.MethodMask.longs(b[4:20])
	r.QPN = b[20]
	r.Class = b[21]
	r.ClassVersion = b[22]
	copy(r.OUI[:], b[23:26])
	r.RMPPVersion = b[26]
	return nil
}

// RegReq2 is struct ib_user_mad_reg_req2, the argument of
// IoctlRegisterAgent2. All fields are in host order.
type RegReq2 struct {
	ID           uint32 // out: agent id
	QPN          uint32
	Class        uint8
	ClassVersion uint8
	Flags        uint32 // UserRMPP; on EINVAL the kernel writes back the supported mask
	MethodMask   MethodMask
	OUI          uint32 // 24-bit
	RMPPVersion  uint8
}

// MarshalTo encodes r into the first 40 bytes of b.
func (r *RegReq2) MarshalTo(b []byte) error {
	if len(b) < RegReq2Size {
		return ErrShort
	}
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], r.ID)
	ne.PutUint32(b[4:], r.QPN)
	b[8] = r.Class
	b[9] = r.ClassVersion
	ne.PutUint16(b[10:], 0)
	ne.PutUint32(b[12:], r.Flags)
	ne.PutUint64(b[16:], r.MethodMask[0])
	ne.PutUint64(b[24:], r.MethodMask[1])
	ne.PutUint32(b[32:], r.OUI)
	b[36] = r.RMPPVersion
	clear(b[37:40])
	return nil
}

// UnmarshalBinary decodes the first 40 bytes of b.
func (r *RegReq2) UnmarshalBinary(b []byte) error {
	if len(b) < RegReq2Size {
		return ErrShort
	}
	ne := binary.NativeEndian
	r.ID = ne.Uint32(b[0:])
	r.QPN = ne.Uint32(b[4:])
	r.Class = b[8]
	r.ClassVersion = b[9]
	r.Flags = ne.Uint32(b[12:])
	r.MethodMask = MethodMask{ne.Uint64(b[16:]), ne.Uint64(b[24:])}
	r.OUI = ne.Uint32(b[32:])
	r.RMPPVersion = b[36]
	return nil
}
