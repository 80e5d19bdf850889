// Package transport defines how the tools reach a fabric: one interface
// that carries 256-byte SMPs, with implementations for the kernel umad
// device (package umad), a running ibsim (package ibsim) and the embedded
// simulator (package sim).
package transport

import (
	"context"
	"errors"
	"fmt"
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
)

// Transport carries SMPs to a fabric and back.
//
// Exchange sends req, a 256-byte MAD, to dlid (smp.PermissiveLID for a
// directed-route SMP) and copies the 256-byte response into resp, which
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
