// Package transport defines how the tools reach a fabric: one interface
// that carries 256-byte MADs of any class, with implementations for the
// kernel umad device (package umad), a running ibsim (package ibsim) and
// the embedded simulator (package sim).
//
// A transport picks the queue pair from the MAD's management class byte:
// SMPs (classes 0x01 and 0x81) go to QP0; every other class (PerfMgt 0x04,
// ...) is a GMP sent LID-routed to QP1 with the well-known Q_Key
// 0x80010000.
package transport

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors shared by all transports.
var (
	// ErrTimeout: no response arrived in time (or ibsim answered with
	// status 110, or the kernel returned ETIMEDOUT).
	ErrTimeout = errors.New("timed out")
	// ErrClosed: the transport was closed.
	ErrClosed = errors.New("transport closed")
	// ErrNoDevice: no usable fabric attachment was found.
	ErrNoDevice = errors.New("no InfiniBand device")
	// ErrReadOnly: a Set method was sent through a read-only transport.
	ErrReadOnly = errors.New("set method refused: the fabric was opened read-only")
)

// MethodSet is the Set method of every management class (byte 3 of a
// MAD, without the R bit).
const MethodSet = 0x02

// SA (class 0x03) SubnAdmDelete: a multicast leave, which changes the
// subnet as much as a Set does.
const (
	classSA        = 0x03
	methodSADelete = 0x15
)

// IsSet reports whether the MAD req carries a Set method (or an SA
// Delete).
func IsSet(req []byte) bool {
	if len(req) <= 3 {
		return false
	}
	m := req[3] & 0x7f
	return m == MethodSet || (req[1] == classSA && m == methodSADelete)
}

// SMPClass reports whether class is a subnet management class (QP0).
func SMPClass(class uint8) bool { return class == 0x01 || class == 0x81 }

// ReadOnly wraps t so that Exchange refuses every Set (of any class) with
// ErrReadOnly, wrapped in an *OpError, without sending it. The tools open
// their fabric this way unless the user asks for a Set explicitly.
func ReadOnly(t Transport) Transport {
	if _, ok := t.(*readOnly); ok {
		return t
	}
	return &readOnly{t}
}

type readOnly struct{ Transport }

func (r *readOnly) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if IsSet(req) {
		return &OpError{Op: "send", Err: ErrReadOnly}
	}
	return r.Transport.Exchange(ctx, dlid, req, resp)
}

// Unwrap returns the transport behind a read-only wrapper (t itself when
// it is not one).
func Unwrap(t Transport) Transport {
	if r, ok := t.(*readOnly); ok {
		return r.Transport
	}
	return t
}

// Limits is what a transport says about itself to its callers (see
// Limiter).
type Limits struct {
	// Deadline: Exchange ends at ctx's Deadline() by itself (within a
	// few milliseconds), whether or not ctx's Done channel closes then,
	// and notices a cancelled ctx within as long. A caller need not arm
	// a timer per MAD.
	Deadline bool
	// Window is the most MADs worth having in flight at once through
	// this transport (0: no limit of its own). More would only wait in
	// the transport or make the peer drop them; callers take it as an
	// upper bound below their own.
	Window int
	// Queues: the peer queues every MAD it is sent and answers each in
	// turn, however many are addressed to one node at once (ibsim serves
	// its socket in order and has no VL15 buffer to overflow). A caller
	// may then send one node several SMPs at once; a real switch SMA,
	// whose VL15 buffer holds one packet, drops an SMP that arrives
	// while it is busy.
	Queues bool
	// Immediate: Exchange answers, or fails, in the caller's goroutine
	// without waiting for a peer (the embedded simulator without its
	// latency model): nothing is ever in flight long enough to be
	// taken for lost before its timeout.
	Immediate bool
}

// Limiter is a Transport that states its Limits.
type Limiter interface {
	Limits() Limits
}

// LimitsOf returns t's Limits (the zero Limits for a transport that
// states none), looking through the read-only wrapper.
func LimitsOf(t Transport) Limits {
	if l, ok := Unwrap(t).(Limiter); ok {
		return l.Limits()
	}
	return Limits{}
}

// Transport carries MADs to a fabric and back.
//
// Exchange sends req, a 256-byte MAD, to dlid (smp.PermissiveLID for a
// directed-route SMP; a LID for a GMP) and copies the 256-byte response into resp, which
// must hold at least 256 bytes. It makes exactly one attempt: retries are
// the caller's. It returns ErrTimeout (possibly wrapped) when no response
// came before ctx's deadline. Exchange is safe for concurrent use; the
// transport owns the transaction ID and may rewrite it (the response's TID
// is then the one it sent). The caller keeps ownership of req and resp.
type Transport interface {
	Exchange(ctx context.Context, dlid uint16, req, resp []byte) error
	Close() error
}

// OpError names the transport operation and device that failed.
type OpError struct {
	Op     string // "open", "send", "recv", "register", ...
	Source string // device or endpoint, e.g. "/dev/infiniband/umad0", "ibsim sim"
	Err    error
}

func (e *OpError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Source, e.Err)
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// Streamer is a Transport that carries a transaction of more than one
// MAD each way under one transaction ID, as an RMPP transfer (a
// multi-record SA answer) needs.
//
// Stream sends req (256 bytes) to dlid and hands recv, in arrival order,
// every response MAD of the transaction (the TID the transport gave
// req). recv returns a MAD to send within the same transaction (nil:
// none; an RMPP ACK), whether the transaction is over, or an error that
// ends it; a reply returned with done is sent before Stream returns (the
// ACK of a transfer's last segment). Stream returns recv's error, ErrTimeout (wrapped) when idle
// passes with nothing arriving or ctx's deadline comes, or ctx's error.
// The slices recv is given are valid only during the call.
type Streamer interface {
	Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func(resp []byte) (reply []byte, done bool, err error)) error
}

// StreamerOf returns t as a Streamer, looking through the read-only
// wrapper (whose check it keeps: a Set is refused, in req and in every
// reply), and false when t carries one answer MAD per request only.
func StreamerOf(t Transport) (Streamer, bool) {
	_, ro := t.(*readOnly)
	s, ok := Unwrap(t).(Streamer)
	if !ok || !ro {
		return s, ok
	}
	return roStreamer{s}, true
}

type roStreamer struct{ s Streamer }

func (r roStreamer) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	if IsSet(req) {
		return &OpError{Op: "send", Err: ErrReadOnly}
	}
	return r.s.Stream(ctx, dlid, req, idle, func(resp []byte) ([]byte, bool, error) {
		reply, done, err := recv(resp)
		if err == nil && reply != nil && IsSet(reply) {
			return nil, true, &OpError{Op: "send", Err: ErrReadOnly}
		}
		return reply, done, err
	})
}
