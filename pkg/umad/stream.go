package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// streamItem is one answer MAD of a Stream transaction, or the kernel's
// verdict on its request.
type streamItem struct {
	mad []byte
	err error
}

// streamDepth is how many answer MADs of one transaction the reader
// holds for Stream; more are dropped (the sender resends what is not
// ACKed).
const streamDepth = 64

// streamDeliver hands one MAD of a Stream's TID to the waiting Stream.
func streamDeliver(w *waiter, h *Header, mad []byte) {
	var it streamItem
	switch {
	case h.Status == StatusTimeout:
		it.err = transport.ErrTimeout
	case h.Status != 0:
		it.err = fmt.Errorf("kernel status %d: %w", h.Status, syscall.Errno(h.Status))
	case len(mad) < smp.MADSize:
		it.err = fmt.Errorf("response of %d bytes: %w", len(mad), smp.ErrShort)
	case mad[3]&smp.MethodResponseFlag == 0:
		return // not a response
	default:
		it.mad = append([]byte(nil), mad[:smp.MADSize]...)
	}
	select {
	case w.stream <- it:
	default:
	}
}

// Stream implements transport.Streamer: it sends req to dlid and hands
// recv every answer MAD of its TID (the agents ask for no kernel RMPP, so
// the segments of an SA GetTable answer arrive one by one), sending the
// MADs recv returns (RMPP ACKs) within the transaction: the same agent,
// destination and TID, expecting no answer of their own.
func (d *Device) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	if len(req) < smp.MADSize {
		return d.opErr("send", smp.ErrShort)
	}
	class := req[1]
	agent, qpn, qkey, ok := d.route(class)
	if !ok {
		return d.opErr("send", ErrClass)
	}
	if idle <= 0 {
		idle = DefaultTimeout
	}
	if err := ctx.Err(); err != nil {
		return d.opErr("send", timeoutErr(ctx))
	}
	w := &waiter{class: class, ch: make(chan error, 1), stream: make(chan streamItem, streamDepth)}
	var tid uint32
	d.mu.Lock()
	if d.closed || d.fatal != nil {
		err := d.fatal
		d.mu.Unlock()
		if err == nil {
			err = transport.ErrClosed
		}
		return d.opErr("send", err)
	}
	for {
		tid = d.tid.Add(1)
		if _, busy := d.waiters[tid]; !busy {
			break
		}
	}
	d.waiters[tid] = w
	d.mu.Unlock()
	defer d.remove(tid)

	buf := make([]byte, d.hdrLen+smp.MADSize)
	send := func(m []byte, wait time.Duration) error {
		ms := (wait + time.Millisecond - 1) / time.Millisecond
		if ms > math.MaxUint32 {
			ms = math.MaxUint32
		}
		h := Header{ID: agent, TimeoutMS: uint32(ms), QPN: qpn, QKey: qkey, LID: dlid}
		h.marshal(buf, d.hdrLen)
		mad := buf[d.hdrLen:]
		copy(mad, m[:smp.MADSize])
		binary.BigEndian.PutUint32(mad[8:], 0)
		binary.BigEndian.PutUint32(mad[12:], tid)
		deadline := time.Now().Add(idle)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		err := writeBounded(ctx, d.f, buf, deadline, d.quit)
		if errors.Is(err, syscall.EBADF) || d.isClosed() {
			err = transport.ErrClosed
		}
		return err
	}
	if err := send(req, idle); err != nil {
		return d.opErr("send", err)
	}
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case it := <-w.stream:
			if it.err != nil {
				return d.opErr("recv", it.err)
			}
			reply, done, err := recv(it.mad)
			if err != nil {
				return err
			}
			if len(reply) >= smp.MADSize {
				if err := send(reply, 0); err != nil {
					return d.opErr("send", err)
				}
			}
			if done {
				return nil
			}
			timer.Reset(idle)
		case err := <-w.ch: // Close or a dead device
			return d.opErr("recv", err)
		case <-timer.C:
			return d.opErr("recv", transport.ErrTimeout)
		case <-ctx.Done():
			return d.opErr("recv", timeoutErr(ctx))
		}
	}
}

// isClosed reports whether Close has begun.
func (d *Device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}
