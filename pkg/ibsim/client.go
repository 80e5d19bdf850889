//go:build linux

package ibsim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Bounds of the steps that do not depend on Config.
const (
	// releaseWait bounds Close's wait for ibsim's echo of DISCONNECT. In
	// unix mode a DISCONNECT that reached ibsim's socket takes effect
	// whether or not we wait; waiting only keeps ibsim from logging that
	// it could not answer.
	releaseWait = 500 * time.Millisecond
	// pollSlice is how long a blocked write waits before it looks at its
	// ctx and Close again.
	pollSlice = 50 * time.Millisecond
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
	ctl     *os.File
	live    bool // we hold slot: ctl requests are allowed
	issmSet bool
	// released is set by whoever writes DISCONNECT (Close or Abort): a
	// second DISCONNECT could free a slot ibsim gave someone else since.
	released atomic.Bool
	// gone: a send found ibsim's socket gone (see PeerGone)
	gone atomic.Bool

	// ctlGen numbers control exchanges; the AfterFunc that cuts an
	// exchange short on ctx cancellation acts only while its exchange is
	// the current one.
	genMu   sync.Mutex
	ctlGen  uint64
	ctlBusy bool

	// state of the CONNECT in flight (see handOff)
	connMu     sync.Mutex
	connecting bool // CONNECT sent, reply not read yet
	handedOff  bool // the sockets belong to a lingerer now

	window int // Limits().Window
	// Requests are written to the data socket's descriptor directly, not
	// through the *os.File, whose write lock makes concurrent writers
	// queue (a goroutine hand-off each time two meet). wmu, held shared
	// by writers and exclusively by Close around closing the socket,
	// keeps the descriptor from being closed (and its number reused)
	// under a write.
	wmu     sync.RWMutex
	dataFD  int      // -1 until Dial is done
	wdone   bool     // the data socket is closed (under wmu)
	data    *os.File // connected to ibsim's :out<slot>
	dataRaw syscall.RawConn
	tid     atomic.Uint32
	mu      sync.Mutex
	pending calls
	dead    bool // the reader stopped: no call is taken any more (under mu)

	closed     chan struct{} // closed by Close
	readerDone chan struct{} // closed when the reader goroutine exits
	readErr    error         // why the reader stopped (valid after readerDone)
	closeOnce  sync.Once
	closeErr   error
}

// call is one outstanding Exchange. Whoever takes it out of pending (the
// reader with a reply; the janitor at its deadline, when its ctx ends or
// after Close; the reader on its way out) sets its state and sends the
// one token on done: the Exchange waits on that one channel, which costs
// less than a select over its ctx, Close and the reader. Calls are pooled
// with their channel and write function, so an Exchange allocates
// nothing.
type call struct {
	done     chan struct{} // capacity 1
	state    callState     // set before the token
	ctx      context.Context
	deadline int64 // UnixNano: the janitor ends the call then
	buf      [RequestSize]byte
	out      [RequestSize]byte // the request as sent
	werr     error
	write    func(fd uintptr) bool // writes out, result in werr
}

// calls are the outstanding calls by the low 32 bits of their TID (under
// Client.mu). TIDs are handed out in sequence, so a ring indexed by
// their low bits holds nearly all of them without a map's hashing; a
// call whose slot is still taken (by one that has waited while a whole
// ring of newer ones came and went) goes to the map.
type calls struct {
	ring  [ringSize]*call
	ringT [ringSize]uint32 // the TID of the call in each slot
	more  map[uint32]*call
	n     int    // calls in all
	inRng int    // calls in the ring
	last  uint32 // the latest TID put
}

const ringSize = 1024 // a power of two

func (cs *calls) put(lo uint32, cl *call) {
	i := lo & (ringSize - 1)
	cs.last = lo
	if cs.ring[i] == nil {
		cs.ring[i], cs.ringT[i] = cl, lo
		cs.inRng++
	} else {
		if cs.more == nil {
			cs.more = make(map[uint32]*call)
		}
		cs.more[lo] = cl
	}
	cs.n++
}

func (cs *calls) get(lo uint32) *call {
	i := lo & (ringSize - 1)
	if cl := cs.ring[i]; cl != nil && cs.ringT[i] == lo {
		return cl
	}
	if len(cs.more) == 0 {
		return nil
	}
	return cs.more[lo]
}

// del removes call cl with TID lo (which must be there).
func (cs *calls) del(lo uint32, cl *call) {
	i := lo & (ringSize - 1)
	if cs.ring[i] == cl && cs.ringT[i] == lo {
		cs.ring[i] = nil
		cs.inRng--
	} else {
		delete(cs.more, lo)
	}
	cs.n--
}

// each calls f for every call; f may delete the call it is given. The
// ring is walked back from the latest TID until all its calls were seen
// (they are mostly the latest few).
func (cs *calls) each(f func(lo uint32, cl *call)) {
	if cs.n == 0 {
		return
	}
	left := cs.inRng
	for k := uint32(0); left > 0 && k < ringSize; k++ {
		i := (cs.last - k) & (ringSize - 1)
		if cl := cs.ring[i]; cl != nil {
			left--
			f(cs.ringT[i], cl)
		}
	}
	for lo, cl := range cs.more {
		f(lo, cl)
	}
}

func (cs *calls) len() int { return cs.n }

// callState is how a call ended.
type callState uint8

const (
	callReplied   callState = iota // buf holds the reply
	callExpired                    // its deadline passed
	callCancelled                  // its ctx ended first
	callClosed                     // the client was closed
	callReadError                  // the reader stopped (c.readErr)
)

func newCall() *call {
	cl := &call{done: make(chan struct{}, 1)}
	cl.write = func(fd uintptr) bool {
		for {
			cl.werr = writeNB(int(fd), cl.out[:])
			if cl.werr != unix.EINTR {
				return true
			}
		}
	}
	return cl
}

// writeNB writes b to the non-blocking descriptor fd as one datagram.
// It is a raw system call: the call never blocks (a full socket is
// EAGAIN), so the runtime's bookkeeping for a call that might (handing
// the P off, and waking sysmon, which then polls every 20 µs for as
// long as the process runs) would be spent for nothing on every SMP.
func writeNB(fd int, b []byte) error {
	_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return e
	}
	return nil
}

var callPool = sync.Pool{New: func() any { return newCall() }}

var idSeq atomic.Uint32

// Live clients and dials of this process, for Abort.
var (
	liveMu  sync.Mutex
	liveSet = map[*Client]struct{}{}
)

func track(c *Client)   { liveMu.Lock(); liveSet[c] = struct{}{}; liveMu.Unlock() }
func untrack(c *Client) { liveMu.Lock(); delete(liveSet, c); liveMu.Unlock() }

func newClient(cfg Config) *Client {
	c := &Client{
		cfg:        cfg,
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),
		dataFD:     -1,
	}
	if cfg.Inet() {
		c.src = "ibsim " + cfg.ServerName + ":" + strconv.Itoa(int(cfg.ServerPort))
	} else {
		c.src = "ibsim " + cfg.SockName
	}
	return c
}

// Dial attaches to ibsim as described by cfg. Nothing listening on
// ibsim's socket is ErrNotRunning at once (or after cfg.WaitStart). The
// wait for the CONNECT reply is bounded by cfg.ConnectTimeout and ctx;
// when Dial gives up on a CONNECT ibsim has not answered yet, it leaves
// the sockets to a helper that waits for the answer and releases the
// slot (see the package documentation). The returned Client holds one of
// ibsim's 10 slots until Close.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c := newClient(cfg)
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
	if err := ctx.Err(); err != nil {
		return nil, c.opErr("dial", err)
	}

	ctlFD, dataFD, err := c.openSockets(ctx)
	if err != nil {
		return nil, err
	}
	if c.ctl, err = fdConn(ctlFD, "ibsim-ctl"); err != nil {
		unix.Close(dataFD)
		return nil, c.opErr("dial", err)
	}
	if c.data, err = fdConn(dataFD, "ibsim-data"); err != nil {
		c.ctl.Close()
		return nil, c.opErr("dial", err)
	}
	if c.dataRaw, err = c.data.SyscallConn(); err != nil {
		c.ctl.Close()
		c.data.Close()
		return nil, c.opErr("dial", err)
	}
	track(c)
	closeAll := func() {
		untrack(c)
		if c.ownSockets() {
			c.ctl.Close()
			c.data.Close()
		}
	}

	info.ID = c.id
	if err := c.connect(ctx, info); err != nil {
		closeAll()
		return nil, err
	}
	// From here on we hold a slot: every failure must DISCONNECT.
	fail := func(op string, err error) (*Client, error) {
		c.disconnect(releaseWait)
		closeAll()
		return nil, c.opErr(op, err)
	}
	out, err := c.outAddr(ctx)
	if err != nil {
		return fail("dial", err)
	}
	var cerr error
	if err := c.dataRaw.Control(func(fd uintptr) { cerr = unix.Connect(int(fd), out) }); err != nil {
		return fail("connect", err)
	}
	if cerr != nil {
		return fail("connect", cerr)
	}
	c.window = socketWindow(c.dataRaw, cfg.Inet())
	c.dataRaw.Control(func(fd uintptr) { c.dataFD = int(fd) })
	go c.reader()
	go c.janitor()
	if cfg.IsSM {
		if err := c.SetIsSM(ctx, true); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// ownSockets reports whether the sockets are still ours to close (not
// handed to a lingerer).
func (c *Client) ownSockets() bool {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return !c.handedOff
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

// notRunning is the error for a control socket nobody listens on.
func (c *Client) notRunning(err error) error {
	if c.cfg.Inet() {
		return fmt.Errorf("%w: nothing answers on udp %s:%d (%w); start it with \"ibsim -r -l %d -s NETFILE\" (IBSIM_SERVER_NAME and IBSIM_SERVER_PORT select it)",
			ErrNotRunning, c.cfg.ServerName, c.cfg.ServerPort, err, c.cfg.ServerPort)
	}
	return fmt.Errorf("%w: nothing listens on the socket @%s:ctl (%w); start it with \"IBSIM_SOCKNAME=%s ibsim -s NETFILE\"",
		ErrNotRunning, c.cfg.SockName, err, c.cfg.SockName)
}

// openSockets creates and binds the control and data sockets and
// connects the control socket to ibsim.
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
	var until time.Time
	if c.cfg.WaitStart > 0 {
		until = time.Now().Add(c.cfg.WaitStart)
	}
	delay := 10 * time.Millisecond
	for {
		err = unix.Connect(ctlFD, srv)
		if err == nil {
			return ctlFD, dataFD, nil
		}
		if !errors.Is(err, unix.ECONNREFUSED) && !errors.Is(err, unix.ENOENT) {
			return -1, -1, c.opErr("connect", err)
		}
		if !time.Now().Before(until) {
			return -1, -1, c.opErr("connect", c.notRunning(err))
		}
		if werr := sleepCtx(ctx, min(delay, time.Until(until))); werr != nil {
			return -1, -1, c.opErr("connect", werr)
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// serverIP resolves cfg.ServerName to an IPv4 address: a dotted address,
// or a name /etc/hosts gives one (libumad2sim also asks DNS; this client
// does not, so that no tool links the resolver for it).
func (c *Client) serverIP(ctx context.Context) ([4]byte, error) {
	if a, err := netip.ParseAddr(c.cfg.ServerName); err == nil && a.Unmap().Is4() {
		return a.Unmap().As4(), nil
	}
	if a, ok := hostsIPv4(hostsFile, c.cfg.ServerName); ok {
		return a, nil
	}
	return [4]byte{}, fmt.Errorf("ibsim: IBSIM_SERVER_NAME %q is neither an IPv4 address nor a name %s gives one (DNS is not asked)", c.cfg.ServerName, hostsFile)
}

// hostsFile is the hosts table serverIP reads (a variable for tests).
var hostsFile = "/etc/hosts"

// hostsIPv4 returns the first IPv4 address the hosts table at path gives
// name (names compared without case, as the resolver does).
func hostsIPv4(path, name string) ([4]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [4]byte{}, false
	}
	for line := range strings.Lines(string(b)) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || !a.Unmap().Is4() {
			continue
		}
		for _, n := range f[1:] {
			if strings.EqualFold(n, name) {
				return a.Unmap().As4(), true
			}
		}
	}
	return [4]byte{}, false
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
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fdConn wraps a non-blocking socket fd into a file the runtime's poller
// serves, with deadlines, as a net.Conn would be (the fd is consumed).
func fdConn(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ibsim: %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return nil, fmt.Errorf("ibsim: %s: bad descriptor %d", name, fd)
	}
	return f, nil
}

// connect sends CONNECT and records the slot and the attached node. When
// ibsim refuses, it finds out why (ErrNoSlot, ErrUnknownNode,
// ErrSMExists).
func (c *Client) connect(ctx context.Context, info ClientInfo) error {
	var until time.Time
	if c.cfg.WaitStart > 0 {
		until = time.Now().Add(c.cfg.WaitStart)
	}
	delay := 10 * time.Millisecond
	got, err := c.connectOnce(ctx, info)
	// inet mode: an ICMP error says ibsim's port is closed, so this
	// CONNECT was not taken; try again while ibsim may still be starting.
	for errors.Is(err, ErrNotRunning) && time.Now().Before(until) {
		if sleepCtx(ctx, min(delay, time.Until(until))) != nil {
			break
		}
		delay = min(delay*2, 200*time.Millisecond)
		got, err = c.connectOnce(ctx, info)
	}
	if err != nil {
		if errors.Is(err, ErrRefused) {
			err = c.whyRefused(ctx, info)
		}
		return c.opErr("connect", err)
	}
	c.slot = got.ID
	c.node = got.NodeID
	c.live = true
	c.released.Store(false)
	return nil
}

// connectOnce sends one CONNECT and waits for the reply, bounded by ctx
// and the CONNECT timeout. A CONNECT ibsim may still act on when we give
// up is left to a lingerer (handOff): ibsim exits when it finds our
// :in<id> socket gone, and would keep the slot taken forever.
func (c *Client) connectOnce(ctx context.Context, info ClientInfo) (ClientInfo, error) {
	var payload [ClientInfoSize]byte
	if err := info.MarshalTo(payload[:]); err != nil {
		return ClientInfo{}, err
	}
	limit := c.cfg.connectTimeout()
	c.connMu.Lock()
	if c.handedOff {
		c.connMu.Unlock()
		return ClientInfo{}, transport.ErrClosed
	}
	c.connecting = true
	c.connMu.Unlock()
	reply, sent, err := c.ctlExchange(ctx, CtlConnect, 0, payload[:], limit)
	c.connMu.Lock()
	c.connecting = false
	c.connMu.Unlock()
	if err != nil {
		switch {
		case errors.Is(err, ErrRefused):
			return ClientInfo{}, err
		case errors.Is(err, unix.ECONNREFUSED):
			// ibsim's socket is gone (unix), or an ICMP error for its
			// port (inet): nothing is left to answer this CONNECT.
			return ClientInfo{}, c.notRunning(err)
		case !sent && errors.Is(err, transport.ErrTimeout):
			// The CONNECT could not even be queued: ibsim's socket
			// queue stayed full (ibsim does not read it).
			return ClientInfo{}, fmt.Errorf("ibsim's request queue stayed full for %v, so it took no CONNECT: it is not reading requests (stopped, or overloaded?): %w", limit, transport.ErrTimeout)
		case sent:
			// The answer may be here already (ctx was cancelled as it
			// came): then we can settle it ourselves.
			if reply, ok := c.takeReply(CtlConnect); ok {
				if reply.Type == CtlConnect {
					var got ClientInfo
					if got.UnmarshalBinary(reply.Data[:]) == nil && got.ID < MaxClients {
						c.slot, c.live = got.ID, true
						c.released.Store(false)
						c.disconnect(releaseWait)
					}
				}
				return ClientInfo{}, err
			}
			c.handOff()
			if errors.Is(err, transport.ErrTimeout) {
				return ClientInfo{}, fmt.Errorf("ibsim did not answer CONNECT within %v (stopped, or overloaded?); a helper process waits for the answer to release the slot: %w", limit, transport.ErrTimeout)
			}
		}
		return ClientInfo{}, err
	}
	var got ClientInfo
	if err := got.UnmarshalBinary(reply.Data[:]); err != nil {
		return ClientInfo{}, err
	}
	if got.ID >= MaxClients {
		// Should not happen; we cannot DISCONNECT a slot ibsim does
		// not have, so just report it.
		return ClientInfo{}, fmt.Errorf("%w: slot %d", ErrBadReply, got.ID)
	}
	return got, nil
}

// whyRefused tells ibsim's refusals apart by asking again with fewer
// conditions, releasing any slot a probe gets.
func (c *Client) whyRefused(ctx context.Context, info ClientInfo) error {
	if info.NodeID == "" && info.IsSM == 0 {
		return ErrNoSlot
	}
	try := func(ci ClientInfo) (bool, error) {
		got, err := c.connectOnce(ctx, ci)
		if errors.Is(err, ErrRefused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		c.slot, c.live = got.ID, true
		c.released.Store(false)
		c.disconnect(releaseWait)
		return true, nil
	}
	if info.IsSM != 0 {
		ci := info
		ci.IsSM = 0
		if ok, err := try(ci); err != nil || ok {
			if err != nil {
				return err
			}
			return fmt.Errorf("%w (node %q)", ErrSMExists, info.NodeID)
		}
	}
	if info.NodeID != "" {
		ok, err := try(ClientInfo{ID: info.ID})
		if err != nil {
			return err
		}
		if ok {
			return &NodeError{Node: info.NodeID, Err: ErrUnknownNode}
		}
	}
	return ErrNoSlot
}

// NodeError names the node an attach request failed for.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return fmt.Sprintf("%q: %v", e.Node, e.Err) }

// Unwrap returns the reason.
func (e *NodeError) Unwrap() error { return e.Err }

// Test hooks (nil outside tests).
var (
	// testHookCut runs in the AfterFunc of a control exchange before it
	// looks at whether its exchange is still current; testHookCutDone
	// when it is done.
	testHookCut, testHookCutDone func()
	// testHookCtlSent runs after a control request was written.
	testHookCtlSent func(CtlType)
	// testHookSendBlocked runs when a write to the data socket found it
	// full.
	testHookSendBlocked func()
	// testHookSent runs when an Exchange's request was written and its
	// call waits for the reply.
	testHookSent func()
)

// beginCtl starts a control exchange and returns its number.
func (c *Client) beginCtl() uint64 {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	c.ctlGen++
	c.ctlBusy = true
	return c.ctlGen
}

// endCtl ends the current control exchange: a cut for it that fires
// later does nothing.
func (c *Client) endCtl() {
	c.genMu.Lock()
	c.ctlGen++
	c.ctlBusy = false
	c.genMu.Unlock()
}

// cutCtl cuts control exchange gen short, if it is still the current one.
func (c *Client) cutCtl(gen uint64) {
	if h := testHookCut; h != nil {
		h()
	}
	if h := testHookCutDone; h != nil {
		defer h()
	}
	c.genMu.Lock()
	defer c.genMu.Unlock()
	if c.ctlBusy && c.ctlGen == gen {
		c.ctl.SetDeadline(time.Unix(1, 0))
	}
}

// ctlExchange sends one control request and waits for the reply of the
// same type, bounded by ctx and limit. sent reports whether the request
// reached ibsim's socket (ibsim will act on it then, answered or not).
// The caller serialises.
func (c *Client) ctlExchange(ctx context.Context, t CtlType, slot uint32, payload []byte, limit time.Duration) (reply Ctl, sent bool, err error) {
	req := NewCtl(t, slot, payload)
	var buf [CtlSize + 16]byte
	_ = req.MarshalTo(buf[:])
	deadline := time.Now().Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	gen := c.beginCtl()
	defer c.endCtl()
	if err := c.ctl.SetDeadline(deadline); err != nil {
		return Ctl{}, false, err
	}
	stop := context.AfterFunc(ctx, func() { c.cutCtl(gen) })
	defer stop()
	if _, err := c.ctl.Write(buf[:CtlSize]); err != nil {
		return Ctl{}, false, mapNetErr(ctx, err)
	}
	if h := testHookCtlSent; h != nil {
		h(t)
	}
	if t == CtlConnect && c.cfg.ConnectSent != nil {
		c.cfg.ConnectSent()
	}
	for {
		n, err := c.ctl.Read(buf[:])
		if err != nil {
			return Ctl{}, true, mapNetErr(ctx, err)
		}
		if n != CtlSize || reply.UnmarshalBinary(buf[:n]) != nil {
			continue // not ibsim's: ignore
		}
		if reply.Type == CtlError {
			return reply, true, fmt.Errorf("%w: %s", ErrRefused, t)
		}
		if reply.Type != t {
			continue // a late reply to an earlier request
		}
		return reply, true, nil
	}
}

// takeReply reads the control replies already queued, without waiting,
// and returns the first of type t or ERROR.
func (c *Client) takeReply(t CtlType) (Ctl, bool) {
	rc, err := c.ctl.SyscallConn()
	if err != nil {
		return Ctl{}, false
	}
	c.ctl.SetReadDeadline(time.Time{})
	var buf [CtlSize + 16]byte
	for {
		n := -1
		if rc.Read(func(fd uintptr) bool {
			n, _ = unix.Read(int(fd), buf[:])
			return true
		}) != nil || n < 0 {
			return Ctl{}, false
		}
		var reply Ctl
		if n == CtlSize && reply.UnmarshalBinary(buf[:n]) == nil && (reply.Type == t || reply.Type == CtlError) {
			return reply, true
		}
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
	if c.isClosed() {
		return Ctl{}, c.opErr(op, transport.ErrClosed)
	}
	r, _, err := c.ctlExchange(ctx, t, c.slot, payload, c.cfg.timeout())
	if err != nil {
		return r, c.opErr(op, err)
	}
	return r, nil
}

// disconnect releases our live slot: SET_ISSM 0 first if we set it, then
// DISCONNECT, written back to back. It waits at most wait for ibsim's
// echo of DISCONNECT; in unix mode a DISCONNECT that reached ibsim's
// socket takes effect even if the echo comes later, so only a failed
// write is an error there.
func (c *Client) disconnect(wait time.Duration) error {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	if !c.live {
		return nil
	}
	c.live = false
	if !c.released.CompareAndSwap(false, true) {
		return nil // Abort sent it
	}
	c.beginCtl()
	defer c.endCtl()
	c.ctl.SetDeadline(time.Now().Add(wait))
	var buf [CtlSize + 16]byte
	if c.issmSet {
		var off [4]byte
		req := NewCtl(CtlSetIsSM, c.slot, off[:])
		req.MarshalTo(buf[:])
		c.ctl.Write(buf[:CtlSize])
		c.issmSet = false
	}
	req := NewCtl(CtlDisconnect, c.slot, nil)
	req.MarshalTo(buf[:])
	if _, err := c.ctl.Write(buf[:CtlSize]); err != nil {
		return c.opErr("disconnect", fmt.Errorf("%w; slot %d stays taken until ibsim's console command \"X %d\"", mapNetErr(context.Background(), err), c.slot, c.slot))
	}
	for {
		n, err := c.ctl.Read(buf[:])
		if err != nil {
			if c.cfg.Inet() {
				return c.opErr("disconnect", fmt.Errorf("no answer to DISCONNECT: %w", mapNetErr(context.Background(), err)))
			}
			return nil
		}
		var reply Ctl
		if n == CtlSize && reply.UnmarshalBinary(buf[:n]) == nil && reply.Type == CtlDisconnect {
			return nil
		}
	}
}

// Close releases the slot (DISCONNECT), closes the sockets and makes
// in-flight and later Exchanges return transport.ErrClosed. It takes at
// most about half a second whatever ibsim does. It is idempotent; later
// calls return the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Cut short a control request in flight so DISCONNECT goes out now.
		c.genMu.Lock()
		if c.ctlBusy {
			c.ctl.SetDeadline(time.Unix(1, 0))
		}
		c.genMu.Unlock()
		c.closeErr = c.disconnect(releaseWait)
		c.wmu.Lock()
		c.wdone = true
		c.data.Close()
		c.wmu.Unlock()
		c.ctl.Close()
		untrack(c)
		// The reader, on its way out, ends the Exchanges still waiting
		// (ErrClosed); the janitor does so earlier, at its next tick.
		<-c.readerDone
	})
	return c.closeErr
}

// Abort is for a process about to exit at once (a second Ctrl-C): for
// every client of this process it writes DISCONNECT without waiting for
// anything, and leaves a CONNECT still unanswered to a lingerer. It
// returns within about a tenth of a second; use Close otherwise.
func Abort() {
	liveMu.Lock()
	cs := make([]*Client, 0, len(liveSet))
	for c := range liveSet {
		cs = append(cs, c)
	}
	liveMu.Unlock()
	for _, c := range cs {
		c.abort()
	}
}

func (c *Client) abort() {
	c.connMu.Lock()
	pending := c.connecting && !c.handedOff
	c.connMu.Unlock()
	if pending {
		c.handOff()
		return
	}
	if !c.ownSockets() || !c.released.CompareAndSwap(false, true) {
		return
	}
	// No lock: the owner of ctlMu may be stuck. c.slot and c.issmSet are
	// only read; a stale issmSet costs one harmless SET_ISSM 0.
	var buf [2 * CtlSize]byte
	off := NewCtl(CtlSetIsSM, c.slot, make([]byte, 4))
	off.MarshalTo(buf[:])
	disc := NewCtl(CtlDisconnect, c.slot, nil)
	disc.MarshalTo(buf[CtlSize:])
	c.ctl.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if c.issmSet {
		c.ctl.Write(buf[:CtlSize])
	}
	c.ctl.Write(buf[CtlSize:])
}

// readBatch is how many datagrams the reader takes per system call.
const readBatch = 16

// reader receives every datagram from ibsim, as many as are queued per
// system call (recvmmsg), and hands replies to the waiting Exchanges by
// the low 32 bits of the TID.
func (c *Client) reader() {
	defer close(c.readerDone)
	defer c.endAll()
	var bufs [readBatch][RequestSize + 64]byte
	var iovs [readBatch]unix.Iovec
	var msgs [readBatch]unix.Mmsghdr
	for i := range msgs {
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(len(bufs[i]))
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	var n int
	var rerr error
	read := func(fd uintptr) bool {
		for {
			// raw, as writeNB: MSG_DONTWAIT never blocks.
			r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&msgs[0])), readBatch, unix.MSG_DONTWAIT, 0, 0)
			switch e {
			case 0:
				n, rerr = int(r), nil
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait in the poller
			}
			n, rerr = 0, e
			return true
		}
	}
	for {
		err := c.dataRaw.Read(read)
		if err == nil {
			err = rerr
		}
		if err != nil {
			if c.isClosed() {
				c.readErr = transport.ErrClosed
				return
			}
			if errors.Is(err, unix.ECONNREFUSED) {
				// inet mode: an ICMP error for an earlier datagram.
				continue
			}
			c.readErr = err
			return
		}
		c.mu.Lock()
		for i := 0; i < n; i++ {
			c.deliverLocked(bufs[i][:msgs[i].Len])
		}
		c.mu.Unlock()
	}
}

// deliver hands one datagram from ibsim to the Exchange waiting for it;
// anything else is dropped.
func (c *Client) deliver(b []byte) {
	c.mu.Lock()
	c.deliverLocked(b)
	c.mu.Unlock()
}

func (c *Client) deliverLocked(b []byte) {
	if len(b) != RequestSize {
		return
	}
	status := be.Uint32(b[16:])
	method := b[32+3]
	if status == 0 && method&smp.MethodResponseFlag == 0 {
		return // an unsolicited request: we are no agent
	}
	lo := be.Uint32(b[32+12:])
	cl := c.pending.get(lo)
	if cl == nil {
		return
	}
	copy(cl.buf[:], b[:RequestSize])
	c.endLocked(lo, cl, callReplied)
}

// endLocked takes call lo out of pending and hands it its end (under mu).
func (c *Client) endLocked(lo uint32, cl *call, st callState) {
	c.pending.del(lo, cl)
	cl.state = st
	cl.done <- struct{}{}
}

// endAll ends every pending call as the reader stops, and every later
// Exchange at once.
func (c *Client) endAll() {
	st := callReadError
	if c.isClosed() {
		st = callClosed
	}
	c.mu.Lock()
	c.dead = true
	c.pending.each(func(lo uint32, cl *call) { c.endLocked(lo, cl, st) })
	c.mu.Unlock()
}

// janitorTick is the janitor's period: how late an Exchange may end
// after its deadline at most.
const janitorTick = 5 * time.Millisecond

// janitor ends the Exchanges whose deadline (their ctx's, or
// Config.Timeout after they started) has passed or whose ctx ended, and
// after Close all of them: one ticker for the client instead of a timer
// or a select per SMP. It runs until the reader stops.
func (c *Client) janitor() {
	t := time.NewTicker(min(janitorTick, max(c.cfg.timeout()/4, time.Millisecond)))
	defer t.Stop()
	for {
		select {
		case <-c.readerDone:
			return
		case now := <-t.C:
			closed := c.isClosed()
			n := now.UnixNano()
			c.mu.Lock()
			c.pending.each(func(lo uint32, cl *call) {
				switch {
				case closed:
					c.endLocked(lo, cl, callClosed)
				case cl.deadline != 0 && cl.deadline <= n:
					c.endLocked(lo, cl, callExpired)
				case cl.ctx != nil && cl.ctx.Err() != nil:
					c.endLocked(lo, cl, callCancelled)
				}
			})
			c.mu.Unlock()
		}
	}
}

// write makes one attempt at writing cl's request to the data socket
// (EAGAIN when the socket is full).
func (c *Client) write(cl *call) error {
	c.wmu.RLock()
	fd, done := c.dataFD, c.wdone
	if fd < 0 || done {
		c.wmu.RUnlock()
		if done {
			return transport.ErrClosed
		}
		if err := c.dataRaw.Write(cl.write); err != nil {
			return err
		}
		return cl.werr
	}
	var err error
	for {
		if err = writeNB(fd, cl.out[:]); err != unix.EINTR {
			break
		}
	}
	c.wmu.RUnlock()
	return err
}

// send writes one datagram to ibsim's data socket. While the socket
// buffer is full (ibsim stopped, or no longer reading our slot) it waits
// in slices of pollSlice, giving up at the deadline, on ctx or on Close.
func (c *Client) send(ctx context.Context, cl *call) error {
	if err := c.write(cl); err != unix.EAGAIN {
		return err
	}
	if h := testHookSendBlocked; h != nil {
		h()
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.cfg.timeout())
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return transport.ErrClosed
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("ibsim does not take our requests: %w", transport.ErrTimeout)
		}
		ms := int(min(left, pollSlice)/time.Millisecond) + 1
		err := c.dataRaw.Control(func(fd uintptr) {
			fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			unix.Poll(fds[:], ms)
		})
		if err != nil {
			return err
		}
		if err := c.dataRaw.Write(cl.write); err != nil {
			return err
		}
		if cl.werr != unix.EAGAIN {
			return cl.werr
		}
	}
}

// Exchange sends the 256-byte MAD req to dlid (smp.PermissiveLID for a
// directed-route SMP) and copies the reply into resp. It rewrites the low
// 32 bits of the TID. ibsim's status 110 (dropped or unroutable) and an
// expired ctx or cfg.Timeout (when ctx has no deadline) are
// transport.ErrTimeout. The deadline holds whether or not ctx's Done
// channel closes at it, and a cancelled ctx ends the Exchange, both
// within about 5 ms (the janitor's tick: see Limits); after Close it
// returns transport.ErrClosed. All errors are *transport.OpError.
func (c *Client) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if len(req) < MADSize || len(resp) < MADSize {
		return c.opErr("exchange", ErrShort)
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = transport.ErrTimeout
		}
		return c.opErr("exchange", err)
	}
	cl := callPool.Get().(*call)
	if d, ok := ctx.Deadline(); ok {
		cl.deadline = d.UnixNano()
	} else {
		cl.deadline = time.Now().Add(c.cfg.timeout()).UnixNano()
	}
	if ctx.Done() != nil {
		cl.ctx = ctx
	}
	lo := c.tid.Add(1)

	out := cl.out[:]
	clear(out[:32])
	be.PutUint16(out[0:], dlid)
	class := req[1]
	isSMP := class == smp.ClassDirectRoute || class == smp.ClassLIDRouted
	if dlid == smp.PermissiveLID {
		be.PutUint16(out[4:], smp.PermissiveLID)
	} // else 0: ibsim fills in our LID
	if !isSMP {
		be.PutUint32(out[8:], 1) // GMPs go to QP1
		be.PutUint32(out[12:], 1)
	}
	be.PutUint64(out[24:], MADSize)
	copy(out[32:], req[:MADSize])
	clear(out[32+MADSize:])
	be.PutUint32(out[32+12:], lo)

	c.mu.Lock()
	closing := c.isClosed()
	if c.dead || closing {
		c.mu.Unlock()
		cl.ctx = nil
		callPool.Put(cl)
		if closing {
			return c.opErr("exchange", transport.ErrClosed)
		}
		return c.deadErr()
	}
	c.pending.put(lo, cl)
	c.mu.Unlock()

	if err := c.send(ctx, cl); err != nil {
		if !c.forget(lo, cl) {
			<-cl.done // the reply (or the janitor) came anyway
		}
		cl.ctx = nil
		callPool.Put(cl)
		if c.isClosed() {
			return c.opErr("send", transport.ErrClosed)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = transport.ErrTimeout
		}
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOTCONN) {
			c.gone.Store(true)
			err = fmt.Errorf("%w: it ended or restarted since this client attached (%w)", ErrNotRunning, err)
		}
		return c.opErr("send", err)
	}
	if h := testHookSent; h != nil {
		h()
	}

	<-cl.done
	st := cl.state
	cl.ctx = nil
	switch st {
	case callReplied:
	case callExpired:
		callPool.Put(cl)
		return c.opErr("exchange", transport.ErrTimeout)
	case callCancelled:
		callPool.Put(cl)
		err := ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = transport.ErrTimeout
		}
		return c.opErr("exchange", err)
	case callClosed:
		callPool.Put(cl)
		return c.opErr("exchange", transport.ErrClosed)
	default:
		callPool.Put(cl)
		return c.deadErr()
	}
	status := be.Uint32(cl.buf[16:])
	copy(resp[:MADSize], cl.buf[32:])
	if n := be.Uint64(cl.buf[24:]); n >= 24 && n < MADSize {
		// A MAD shorter than 256 bytes (an SA answer OpenSM wrote under
		// libumad2sim): the bytes past its length are not the sender's.
		clear(resp[n:MADSize])
	}
	callPool.Put(cl)
	switch status {
	case 0:
		return nil
	case StatusTimeout:
		return c.opErr("exchange", fmt.Errorf("ibsim status 110: %w", transport.ErrTimeout))
	}
	return c.opErr("exchange", fmt.Errorf("%w: ibsim status %d", ErrBadReply, status))
}

// isClosed reports whether Close has begun.
func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// deadErr is the error of an Exchange the stopped reader ended.
// PeerGone reports whether ibsim went away since the client attached: a
// request found its socket gone (ibsim ended, or ended and was started
// again, which does not know this client). Such a client never works
// again; Dial anew.
func (c *Client) PeerGone() bool { return c.gone.Load() }

func (c *Client) deadErr() error {
	if c.isClosed() {
		return c.opErr("exchange", transport.ErrClosed)
	}
	<-c.readerDone // readErr is set
	return c.opErr("recv", c.readErr)
}

// forget removes a pending call; false means the reader or the janitor
// already took it (and sends on cl.done).
func (c *Client) forget(lo uint32, cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending.get(lo) != cl {
		return false
	}
	c.pending.del(lo, cl)
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

// datagramCharge is what one request or reply datagram in flight charges
// against a socket buffer: 1,280 bytes measured on Linux 6.18 for the
// 288-byte datagram on a Unix socket pair (167 fit in the default 212,992
// bytes), taken with margin; over UDP a loopback datagram is charged
// about twice as much.
const datagramCharge = 2048

// socketWindow is how many requests can be in flight without a send
// blocking or a datagram dropped. In unix mode our data socket and
// ibsim's are connected to each other, so the kernel does not apply
// net.unix.max_dgram_qlen to them (it applies only when the receiver is
// not connected back to the sender): a request waiting in ibsim's queue
// is charged to our send buffer, a reply waiting in ours to ibsim's
// (whose write loop spins while it is full), the same default size on
// both sides. Over UDP a full receive buffer drops instead, so the
// receive buffer counts too, at twice the charge.
func socketWindow(rc syscall.RawConn, inet bool) int {
	sndbuf, rcvbuf := 0, 0
	rc.Control(func(fd uintptr) {
		sndbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		rcvbuf, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	charge := datagramCharge
	if inet {
		charge *= 2
	}
	return max(1, min(sndbuf, rcvbuf)/charge)
}

// Limits: the client enforces every Exchange's deadline itself (the
// janitor), keeps at most what the sockets hold in flight, and ibsim
// queues every request (it serves a client's datagrams in order).
func (c *Client) Limits() transport.Limits {
	return transport.Limits{Deadline: true, Window: c.window, Queues: true}
}

var _ transport.Transport = (*Client)(nil)
var _ transport.Limiter = (*Client)(nil)
