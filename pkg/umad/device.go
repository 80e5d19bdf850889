package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// DefaultTimeout is the response timeout given to the kernel when the
// Exchange context has no deadline (libibmad's default).
const DefaultTimeout = time.Second

// closeWait bounds how long Close waits for the reader to stop.
const closeWait = 2 * time.Second

// minReadMAD is the shortest read that carries a usable MAD: the header plus
// the 24-byte common MAD header (what a timed-out request comes back as),
// counted after the header.
const minReadMAD = smp.HeaderSize

// ioctlFunc performs one ioctl on the device with arg as the in/out
// argument buffer (nil for an ioctl without argument). It returns the
// errno as a syscall.Errno.
type ioctlFunc func(req uint, arg []byte) error

// Device is an open umad device with agents registered for the
// directed-route (0x81) and LID-routed (0x01) SMP classes on QP0 and for
// PerfMgt (0x04) and SubnAdm (0x03) on QP1. It implements
// transport.Transport and transport.Streamer and is safe for concurrent
// use.
type Device struct {
	f      io.ReadWriteCloser
	ioctl  ioctlFunc
	name   string
	hdrLen int // HeaderSize, or OldHeaderSize on kernels without P_Key index support
	Ref    PortRef

	// agents are the registered agent ids, indexed as agentSpecs.
	agents [numAgents]uint32

	tid     atomic.Uint32
	bufs    sync.Pool // *[]byte of hdrLen+256 for writes
	mu      sync.Mutex
	waiters map[uint32]*waiter
	closed  bool
	fatal   error         // the reader's terminal error
	done    chan struct{} // closed when the reader has exited
	quit    chan struct{} // closed by Close: blocked writes give up
}

type waiter struct {
	class uint8
	resp  []byte
	ch    chan error // buffered 1
	// stream, for a Stream transaction, takes every answer MAD of the
	// TID (the waiter stays until Stream ends); nil for an Exchange.
	stream chan streamItem
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// newDevice registers the SMP agents on f and starts the reader. name is
// used in errors. On failure f is closed.
func newDevice(f io.ReadWriteCloser, ioctl ioctlFunc, name string) (*Device, error) {
	d := &Device{f: f, ioctl: ioctl, name: name, hdrLen: HeaderSize,
		waiters: make(map[uint32]*waiter), done: make(chan struct{}), quit: make(chan struct{})}
	if err := d.register(); err != nil {
		f.Close()
		return nil, &transport.OpError{Op: "register", Source: name, Err: err}
	}
	size := d.hdrLen + smp.MADSize
	d.bufs.New = func() any { b := make([]byte, size); return &b }
	// Start the counter somewhere unpredictable, as libibmad does, so two
	// runs do not reuse each other's TIDs.
	d.tid.Store(uint32(time.Now().UnixNano()))
	go d.reader()
	return d, nil
}

// agentSpec is one agent the device registers: a management class and
// its version on a QP.
type agentSpec struct {
	class   uint8
	qpn     uint8
	version uint8
}

// agentSpecs are the agents every Device registers, in this order: the two
// SMP classes on QP0, PerfMgt (class 0x04, version 1) and SubnAdm (class
// 0x03, version 2) on QP1. The SA agent asks for no kernel RMPP
// (rmpp_version 0): the kernel hands each segment of an RMPP answer to
// us as it comes, and Stream carries them and the ACKs (userspace RMPP,
// as pkg/sa does it); through Exchange the later segments reach no
// waiter and are dropped.
var agentSpecs = [numAgents]agentSpec{
	{smp.ClassDirectRoute, 0, 1}, {smp.ClassLIDRouted, 0, 1}, {classPerfMgt, 1, 1}, {classSA, 1, 2},
}

const (
	numAgents    = 4
	classPerfMgt = 0x04
	classSA      = 0x03
)

// register registers the agents with REGISTER_AGENT2, falling back to
// ENABLE_PKEY and REGISTER_AGENT on kernels that lack it. On failure the
// agents registered so far are unregistered.
func (d *Device) register() error {
	var buf [RegReq2Size]byte
	for i, a := range agentSpecs {
		req2 := RegReq2{QPN: uint32(a.qpn), Class: a.class, ClassVersion: a.version}
		req2.MarshalTo(buf[:])
		err := d.ioctl(IoctlRegisterAgent2, buf[:RegReq2Size])
		if err == nil {
			var out RegReq2
			out.UnmarshalBinary(buf[:])
			d.agents[i] = out.ID
			continue
		}
		if i > 0 || (!errors.Is(err, syscall.ENOTTY) && !errors.Is(err, syscall.EINVAL)) {
			d.unregisterFirst(i)
			return fmt.Errorf("REGISTER_AGENT2 class 0x%02x: %w", a.class, err)
		}
		return d.registerOld()
	}
	return nil
}

// registerOld registers the agents with the first registration ioctl.
func (d *Device) registerOld() error {
	var buf [RegReq2Size]byte
	if err := d.ioctl(IoctlEnablePKey, nil); err != nil {
		d.hdrLen = OldHeaderSize // libibumad: old header unless this succeeds
	}
	for i, a := range agentSpecs {
		req := RegReq{QPN: a.qpn, Class: a.class, ClassVersion: a.version}
		req.MarshalTo(buf[:])
		if err := d.ioctl(IoctlRegisterAgent, buf[:RegReqSize]); err != nil {
			d.unregisterFirst(i)
			return fmt.Errorf("REGISTER_AGENT class 0x%02x: %w", a.class, err)
		}
		var out RegReq
		out.UnmarshalBinary(buf[:])
		d.agents[i] = out.ID
	}
	return nil
}

// unregisterFirst unregisters the first n agents.
func (d *Device) unregisterFirst(n int) {
	for i := range n {
		d.unregister(d.agents[i])
	}
}

func (d *Device) unregister(id uint32) error {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], id)
	return d.ioctl(IoctlUnregisterAgent, b[:])
}

// Name is the device path used in errors.
func (d *Device) Name() string { return d.name }

func (d *Device) opErr(op string, err error) error {
	return &transport.OpError{Op: op, Source: d.name, Err: err}
}

// Exchange sends the 256-byte SMP req to dlid and copies the response
// into resp. The device sets the low 32 bits of the TID to its own
// counter (and the high 32 bits, which the kernel owns, to zero); the
// kernel gives up at the ctx deadline (DefaultTimeout without one) and
// the result is then transport.ErrTimeout, as it is on ctx cancellation.
func (d *Device) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if len(req) < smp.MADSize || len(resp) < smp.MADSize {
		return d.opErr("send", smp.ErrShort)
	}
	class := req[1]
	agent, qpn, qkey, ok := d.route(class)
	if !ok {
		return d.opErr("send", ErrClass)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	left := time.Until(deadline)
	if left <= 0 || ctx.Err() != nil {
		return d.opErr("send", timeoutErr(ctx))
	}
	ms := (left + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		ms = math.MaxUint32
	}

	w := waiterPool.Get().(*waiter)
	w.class, w.resp = class, resp[:smp.MADSize]
	var tid uint32
	d.mu.Lock()
	if d.closed || d.fatal != nil {
		err := d.fatal
		d.mu.Unlock()
		waiterPool.Put(w)
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

	bp := d.bufs.Get().(*[]byte)
	buf := *bp
	h := Header{ID: agent, TimeoutMS: uint32(ms), QPN: qpn, QKey: qkey, LID: dlid}
	h.marshal(buf, d.hdrLen)
	mad := buf[d.hdrLen:]
	copy(mad, req[:smp.MADSize])
	binary.BigEndian.PutUint32(mad[8:], 0)
	binary.BigEndian.PutUint32(mad[12:], tid)
	err := writeBounded(ctx, d.f, buf, deadline, d.quit)
	d.bufs.Put(bp)
	if err != nil {
		if d.remove(tid) {
			waiterPool.Put(w)
			if errors.Is(err, fs.ErrClosed) {
				err = transport.ErrClosed
			}
			return d.opErr("send", err)
		}
		// The reader or Close claimed the waiter meanwhile; take its verdict.
		return d.finish(w)
	}

	select {
	case err := <-w.ch:
		w.resp = nil
		waiterPool.Put(w)
		if err != nil {
			return d.opErr("recv", err)
		}
		return nil
	case <-ctx.Done():
		if d.remove(tid) {
			waiterPool.Put(w)
			return d.opErr("recv", timeoutErr(ctx))
		}
		return d.finish(w)
	}
}

// route gives the agent, QP and Q_Key a MAD of class goes out with.
func (d *Device) route(class uint8) (agent, qpn, qkey uint32, ok bool) {
	switch class {
	case smp.ClassDirectRoute:
		return d.agents[0], 0, 0, true
	case smp.ClassLIDRouted:
		return d.agents[1], 0, 0, true
	case classPerfMgt:
		return d.agents[2], 1, QP1QKey, true
	case classSA:
		return d.agents[3], 1, QP1QKey, true
	}
	return 0, 0, 0, false
}

// finish waits for the verdict of a waiter someone else removed.
func (d *Device) finish(w *waiter) error {
	err := <-w.ch
	w.resp = nil
	waiterPool.Put(w)
	if err != nil {
		return d.opErr("recv", err)
	}
	return nil
}

// remove deletes the waiter of tid and reports whether it was still there
// (whoever removes a waiter owns it).
func (d *Device) remove(tid uint32) bool {
	d.mu.Lock()
	_, ok := d.waiters[tid]
	delete(d.waiters, tid)
	d.mu.Unlock()
	return ok
}

func timeoutErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w (%w)", transport.ErrTimeout, err)
	}
	return transport.ErrTimeout
}

// reader is the single goroutine reading the device: it hands each
// response, or timed-out request, to the waiter of its TID.
func (d *Device) reader() {
	defer close(d.done)
	buf := make([]byte, d.hdrLen+smp.MADSize)
	var h Header
	for {
		n, err := d.f.Read(buf)
		if err != nil {
			d.mu.Lock()
			closed := d.closed
			d.mu.Unlock()
			if closed {
				return
			}
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN) {
				continue
			}
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("device gone: %w", io.ErrUnexpectedEOF)
			}
			d.fail(err)
			return
		}
		if n < d.hdrLen+minReadMAD {
			continue // nothing we can attribute
		}
		h.unmarshal(buf, d.hdrLen)
		mad := buf[d.hdrLen:n]
		tid := binary.BigEndian.Uint32(mad[12:16])
		d.mu.Lock()
		w, ok := d.waiters[tid]
		if !ok || w.class != mad[1] {
			d.mu.Unlock()
			continue // late or stray
		}
		if w.stream != nil {
			d.mu.Unlock()
			streamDeliver(w, &h, mad)
			continue
		}
		var verdict error
		switch {
		case h.Status == StatusTimeout:
			verdict = transport.ErrTimeout
		case h.Status != 0:
			verdict = fmt.Errorf("kernel status %d: %w", h.Status, syscall.Errno(h.Status))
		case len(mad) < smp.MADSize:
			verdict = fmt.Errorf("response of %d bytes: %w", n, smp.ErrShort)
		case mad[3]&smp.MethodResponseFlag == 0:
			d.mu.Unlock()
			continue // not a response (our own request looped back?)
		}
		delete(d.waiters, tid)
		d.mu.Unlock()
		if verdict == nil {
			copy(w.resp, mad[:smp.MADSize])
		}
		w.ch <- verdict
	}
}

// fail ends every pending and future exchange with err.
func (d *Device) fail(err error) {
	d.mu.Lock()
	if d.fatal == nil {
		d.fatal = err
	}
	ws := d.waiters
	d.waiters = make(map[uint32]*waiter)
	d.mu.Unlock()
	for _, w := range ws {
		w.ch <- err
	}
}

// Limits: the kernel ends every send at the timeout Exchange computes
// from ctx's deadline (no retries), so a caller needs no timer of its
// own.
func (d *Device) Limits() transport.Limits { return transport.Limits{Deadline: true} }

// Close unregisters the agents and closes the device; pending exchanges
// return transport.ErrClosed.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return d.opErr("close", transport.ErrClosed)
	}
	d.closed = true
	close(d.quit)
	ws := d.waiters
	d.waiters = make(map[uint32]*waiter)
	d.mu.Unlock()
	for _, w := range ws {
		w.ch <- transport.ErrClosed
	}
	var err error
	for _, id := range d.agents {
		if e := d.unregister(id); err == nil {
			err = e
		}
	}
	if e := d.f.Close(); err == nil {
		err = e
	}
	select {
	case <-d.done:
	case <-time.After(closeWait):
		// A file that cannot interrupt a blocked read (not pollable); the
		// reader exits at its next read error.
	}
	if err != nil {
		return d.opErr("close", err)
	}
	return nil
}
