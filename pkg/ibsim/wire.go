// Package ibsim speaks the socket protocol of the ibsim fabric simulator
// natively, without ibsim's LD_PRELOAD shim (which cannot see the raw
// system calls of a Go program).
//
// The wire structures (Ctl, ClientInfo, Request, Port, Vendor) have
// hand-written encoders and decoders that never panic and never allocate,
// except ClientInfo's node id string. ibsim copies C structs onto the wire:
// the control structures are host byte order (little-endian on the x86_64
// and arm64 builds this package supports) while the MAD inside a Request
// is big-endian as on a real fabric.
//
// Client (linux only) connects to a running ibsim and implements
// transport.Transport.
//
// ibsim is a shared peer with ten client slots, and the client never
// waits on it without a bound: writes to a full socket (ibsim stopped, or
// its console's X dropped us) wait in short slices watching ctx, the
// timeout and Close; control requests carry deadlines; Close waits at
// most half a second for DISCONNECT's echo (in unix mode a DISCONNECT
// that reached ibsim's socket takes effect anyway). Dial fails at once
// with ErrNotRunning when nothing listens, and tells ibsim's refusals
// apart (ErrNoSlot, ErrUnknownNode, ErrSMExists).
//
// The data path costs one write per request and one recvmmsg per batch of
// replies: a reader goroutine hands each reply to the Exchange waiting on
// its call's one channel, and a janitor ticking every 5 ms ends the calls
// whose deadline passed or whose ctx ended (and all of them after Close),
// so an Exchange neither arms a timer nor selects over its ctx; the
// deadline holds without a timer behind the ctx (Limits). ibsim answers
// one request per select(2) round from a single thread, and our data
// socket and its slot socket are connected to each other, so
// net.unix.max_dgram_qlen (10) does not bound them: the requests in
// flight are bounded by the socket buffers (about 167 datagrams each
// with the defaults), which Limits reports as the useful window.
//
// CONNECT needs care: ibsim answers it by connecting its slot socket to
// the client's :in<id> socket and exits (ibpanic "can't connect to in
// socket") if that socket is gone. So CONNECT gets its own generous limit
// (Config.ConnectTimeout, independent of Timeout), and a CONNECT given up
// on after it reached ibsim (limit or ctx) is handed with both sockets to
// a lingerer: the running executable started again in its own session
// with the sockets, which waits up to 30 minutes for ibsim's answer,
// sends DISCONNECT for the slot it got and exits (earlier if ibsim's
// socket disappears). Every binary that links this package can act as
// the lingerer (an init function checks for it). Abort, for a process
// about to exit at once, writes DISCONNECT for every slot of the process
// without waiting.
//
// What ibsim makes impossible: a process killed by SIGKILL while its
// CONNECT is still queued in a stopped or busy ibsim leaves nobody to
// keep its socket, and ibsim exits when it gets to that CONNECT; a
// process killed by SIGKILL while attached keeps its slot until ibsim's
// console command X frees it; and after X, ibsim may give that slot
// number to another client, which the first client's later DISCONNECT
// (ibsim does not check its sender) would release.
package ibsim

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the wire structures.
const (
	CtlSize        = 80  // sim_ctl, every control datagram
	CtlDataSize    = 64  // the payload area of sim_ctl
	ClientInfoSize = 44  // sim_client_info, the CONNECT payload
	NodeIDSize     = 32  // the NUL-padded node id of sim_client_info
	RequestSize    = 288 // sim_request, every MAD datagram
	MADSize        = 256 // the MAD inside a Request
	PortSize       = 4   // sim_port, the GET_PORT reply
	VendorSize     = 24  // sim_vendor, the GET_VENDOR reply
	MaxClients     = 10  // ibsim's compile-time slot count
)

// Magic is the value every sim_ctl starts with.
const Magic uint32 = 0xdeadbeef

// StatusTimeout is the Request status ibsim sets on a MAD it dropped or
// could not route (ETIMEDOUT).
const StatusTimeout uint32 = 110

// CtlType is the type of a control message.
type CtlType uint32

// Control message types. CtlError is only ever a reply: the request failed.
const (
	CtlError       CtlType = 0
	CtlConnect     CtlType = 1
	CtlDisconnect  CtlType = 2
	CtlGetPort     CtlType = 3
	CtlGetVendor   CtlType = 4
	CtlGetGID      CtlType = 5
	CtlGetGUID     CtlType = 6
	CtlGetNodeInfo CtlType = 7
	CtlGetPortInfo CtlType = 8
	CtlSetIsSM     CtlType = 9
	CtlGetPKeys    CtlType = 10
)

// String names the control type.
func (t CtlType) String() string {
	switch t {
	case CtlError:
		return "ERROR"
	case CtlConnect:
		return "CONNECT"
	case CtlDisconnect:
		return "DISCONNECT"
	case CtlGetPort:
		return "GET_PORT"
	case CtlGetVendor:
		return "GET_VENDOR"
	case CtlGetGID:
		return "GET_GID"
	case CtlGetGUID:
		return "GET_GUID"
	case CtlGetNodeInfo:
		return "GET_NODEINFO"
	case CtlGetPortInfo:
		return "GET_PORTINFO"
	case CtlSetIsSM:
		return "SET_ISSM"
	case CtlGetPKeys:
		return "GET_PKEYS"
	}
	return "UNKNOWN"
}

// Sentinel errors of the codec and the client.
var (
	// ErrShort: the buffer is smaller than the structure it should hold.
	ErrShort = errors.New("ibsim: buffer too short")
	// ErrMagic: a control message does not start with Magic.
	ErrMagic = errors.New("ibsim: bad control message magic")
	// ErrNodeID: a node id does not fit the 31 characters of
	// sim_client_info or contains a NUL byte.
	ErrNodeID = errors.New("ibsim: node id longer than 31 bytes or containing NUL")
	// ErrRefused: ibsim answered a control request with type ERROR (for
	// CONNECT: no free slot, unknown node, or another SM on that node).
	ErrRefused = errors.New("ibsim: request refused")
	// ErrBadReply: a reply that does not fit the request.
	ErrBadReply = errors.New("ibsim: unexpected reply")
	// ErrNotRunning: nothing listens on ibsim's control socket (unix
	// mode), or its control port answered with an ICMP error (inet mode).
	ErrNotRunning = errors.New("ibsim is not running")
)

// Why ibsim refused CONNECT. ibsim answers every refusal with the same
// ERROR reply; Dial tells them apart by asking again with fewer
// conditions. Each is also ErrRefused.
var (
	// ErrNoSlot: all of ibsim's client slots are taken.
	ErrNoSlot error = &refusal{fmt.Sprintf("ibsim has no free client slot: %d in use", MaxClients)}
	// ErrUnknownNode: the node to attach to is not in ibsim's fabric
	// (neither a node id nor a node description of its net file).
	ErrUnknownNode error = &refusal{"node is not in ibsim's fabric"}
	// ErrSMExists: attaching as SM to a node where another client already
	// is the SM.
	ErrSMExists error = &refusal{"another client is attached as SM to that node"}
)

// refusal is a reason for ibsim's ERROR reply to CONNECT.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// Is makes every refusal match ErrRefused.
func (r *refusal) Is(target error) bool { return target == ErrRefused }

var le = binary.LittleEndian
var be = binary.BigEndian

// Ctl is sim_ctl, the 80-byte control message used in both directions.
type Ctl struct {
	Magic    uint32
	ClientID uint32 // the sender's slot; 0 for CONNECT
	Type     CtlType
	Len      uint32 // informational payload length
	Data     [CtlDataSize]byte
}

// NewCtl returns a control request of type t for slot with the payload
// copied from data (at most 64 bytes are used).
func NewCtl(t CtlType, slot uint32, data []byte) Ctl {
	c := Ctl{Magic: Magic, ClientID: slot, Type: t}
	c.Len = uint32(copy(c.Data[:], data))
	return c
}

// MarshalTo encodes c into the first 80 bytes of b.
func (c *Ctl) MarshalTo(b []byte) error {
	if len(b) < CtlSize {
		return ErrShort
	}
	le.PutUint32(b[0:], c.Magic)
	le.PutUint32(b[4:], c.ClientID)
	le.PutUint32(b[8:], uint32(c.Type))
	le.PutUint32(b[12:], c.Len)
	copy(b[16:CtlSize], c.Data[:])
	return nil
}

// MarshalBinary encodes c into a new 80-byte slice.
func (c *Ctl) MarshalBinary() ([]byte, error) {
	b := make([]byte, CtlSize)
	return b, c.MarshalTo(b)
}

// UnmarshalBinary decodes the first 80 bytes of b. It returns ErrMagic
// (after decoding) when the magic is wrong.
func (c *Ctl) UnmarshalBinary(b []byte) error {
	if len(b) < CtlSize {
		return ErrShort
	}
	c.Magic = le.Uint32(b[0:])
	c.ClientID = le.Uint32(b[4:])
	c.Type = CtlType(le.Uint32(b[8:]))
	c.Len = le.Uint32(b[12:])
	copy(c.Data[:], b[16:CtlSize])
	if c.Magic != Magic {
		return ErrMagic
	}
	return nil
}

// ClientInfo is sim_client_info, the payload of CONNECT. In the request
// ID is the client's id (positive, non-zero, unique per live client); in
// the reply it is the slot ibsim assigned, and NodeID the node actually
// attached to.
type ClientInfo struct {
	ID     uint32
	QP     uint32 // the QP the client owns; 0 for a diagnostic client
	IsSM   uint32 // 1: accept SM traffic on QP0/QP1 of the attached port
	NodeID string // node id or description; empty: the default node
}

// MarshalTo encodes ci into the first 44 bytes of b. A node id longer than
// 31 bytes or containing a NUL is ErrNodeID.
func (ci *ClientInfo) MarshalTo(b []byte) error {
	if len(b) < ClientInfoSize {
		return ErrShort
	}
	if len(ci.NodeID) > NodeIDSize-1 {
		return ErrNodeID
	}
	for i := 0; i < len(ci.NodeID); i++ {
		if ci.NodeID[i] == 0 {
			return ErrNodeID
		}
	}
	le.PutUint32(b[0:], ci.ID)
	le.PutUint32(b[4:], ci.QP)
	le.PutUint32(b[8:], ci.IsSM)
	n := copy(b[12:ClientInfoSize], ci.NodeID)
	clear(b[12+n : ClientInfoSize])
	return nil
}

// MarshalBinary encodes ci into a new 44-byte slice.
func (ci *ClientInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, ClientInfoSize)
	return b, ci.MarshalTo(b)
}

// UnmarshalBinary decodes the first 44 bytes of b; the node id ends at
// the first NUL (or after 32 bytes).
func (ci *ClientInfo) UnmarshalBinary(b []byte) error {
	if len(b) < ClientInfoSize {
		return ErrShort
	}
	ci.ID = le.Uint32(b[0:])
	ci.QP = le.Uint32(b[4:])
	ci.IsSM = le.Uint32(b[8:])
	id := b[12:ClientInfoSize]
	n := 0
	for n < len(id) && id[n] != 0 {
		n++
	}
	ci.NodeID = string(id[:n])
	return nil
}

// Request is sim_request, the 288-byte datagram carrying one MAD in both
// directions. The LIDs travel as a big-endian u16 followed by two zero
// bytes; the QPs, status and length are big-endian.
type Request struct {
	DLID   uint16 // 0xffff (permissive) for a directed-route SMP
	SLID   uint16 // 0xffff for DR, 0 for LID-routed (ibsim fills it in)
	DQP    uint32 // 0 for SMPs, 1 for GMPs
	SQP    uint32
	Status uint32 // 0 in requests; 0 or StatusTimeout in replies
	Length uint64 // MAD length, informational (256)
	MAD    [MADSize]byte
}

// MarshalTo encodes r into the first 288 bytes of b. The 4 padding bytes
// after Status are written as zero.
func (r *Request) MarshalTo(b []byte) error {
	if len(b) < RequestSize {
		return ErrShort
	}
	be.PutUint16(b[0:], r.DLID)
	b[2], b[3] = 0, 0
	be.PutUint16(b[4:], r.SLID)
	b[6], b[7] = 0, 0
	be.PutUint32(b[8:], r.DQP)
	be.PutUint32(b[12:], r.SQP)
	be.PutUint32(b[16:], r.Status)
	le.PutUint32(b[20:], 0)
	be.PutUint64(b[24:], r.Length)
	copy(b[32:RequestSize], r.MAD[:])
	return nil
}

// MarshalBinary encodes r into a new 288-byte slice.
func (r *Request) MarshalBinary() ([]byte, error) {
	b := make([]byte, RequestSize)
	return b, r.MarshalTo(b)
}

// UnmarshalBinary decodes the first 288 bytes of b. Only the first two
// bytes of each LID word are read, as ibsim does.
func (r *Request) UnmarshalBinary(b []byte) error {
	if len(b) < RequestSize {
		return ErrShort
	}
	r.DLID = be.Uint16(b[0:])
	r.SLID = be.Uint16(b[4:])
	r.DQP = be.Uint32(b[8:])
	r.SQP = be.Uint32(b[12:])
	r.Status = be.Uint32(b[16:])
	r.Length = be.Uint64(b[24:])
	copy(r.MAD[:], b[32:RequestSize])
	return nil
}

// RequestTID returns the transaction ID of the MAD inside an encoded
// Request without decoding it; ok is false when b is too short.
func RequestTID(b []byte) (tid uint64, ok bool) {
	if len(b) < 32+16 {
		return 0, false
	}
	return be.Uint64(b[32+8:]), true
}

// Port is sim_port, the GET_PORT reply: the attached port's LID and
// PortInfo state (4 = Active).
type Port struct {
	LID   uint16
	State uint8
}

// MarshalTo encodes p into the first 4 bytes of b.
func (p *Port) MarshalTo(b []byte) error {
	if len(b) < PortSize {
		return ErrShort
	}
	le.PutUint16(b[0:], p.LID)
	b[2] = p.State
	b[3] = 0
	return nil
}

// UnmarshalBinary decodes the first 4 bytes of b.
func (p *Port) UnmarshalBinary(b []byte) error {
	if len(b) < PortSize {
		return ErrShort
	}
	p.LID = le.Uint16(b[0:])
	p.State = b[2]
	return nil
}

// Vendor is sim_vendor, the GET_VENDOR reply.
type Vendor struct {
	VendorID uint32
	PartID   uint32 // NodeInfo DeviceID
	HWVer    uint32 // NodeInfo Revision
	FWVer    uint64 // always 1
}

// MarshalTo encodes v into the first 24 bytes of b.
func (v *Vendor) MarshalTo(b []byte) error {
	if len(b) < VendorSize {
		return ErrShort
	}
	le.PutUint32(b[0:], v.VendorID)
	le.PutUint32(b[4:], v.PartID)
	le.PutUint32(b[8:], v.HWVer)
	le.PutUint32(b[12:], 0)
	le.PutUint64(b[16:], v.FWVer)
	return nil
}

// UnmarshalBinary decodes the first 24 bytes of b.
func (v *Vendor) UnmarshalBinary(b []byte) error {
	if len(b) < VendorSize {
		return ErrShort
	}
	v.VendorID = le.Uint32(b[0:])
	v.PartID = le.Uint32(b[4:])
	v.HWVer = le.Uint32(b[8:])
	v.FWVer = le.Uint64(b[16:])
	return nil
}
