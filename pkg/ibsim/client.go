//go:build linux

package ibsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Client is one attachment (one slot) to a running ibsim. It implements
// transport.Transport. All methods are safe for concurrent use; Close may
// be called while Exchanges are in flight (they return
// transport.ErrClosed).
type Client struct {
	cfg  Config
	src  string // OpError.Source
	id   uint32 // our CONNECT id (pid*16+n, or the data port in inet mode)
	slot uint32
	node string

	ctlMu   sync.Mutex // serialises control requests
	ctl     net.Conn
	live    bool // we hold slot: ctl requests are allowed
	issmSet bool

	data    net.Conn // connected to ibsim's :out<slot>
	tid     atomic.Uint32
	mu      sync.Mutex
	pending map[uint32]*call

	closed     chan struct{} // closed by Close
	readerDone chan struct{} // closed when the reader goroutine exits
	readErr    error         // why the reader stopped (valid after readerDone)
	closeOnce  sync.Once
	closeErr   error
}

// call is one outstanding Exchange.
type call struct {
	done chan struct{} // closed by the reader when buf holds the reply
	buf  [RequestSize]byte
	out  [RequestSize]byte // the request as sent
}

var callPool = sync.Pool{New: func() any { return new(call) }}

var idSeq atomic.Uint32

// Dial attaches to ibsim as described by cfg. While ibsim is not up yet
// (connection refused) it retries until ctx is done, so give ctx a
// deadline. The returned Client holds one of ibsim's 10 slots until Close.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c := &Client{
		cfg:        cfg,
		pending:    make(map[uint32]*call),
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	if cfg.Inet() {
		c.src = "ibsim " + net.JoinHostPort(cfg.ServerName, strconv.Itoa(int(cfg.ServerPort)))
	} else {
		c.src = "ibsim " + cfg.SockName
	}
	info := ClientInfo{NodeID: cfg.Host}
	if cfg.IsSM {
		info.IsSM = 1
	}
	var probe [ClientInfoSize]byte
	if err := info.MarshalTo(probe[:]); err != nil {
		return nil, c.opErr("dial", err)
	}
	if cfg.Inet() && cfg.ServerPort == 0 {
		return nil, c.opErr("dial", errors.New("ibsim: server port 0"))
	}

	ctlFD, dataFD, err := c.openSockets(ctx)
	if err != nil {
		return nil, err
	}
	closeFDs := func() {
		if ctlFD >= 0 {
			unix.Close(ctlFD)
		}
		if dataFD >= 0 {
			unix.Close(dataFD)
		}
	}
	c.ctl, err = fdConn(ctlFD)
	ctlFD = -1 // fdConn took it
	if err != nil {
		closeFDs()
		return nil, c.opErr("dial", err)
	}

	info.ID = c.id
	if err := c.connect(ctx, &info); err != nil {
		c.ctl.Close()
		closeFDs()
		return nil, err
	}
	// From here on we hold a slot: every failure must DISCONNECT.
	fail := func(op string, err error) (*Client, error) {
		c.disconnect()
		c.ctl.Close()
		closeFDs()
		if c.data != nil {
			c.data.Close()
		}
		return nil, c.opErr(op, err)
	}
	out, err := c.outAddr(ctx)
	if err != nil {
		return fail("dial", err)
	}
	if err := unix.Connect(dataFD, out); err != nil {
		return fail("connect", err)
	}
	f := os.NewFile(uintptr(dataFD), "ibsim-data")
	dataFD = -1
	pc, err := net.FilePacketConn(f)
	f.Close()
	if err != nil {
		return fail("dial", err)
	}
	dc, ok := pc.(net.Conn)
	if !ok {
		pc.Close()
		return fail("dial", errors.New("ibsim: data socket is not a connection"))
	}
	c.data = dc
	go c.reader()
	if cfg.IsSM {
		if err := c.SetIsSM(ctx, true); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Slot returns the ibsim slot (0..9) this client holds.
func (c *Client) Slot() int { return int(c.slot) }

// ID returns the id this client sent in CONNECT.
func (c *Client) ID() uint32 { return c.id }

// AttachedNode returns the id of the node ibsim attached this client to,
// as ibsim reported it in the CONNECT reply.
func (c *Client) AttachedNode() string { return c.node }

func (c *Client) opErr(op string, err error) error {
	return &transport.OpError{Op: op, Source: c.src, Err: err}
}

// unixName returns the sockaddr of an abstract name with the trailing NUL
// ibsim includes in the address length.
func unixName(name string) *unix.SockaddrUnix {
	return &unix.SockaddrUnix{Name: "@" + name + "\x00"}
}

// openSockets creates and binds the control and data sockets and
// connects the control socket to ibsim, retrying while ibsim refuses.
func (c *Client) openSockets(ctx context.Context) (ctlFD, dataFD int, err error) {
	domain := unix.AF_UNIX
	if c.cfg.Inet() {
		domain = unix.AF_INET
	}
	newSock := func() (int, error) {
		return unix.Socket(domain, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	}
	ctlFD, dataFD = -1, -1
	defer func() {
		if err != nil {
			if ctlFD >= 0 {
				unix.Close(ctlFD)
			}
			if dataFD >= 0 {
				unix.Close(dataFD)
			}
			ctlFD, dataFD = -1, -1
		}
	}()
	if ctlFD, err = newSock(); err != nil {
		return -1, -1, c.opErr("socket", err)
	}
	if dataFD, err = newSock(); err != nil {
		return -1, -1, c.opErr("socket", err)
	}

	if c.cfg.Inet() {
		any4 := &unix.SockaddrInet4{}
		if err = unix.Bind(ctlFD, any4); err != nil {
			return -1, -1, c.opErr("bind", err)
		}
		if err = unix.Bind(dataFD, any4); err != nil {
			return -1, -1, c.opErr("bind", err)
		}
		sa, gerr := unix.Getsockname(dataFD)
		if gerr != nil {
			err = gerr
			return -1, -1, c.opErr("bind", err)
		}
		in4, ok := sa.(*unix.SockaddrInet4)
		if !ok {
			err = ErrBadReply
			return -1, -1, c.opErr("bind", err)
		}
		c.id = uint32(in4.Port)
		ip, rerr := c.serverIP(ctx)
		if rerr != nil {
			err = rerr
			return -1, -1, c.opErr("resolve", err)
		}
		srv := &unix.SockaddrInet4{Port: int(c.cfg.ServerPort), Addr: ip}
		if err = unix.Connect(ctlFD, srv); err != nil {
			return -1, -1, c.opErr("connect", err)
		}
		return ctlFD, dataFD, nil
	}

	// Unix mode: both sockets are bound to names carrying our id, the
	// data socket before CONNECT (ibsim dies otherwise). Try the next id
	// when another live client of this process uses one.
	pid := uint32(os.Getpid()) & (1<<27 - 1)
	for try := 0; ; try++ {
		id := pid*16 + idSeq.Add(1)%16
		if id == 0 {
			continue
		}
		err = unix.Bind(ctlFD, unixName(fmt.Sprintf("%s:ctl%d", c.cfg.SockName, id)))
		if err == nil {
			err = unix.Bind(dataFD, unixName(fmt.Sprintf("%s:in%d", c.cfg.SockName, id)))
			if err != nil && errors.Is(err, unix.EADDRINUSE) {
				// The ctl socket is bound already; start over with fresh sockets.
				unix.Close(ctlFD)
				unix.Close(dataFD)
				if ctlFD, err = newSock(); err != nil {
					return -1, -1, c.opErr("socket", err)
				}
				if dataFD, err = newSock(); err != nil {
					return -1, -1, c.opErr("socket", err)
				}
				err = unix.EADDRINUSE
			}
		}
		if err == nil {
			c.id = id
			break
		}
		if !errors.Is(err, unix.EADDRINUSE) || try >= 32 {
			return -1, -1, c.opErr("bind", err)
		}
	}
	srv := unixName(c.cfg.SockName + ":ctl")
	delay := 20 * time.Millisecond
	for {
		err = unix.Connect(ctlFD, srv)
		if err == nil {
			return ctlFD, dataFD, nil
		}
		if !errors.Is(err, unix.ECONNREFUSED) && !errors.Is(err, unix.ENOENT) {
			return -1, -1, c.opErr("connect", err)
		}
		if werr := sleepCtx(ctx, delay); werr != nil {
			return -1, -1, c.opErr("connect", fmt.Errorf("%w (ibsim not running?): %w", transport.ErrTimeout, err))
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// serverIP resolves cfg.ServerName to an IPv4 address.
func (c *Client) serverIP(ctx context.Context) ([4]byte, error) {
	var out [4]byte
	if ip := net.ParseIP(c.cfg.ServerName).To4(); ip != nil {
		copy(out[:], ip)
		return out, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", c.cfg.ServerName)
	if err != nil {
		return out, err
	}
	for _, ip := range ips {
		if ip4 := ip.To4(); ip4 != nil {
			copy(out[:], ip4)
			return out, nil
		}
	}
	return out, fmt.Errorf("ibsim: no IPv4 address for %q", c.cfg.ServerName)
}

// outAddr is ibsim's data socket for our slot.
func (c *Client) outAddr(ctx context.Context) (unix.Sockaddr, error) {
	if c.cfg.Inet() {
		ip, err := c.serverIP(ctx)
		if err != nil {
			return nil, err
		}
		return &unix.SockaddrInet4{Port: int(c.cfg.ServerPort) + 1 + int(c.slot), Addr: ip}, nil
	}
	return unixName(fmt.Sprintf("%s:out%d", c.cfg.SockName, c.slot)), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fdConn wraps a socket fd into a net.Conn (the fd is consumed).
func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "ibsim-ctl")
	defer f.Close()
	return net.FileConn(f)
}

// connect sends CONNECT and records the slot and the attached node. In
// inet mode a refused datagram (ibsim not up yet) is retried until ctx is
// done.
func (c *Client) connect(ctx context.Context, info *ClientInfo) error {
	var payload [ClientInfoSize]byte
	if err := info.MarshalTo(payload[:]); err != nil {
		return c.opErr("connect", err)
	}
	delay := 20 * time.Millisecond
	for {
		reply, err := c.ctlExchange(ctx, CtlConnect, 0, payload[:])
		if err != nil && errors.Is(err, unix.ECONNREFUSED) && ctx.Err() == nil {
			if sleepCtx(ctx, delay) == nil {
				delay = min(delay*2, 200*time.Millisecond)
				continue
			}
		}
		if err != nil {
			return c.opErr("connect", err)
		}
		var got ClientInfo
		if err := got.UnmarshalBinary(reply.Data[:]); err != nil {
			return c.opErr("connect", err)
		}
		if got.ID >= MaxClients {
			// Should not happen; we cannot DISCONNECT a slot ibsim does
			// not have, so just report it.
			return c.opErr("connect", fmt.Errorf("%w: slot %d", ErrBadReply, got.ID))
		}
		c.slot = got.ID
		c.node = got.NodeID
		c.live = true
		return nil
	}
}

// ctlExchange sends one control request and waits for the reply of the
// same type, bounded by ctx and cfg.Timeout. The caller serialises.
func (c *Client) ctlExchange(ctx context.Context, t CtlType, slot uint32, payload []byte) (Ctl, error) {
	req := NewCtl(t, slot, payload)
	var buf [CtlSize + 16]byte
	_ = req.MarshalTo(buf[:])
	deadline := time.Now().Add(c.cfg.timeout())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.ctl.SetDeadline(deadline); err != nil {
		return Ctl{}, err
	}
	stop := context.AfterFunc(ctx, func() { c.ctl.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.ctl.Write(buf[:CtlSize]); err != nil {
		return Ctl{}, mapNetErr(ctx, err)
	}
	for {
		n, err := c.ctl.Read(buf[:])
		if err != nil {
			return Ctl{}, mapNetErr(ctx, err)
		}
		var reply Ctl
		if n != CtlSize || reply.UnmarshalBinary(buf[:n]) != nil {
			continue // not ibsim's: ignore
		}
		if reply.Type == CtlError {
			return reply, fmt.Errorf("%w: %s", ErrRefused, t)
		}
		if reply.Type != t {
			continue // a late reply to an earlier request
		}
		return reply, nil
	}
}

// mapNetErr turns a deadline into transport.ErrTimeout and a cancelled ctx
// into its error.
func mapNetErr(ctx context.Context, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
			return cerr
		}
		return transport.ErrTimeout
	}
	return err
}

// ctlRequest is a control request for our own live slot.
func (c *Client) ctlRequest(ctx context.Context, op string, t CtlType, payload []byte) (Ctl, error) {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	if !c.live {
		return Ctl{}, c.opErr(op, transport.ErrClosed)
	}
	select {
	case <-c.closed:
		return Ctl{}, c.opErr(op, transport.ErrClosed)
	default:
	}
	r, err := c.ctlExchange(ctx, t, c.slot, payload)
	if err != nil {
		return r, c.opErr(op, err)
	}
	return r, nil
}

// disconnect sends DISCONNECT (after SET_ISSM 0 if we set it) once, for
// our live slot only.
func (c *Client) disconnect() error {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	if !c.live {
		return nil
	}
	c.live = false
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout())
	defer cancel()
	if c.issmSet {
		var off [4]byte
		c.ctlExchange(ctx, CtlSetIsSM, c.slot, off[:])
		c.issmSet = false
	}
	if _, err := c.ctlExchange(ctx, CtlDisconnect, c.slot, nil); err != nil {
		return c.opErr("disconnect", err)
	}
	return nil
}

// Close releases the slot (DISCONNECT), closes the sockets and makes
// in-flight and later Exchanges return transport.ErrClosed. It is
// idempotent; later calls return the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Cut short a control request in flight so DISCONNECT goes out now.
		c.ctl.SetReadDeadline(time.Unix(1, 0))
		c.closeErr = c.disconnect()
		c.data.Close()
		c.ctl.Close()
		<-c.readerDone
		// Exchanges still waiting see c.closed and remove their own
		// entries: taking them out here would make a waiter believe its
		// reply had arrived and wait for it forever.
	})
	return c.closeErr
}

// reader receives every datagram from ibsim and hands replies to the
// waiting Exchange by the low 32 bits of the TID.
func (c *Client) reader() {
	defer close(c.readerDone)
	var buf [RequestSize + 64]byte
	for {
		n, err := c.data.Read(buf[:])
		if err != nil {
			select {
			case <-c.closed:
				c.readErr = transport.ErrClosed
				return
			default:
			}
			if errors.Is(err, unix.ECONNREFUSED) {
				// inet mode: an ICMP error for an earlier datagram.
				continue
			}
			c.readErr = err
			return
		}
		if n != RequestSize {
			continue
		}
		status := be.Uint32(buf[16:])
		method := buf[32+3]
		if status == 0 && method&smp.MethodResponseFlag == 0 {
			continue // an unsolicited request: we are no agent
		}
		lo := be.Uint32(buf[32+12:])
		c.mu.Lock()
		cl := c.pending[lo]
		delete(c.pending, lo)
		c.mu.Unlock()
		if cl != nil {
			copy(cl.buf[:], buf[:RequestSize])
			close(cl.done)
		}
	}
}

// Exchange sends the 256-byte MAD req to dlid (smp.PermissiveLID for a
// directed-route SMP) and copies the reply into resp. It rewrites the low
// 32 bits of the TID. ibsim's status 110 (dropped or unroutable) and an
// expired ctx or cfg.Timeout (when ctx has no deadline) are
// transport.ErrTimeout; after Close it returns transport.ErrClosed. All
// errors are *transport.OpError.
func (c *Client) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if len(req) < MADSize || len(resp) < MADSize {
		return c.opErr("exchange", ErrShort)
	}
	select {
	case <-c.closed:
		return c.opErr("exchange", transport.ErrClosed)
	default:
	}
	cl := callPool.Get().(*call)
	cl.done = make(chan struct{})
	lo := c.tid.Add(1)

	out := cl.out[:]
	clear(out)
	be.PutUint16(out[0:], dlid)
	class := req[1]
	isSMP := class == smp.ClassDirectRoute || class == smp.ClassLIDRouted
	switch {
	case dlid == smp.PermissiveLID:
		be.PutUint16(out[4:], smp.PermissiveLID)
	default:
		be.PutUint16(out[4:], 0) // ibsim fills in our LID
	}
	if !isSMP {
		be.PutUint32(out[8:], 1) // GMPs go to QP1
		be.PutUint32(out[12:], 1)
	}
	be.PutUint64(out[24:], MADSize)
	copy(out[32:], req[:MADSize])
	be.PutUint32(out[32+12:], lo)

	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return c.opErr("exchange", transport.ErrClosed)
	default:
	}
	c.pending[lo] = cl
	c.mu.Unlock()

	if _, err := c.data.Write(out); err != nil {
		c.forget(lo, cl)
		select {
		case <-c.closed:
			return c.opErr("send", transport.ErrClosed)
		default:
		}
		return c.opErr("send", err)
	}

	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(c.cfg.timeout())
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if !c.forget(lo, cl) {
			break // the reply won the race
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return c.opErr("exchange", transport.ErrTimeout)
		}
		return c.opErr("exchange", ctx.Err())
	case <-timeout:
		if !c.forget(lo, cl) {
			break
		}
		return c.opErr("exchange", transport.ErrTimeout)
	case <-c.closed:
		if !c.forget(lo, cl) {
			break
		}
		return c.opErr("exchange", transport.ErrClosed)
	case <-c.readerDone:
		if !c.forget(lo, cl) {
			break
		}
		select {
		case <-c.closed:
			return c.opErr("exchange", transport.ErrClosed)
		default:
		}
		return c.opErr("recv", c.readErr)
	}
	<-cl.done
	status := be.Uint32(cl.buf[16:])
	copy(resp[:MADSize], cl.buf[32:])
	callPool.Put(cl)
	switch status {
	case 0:
		return nil
	case StatusTimeout:
		return c.opErr("exchange", fmt.Errorf("ibsim status 110: %w", transport.ErrTimeout))
	}
	return c.opErr("exchange", fmt.Errorf("%w: ibsim status %d", ErrBadReply, status))
}

// forget removes a pending call; false means the reader already took it
// (and will close cl.done).
func (c *Client) forget(lo uint32, cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[lo] != cl {
		return false
	}
	delete(c.pending, lo)
	return true
}

// Port returns the attached port's LID and state (ctl GET_PORT).
func (c *Client) Port(ctx context.Context) (Port, error) {
	r, err := c.ctlRequest(ctx, "get port", CtlGetPort, nil)
	var p Port
	if err == nil {
		err = p.UnmarshalBinary(r.Data[:])
	}
	return p, err
}

// Vendor returns the attached node's vendor data (ctl GET_VENDOR).
func (c *Client) Vendor(ctx context.Context) (Vendor, error) {
	r, err := c.ctlRequest(ctx, "get vendor", CtlGetVendor, nil)
	var v Vendor
	if err == nil {
		err = v.UnmarshalBinary(r.Data[:])
	}
	return v, err
}

// GID returns ibsim's GET_GID answer as sent: bytes 0-7 the GID prefix
// (big-endian), bytes 8-15 the node GUID in little-endian order (an ibsim
// quirk).
func (c *Client) GID(ctx context.Context) ([16]byte, error) {
	r, err := c.ctlRequest(ctx, "get gid", CtlGetGID, nil)
	var g [16]byte
	copy(g[:], r.Data[:])
	return g, err
}

// GUID returns the attached node's GUID (ctl GET_GUID).
func (c *Client) GUID(ctx context.Context) (uint64, error) {
	r, err := c.ctlRequest(ctx, "get guid", CtlGetGUID, nil)
	if err != nil {
		return 0, err
	}
	return le.Uint64(r.Data[:]), nil
}

// NodeInfo returns the attached node's stored NodeInfo (ctl
// GET_NODEINFO). For a CA, PortGUID holds the node GUID and LocalPortNum
// a template value; a hop-0 DR SMP gives the true values.
func (c *Client) NodeInfo(ctx context.Context) (smp.NodeInfo, error) {
	r, err := c.ctlRequest(ctx, "get nodeinfo", CtlGetNodeInfo, nil)
	var ni smp.NodeInfo
	if err == nil {
		err = ni.UnmarshalBinary(r.Data[:])
	}
	return ni, err
}

// PortInfo returns the PortInfo of port of the attached node (ctl
// GET_PORTINFO); 0 means the attached port, which is the only reliable
// choice on a CA.
func (c *Client) PortInfo(ctx context.Context, port uint8) (smp.PortInfo, error) {
	r, err := c.ctlRequest(ctx, "get portinfo", CtlGetPortInfo, []byte{port})
	var pi smp.PortInfo
	if err == nil {
		err = pi.UnmarshalBinary(r.Data[:])
	}
	return pi, err
}

// PKeys returns the first 32 P_Key table entries of the attached port
// (ctl GET_PKEYS).
func (c *Client) PKeys(ctx context.Context) ([32]uint16, error) {
	r, err := c.ctlRequest(ctx, "get pkeys", CtlGetPKeys, nil)
	var k [32]uint16
	if err == nil {
		for i := range k {
			k[i] = be.Uint16(r.Data[2*i:])
		}
	}
	return k, err
}

// SetIsSM sets or clears the IsSM capability bit of the attached port
// (ctl SET_ISSM). Close clears it again before DISCONNECT.
func (c *Client) SetIsSM(ctx context.Context, on bool) error {
	var v [4]byte
	if on {
		le.PutUint32(v[:], 1)
	}
	if _, err := c.ctlRequest(ctx, "set issm", CtlSetIsSM, v[:]); err != nil {
		return err
	}
	c.ctlMu.Lock()
	c.issmSet = on
	c.ctlMu.Unlock()
	return nil
}

var _ transport.Transport = (*Client)(nil)
