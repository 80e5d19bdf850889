//go:build linux

package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// kernelOpts selects how the fake kernel answers the ioctls.
type kernelOpts struct {
	noAgent2 syscall.Errno // REGISTER_AGENT2 fails with this errno
	noPKey   bool          // ENABLE_PKEY fails: old 56-byte header
	regFail  syscall.Errno // every registration fails with this errno
	failNth  int           // the nth (1-based) registration fails with EBUSY
}

// fakeKernel plays the umad driver on the far end of a SOCK_SEQPACKET
// socketpair: each write of the Device arrives as one record, and each
// record the kernel writes is returned by one read, as with the char
// device.
type fakeKernel struct {
	t      testing.TB
	end    *os.File
	hdrLen int

	mu      sync.Mutex
	ioctls  []uint
	agents  map[uint32]uint8 // registered agent id -> class
	unreg   []uint32
	nextID  uint32
	regs    int
	pending [][]byte // requests the handler chose to keep
}

// startKernel returns a Device wired to a fake kernel. handle is called
// in the kernel's goroutine for every write; it answers with k.respond,
// k.timeout or k.write, or keeps the request in k.pending. The Device and
// the kernel are closed at the end of the test.
func startKernel(t testing.TB, opts kernelOpts, handle func(k *fakeKernel, h Header, mad []byte)) (*Device, *fakeKernel, error) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	dev := os.NewFile(uintptr(fds[0]), "fake-umad")
	k := &fakeKernel{t: t, end: os.NewFile(uintptr(fds[1]), "fake-kernel"), hdrLen: HeaderSize,
		agents: map[uint32]uint8{}, nextID: 3}
	ioctl := func(req uint, arg []byte) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.ioctls = append(k.ioctls, req)
		switch req {
		case IoctlRegisterAgent2, IoctlRegisterAgent:
			if req == IoctlRegisterAgent2 && opts.noAgent2 != 0 {
				return opts.noAgent2
			}
			if opts.regFail != 0 {
				return opts.regFail
			}
			k.regs++
			if k.regs == opts.failNth {
				return syscall.EBUSY
			}
			var class uint8
			if req == IoctlRegisterAgent2 {
				if len(arg) != RegReq2Size {
					t.Errorf("REGISTER_AGENT2 arg of %d bytes", len(arg))
				}
				var r RegReq2
				r.UnmarshalBinary(arg)
				if r.QPN != wantQPN(r.Class) || r.ClassVersion != wantVersion(r.Class) || r.MethodMask != (MethodMask{}) || r.Flags != 0 || r.RMPPVersion != 0 {
					t.Errorf("registration %+v", r)
				}
				class, r.ID = r.Class, k.nextID
				r.MarshalTo(arg)
			} else {
				if len(arg) != RegReqSize {
					t.Errorf("REGISTER_AGENT arg of %d bytes", len(arg))
				}
				var r RegReq
				r.UnmarshalBinary(arg)
				if uint32(r.QPN) != wantQPN(r.Class) || r.ClassVersion != wantVersion(r.Class) || r.MethodMask != (MethodMask{}) || r.RMPPVersion != 0 {
					t.Errorf("registration %+v", r)
				}
				class, r.ID = r.Class, k.nextID
				r.MarshalTo(arg)
			}
			k.agents[k.nextID] = class
			k.nextID += 2
			return nil
		case IoctlEnablePKey:
			if arg != nil {
				t.Errorf("ENABLE_PKEY with an argument")
			}
			if opts.noPKey {
				k.hdrLen = OldHeaderSize
				return syscall.EINVAL
			}
			return nil
		case IoctlUnregisterAgent:
			id := binary.NativeEndian.Uint32(arg)
			if _, ok := k.agents[id]; !ok {
				return syscall.EINVAL
			}
			delete(k.agents, id)
			k.unreg = append(k.unreg, id)
			return nil
		}
		return syscall.ENOTTY
	}
	d, err := newDevice(dev, ioctl, "/dev/infiniband/umad9")
	if err != nil {
		k.end.Close()
		return nil, k, err
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := k.end.Read(buf)
			if err != nil || n == 0 {
				return
			}
			k.mu.Lock()
			hl := k.hdrLen
			k.mu.Unlock()
			if n != hl+smp.MADSize {
				t.Errorf("write of %d bytes, want %d", n, hl+smp.MADSize)
				continue
			}
			var h Header
			h.unmarshal(buf, hl)
			mad := append([]byte(nil), buf[hl:n]...)
			handle(k, h, mad)
		}
	}()
	t.Cleanup(func() {
		d.Close()
		k.end.Close()
	})
	return d, k, nil
}

// write sends one raw record to the Device.
func (k *fakeKernel) write(b []byte) {
	if _, err := k.end.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
		k.t.Errorf("kernel write: %v", err)
	}
}

// respond answers a request as the remote SMA would: R bit set, D bit set
// for directed route, and a marker in the data area.
func (k *fakeKernel) respond(h Header, mad []byte) {
	k.mu.Lock()
	hl := k.hdrLen
	k.mu.Unlock()
	out := make([]byte, hl+smp.MADSize)
	r := Header{ID: h.ID, Length: uint32(hl + smp.MADSize), QPN: 0, LID: h.LID}
	r.marshal(out, hl)
	m := out[hl:]
	copy(m, mad)
	m[3] |= smp.MethodResponseFlag
	if m[1] == smp.ClassDirectRoute {
		m[4] |= 0x80
	}
	copy(m[smp.DataOffset:], "answer")
	k.write(out)
}

// timeout returns the request as the kernel does when no response came:
// status 110 and only the 24-byte common MAD header.
func (k *fakeKernel) timeout(h Header, mad []byte) {
	k.mu.Lock()
	hl := k.hdrLen
	k.mu.Unlock()
	out := make([]byte, hl+smp.HeaderSize)
	h.Status = StatusTimeout
	h.marshal(out, hl)
	copy(out[hl:], mad[:smp.HeaderSize])
	k.write(out)
}

// hdrBytes encodes h in the header size hl.
func hdrBytes(h Header, hl int) []byte {
	b := make([]byte, hl)
	h.marshal(b, hl)
	return b
}

func respondAll(k *fakeKernel, h Header, mad []byte) { k.respond(h, mad) }

// newReq builds a 256-byte request: a DR NodeInfo Get (or LID-routed when
// path is nil) with the attribute modifier as a marker.
func newReq(t testing.TB, class uint8, mod uint32) []byte {
	t.Helper()
	var m smp.MAD
	if class == smp.ClassDirectRoute {
		p, _ := smp.ParseDRPath("0,1")
		m = smp.NewGet(p, 0x0011, mod)
	} else {
		m = smp.NewLIDGet(0x0011, mod)
	}
	m.TID = 0xdeadbeef00000000 | uint64(mod)
	b, err := m.MarshalBinary()
	if err == nil && class != smp.ClassDirectRoute {
		b[1] = class // e.g. a PerfMgt GMP: same common header
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestExchange(t *testing.T) {
	var seen []Header
	var seenMAD [][]byte
	var mu sync.Mutex
	d, k, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		mu.Lock()
		seen, seenMAD = append(seen, h), append(seenMAD, mad)
		mu.Unlock()
		k.respond(h, mad)
	})
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	if got := k.ioctls; len(got) != 4 || got[0] != IoctlRegisterAgent2 || got[1] != IoctlRegisterAgent2 || got[2] != IoctlRegisterAgent2 || got[3] != IoctlRegisterAgent2 {
		t.Errorf("ioctls %#x", got)
	}
	if k.agents[d.agents[0]] != smp.ClassDirectRoute || k.agents[d.agents[1]] != smp.ClassLIDRouted || k.agents[d.agents[2]] != classPerfMgt || k.agents[d.agents[3]] != classSA {
		t.Errorf("agents %v registered %v", k.agents, d.agents)
	}
	k.mu.Unlock()

	tests := []struct {
		name  string
		class uint8
		dlid  uint16
	}{
		{"directed route", smp.ClassDirectRoute, smp.PermissiveLID},
		{"LID routed", smp.ClassLIDRouted, 0x1b},
		{"PerfMgt GMP", classPerfMgt, 0x2c},
		{"SA GMP", classSA, 0x01},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, tt.class, 7)
			orig := append([]byte(nil), req...)
			resp := make([]byte, 300)
			start := time.Now()
			if err := d.Exchange(ctxTimeout(t, 800*time.Millisecond), tt.dlid, req, resp); err != nil {
				t.Fatal(err)
			}
			if string(req) != string(orig) {
				t.Error("Exchange modified req")
			}
			mu.Lock()
			h, mad := seen[i], seenMAD[i]
			mu.Unlock()
			wantAgent, wantQKey := d.agents[0], uint32(0)
			switch tt.class {
			case smp.ClassLIDRouted:
				wantAgent = d.agents[1]
			case classPerfMgt:
				wantAgent, wantQKey = d.agents[2], QP1QKey
			case classSA:
				wantAgent, wantQKey = d.agents[3], QP1QKey
			}
			if h.ID != wantAgent || h.LID != tt.dlid || h.QPN != wantQPN(tt.class) || h.QKey != wantQKey || h.Retries != 0 || h.Status != 0 {
				t.Errorf("header %+v", h)
			}
			if h.TimeoutMS == 0 || h.TimeoutMS > 800 || h.TimeoutMS < 700 && time.Since(start) < 50*time.Millisecond {
				t.Errorf("timeout_ms %d for an 800ms deadline", h.TimeoutMS)
			}
			if hi := binary.BigEndian.Uint32(mad[8:]); hi != 0 {
				t.Errorf("TID high bits %#x, want 0", hi)
			}
			if string(mad[:8]) != string(orig[:8]) || string(mad[16:]) != string(orig[16:]) {
				t.Error("request MAD changed beyond the TID")
			}
			if string(resp[8:16]) != string(mad[8:16]) {
				t.Errorf("response TID % x, sent % x", resp[8:16], mad[8:16])
			}
			if resp[3] != smp.MethodGetResp || string(resp[smp.DataOffset:smp.DataOffset+6]) != "answer" {
				t.Errorf("response % x", resp[:8])
			}
			for _, b := range resp[smp.MADSize:] {
				if b != 0 {
					t.Fatal("wrote past 256 bytes of resp")
				}
			}
		})
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	if len(k.unreg) != numAgents || len(k.agents) != 0 {
		t.Errorf("unregistered %v, left %v", k.unreg, k.agents)
	}
	k.mu.Unlock()
}

func TestRegisterFallback(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   kernelOpts
		hdrLen int
	}{
		{"ENOTTY", kernelOpts{noAgent2: syscall.ENOTTY}, HeaderSize},
		{"EINVAL", kernelOpts{noAgent2: syscall.EINVAL}, HeaderSize},
		{"old header", kernelOpts{noAgent2: syscall.ENOTTY, noPKey: true}, OldHeaderSize},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, k, err := startKernel(t, tt.opts, respondAll)
			if err != nil {
				t.Fatal(err)
			}
			want := []uint{IoctlRegisterAgent2, IoctlEnablePKey, IoctlRegisterAgent, IoctlRegisterAgent, IoctlRegisterAgent, IoctlRegisterAgent}
			k.mu.Lock()
			got := k.ioctls
			k.mu.Unlock()
			if len(got) != len(want) {
				t.Fatalf("ioctls %#x", got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("ioctl %d = %#x, want %#x", i, got[i], want[i])
				}
			}
			if d.hdrLen != tt.hdrLen {
				t.Errorf("header length %d", d.hdrLen)
			}
			resp := make([]byte, 256)
			if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), resp); err != nil {
				t.Fatal(err)
			}
			if resp[smp.DataOffset] != 'a' {
				t.Error("no answer")
			}
		})
	}
}

// wantQPN is the QP an agent of class must be registered on (and a MAD of
// class sent to): QP0 for SMPs, QP1 for GMPs.
// wantVersion is the class version an agent registers: 2 for SubnAdm.
func wantVersion(class uint8) uint8 {
	if class == classSA {
		return 2
	}
	return 1
}

func wantQPN(class uint8) uint32 {
	if class == smp.ClassDirectRoute || class == smp.ClassLIDRouted {
		return 0
	}
	return 1
}

func TestRegisterErrors(t *testing.T) {
	_, _, err := startKernel(t, kernelOpts{regFail: syscall.EPERM}, respondAll)
	var op *transport.OpError
	if !errors.As(err, &op) || op.Op != "register" || op.Source != "/dev/infiniband/umad9" || !errors.Is(err, syscall.EPERM) {
		t.Errorf("register error %v", err)
	}
	_, k, err := startKernel(t, kernelOpts{failNth: 2}, respondAll)
	if !errors.Is(err, syscall.EBUSY) {
		t.Errorf("second registration: %v", err)
	}
	k.mu.Lock()
	if len(k.agents) != 0 || len(k.unreg) != 1 {
		t.Errorf("first agent not unregistered: %v %v", k.agents, k.unreg)
	}
	k.mu.Unlock()
	_, k, err = startKernel(t, kernelOpts{failNth: 3}, respondAll)
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "class 0x04") {
		t.Errorf("PerfMgt registration: %v", err)
	}
	k.mu.Lock()
	if len(k.agents) != 0 || len(k.unreg) != 2 {
		t.Errorf("SMP agents not unregistered: %v %v", k.agents, k.unreg)
	}
	k.mu.Unlock()
	_, k, err = startKernel(t, kernelOpts{failNth: 4}, respondAll)
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "class 0x03") {
		t.Errorf("SA registration: %v", err)
	}
	k.mu.Lock()
	if len(k.agents) != 0 || len(k.unreg) != 3 {
		t.Errorf("SMP and PerfMgt agents not unregistered: %v %v", k.agents, k.unreg)
	}
	k.mu.Unlock()
}

// TestConcurrent runs many exchanges at once against a kernel that answers
// in shuffled batches; each caller must get the answer to its request.
// The kernel holds requests back only while a worker that has none
// waiting could still send one (each has at most one in flight): when
// every running worker waits, or a worker ends, it answers them all,
// so no request waits out its timeout.
func TestConcurrent(t *testing.T) {
	const workers, each = 32, 25
	var mu sync.Mutex
	rng := rand.New(rand.NewSource(1))
	// Under mu: the workers not yet done, and flush, which answers
	// every request held back, in shuffled order.
	running := workers
	flush := func(k *fakeKernel) {
		rng.Shuffle(len(k.pending), func(i, j int) { k.pending[i], k.pending[j] = k.pending[j], k.pending[i] })
		for _, p := range k.pending {
			var ph Header
			ph.unmarshal(p, k.hdrLen)
			k.respond(ph, p[k.hdrLen:])
		}
		k.pending = k.pending[:0]
	}
	d, k, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		mu.Lock()
		defer mu.Unlock()
		k.pending = append(k.pending, append(hdrBytes(h, k.hdrLen), mad...))
		if len(k.pending) < 4 && len(k.pending) < running && rng.Intn(3) != 0 {
			return // hold some back so replies overtake each other
		}
		flush(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var answered atomic.Int32
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				running--
				if len(k.pending) > 0 && len(k.pending) >= running {
					flush(k)
				}
			}()
			resp := make([]byte, 256)
			for i := 0; i < each; i++ {
				mod := uint32(w<<16 | i)
				class := smp.ClassDirectRoute
				if i%3 == 0 {
					class = smp.ClassLIDRouted
				}
				// 2 s: the last held-back requests wait it out; a busy
				// machine must not turn answers into timeouts.
				err := d.Exchange(ctxTimeout(t, 2*time.Second), 0xffff, newReq(t, class, mod), resp)
				if errors.Is(err, transport.ErrTimeout) {
					continue // a held-back request at the end of the run
				}
				if err != nil {
					errs <- err
					return
				}
				answered.Add(1)
				if got := binary.BigEndian.Uint32(resp[20:]); got != mod || resp[1] != class {
					t.Errorf("worker %d got the answer for %#x class %#x, want %#x", w, got, resp[1], mod)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if a := answered.Load(); a < workers*each*9/10 {
		t.Errorf("only %d of %d exchanges answered", a, workers*each)
	}
}

func TestOutOfOrder(t *testing.T) {
	const n = 3
	var mu sync.Mutex
	d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		mu.Lock()
		defer mu.Unlock()
		k.pending = append(k.pending, append(hdrBytes(h, k.hdrLen), mad...))
		if len(k.pending) < n {
			return
		}
		for i := len(k.pending) - 1; i >= 0; i-- { // last in, first out
			var ph Header
			ph.unmarshal(k.pending[i], k.hdrLen)
			k.respond(ph, k.pending[i][k.hdrLen:])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := uint32(0); i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, 256)
			if err := d.Exchange(ctxTimeout(t, 2*time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, i), resp); err != nil {
				t.Error(err)
				return
			}
			if got := binary.BigEndian.Uint32(resp[20:]); got != i {
				t.Errorf("request %d got answer %d", i, got)
			}
		}()
	}
	wg.Wait()
}

func TestTimeouts(t *testing.T) {
	gaveUp := make(chan struct{})   // the caller of request 3 got its timeout
	lateSent := make(chan struct{}) // request 3's late answer is written
	d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		switch binary.BigEndian.Uint32(mad[20:]) {
		case 1: // the kernel gives up: status 110
			k.timeout(h, mad)
		case 2: // nothing at all
		case 3: // answered after the caller gave up
			go func() {
				<-gaveUp
				k.respond(h, mad)
				close(lateSent)
			}()
		default:
			k.respond(h, mad)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, 256)
	// exchange runs one Exchange: what ends it is what is tested, so the
	// deadlines that should not are an hour away, and a minute without
	// an end is a hang. No upper bound on a duration.
	exchange := func(name string, ctx context.Context, class uint8, mod uint32) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- d.Exchange(ctx, 0xffff, newReq(t, class, mod), resp) }()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s: Exchange did not end within a minute", name)
			return nil
		}
	}
	check := func(name string, err error, also error) {
		t.Helper()
		var op *transport.OpError
		if !errors.Is(err, transport.ErrTimeout) || !errors.As(err, &op) || op.Source != "/dev/infiniband/umad9" {
			t.Errorf("%s: %v", name, err)
		}
		if also != nil && !errors.Is(err, also) {
			t.Errorf("%s: %v is not %v", name, err, also)
		}
	}

	err = exchange("status 110", ctxTimeout(t, time.Hour), smp.ClassDirectRoute, 1)
	check("status 110", err, nil)

	err = exchange("deadline", ctxTimeout(t, 50*time.Millisecond), smp.ClassDirectRoute, 2)
	check("deadline", err, context.DeadlineExceeded)

	// Cancelled before or during the Exchange: either way it ends so.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	err = exchange("cancel", ctx, smp.ClassLIDRouted, 2)
	check("cancel", err, context.Canceled)

	err = exchange("already cancelled", ctx, smp.ClassLIDRouted, 4)
	check("already cancelled", err, context.Canceled)

	// A late answer is dropped and does not confuse the next exchange.
	err = exchange("late", ctxTimeout(t, 20*time.Millisecond), smp.ClassDirectRoute, 3)
	check("late", err, nil)
	close(gaveUp)
	<-lateSent
	if err := d.Exchange(ctxTimeout(t, time.Minute), 0xffff, newReq(t, smp.ClassDirectRoute, 5), resp); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(resp[20:]); got != 5 {
		t.Errorf("got answer %d after a late reply", got)
	}
}

func TestDefaultTimeout(t *testing.T) {
	got := make(chan uint32, 1)
	d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		got <- h.TimeoutMS
		k.respond(h, mad)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Exchange(context.Background(), 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 256)); err != nil {
		t.Fatal(err)
	}
	if ms := <-got; ms != uint32(DefaultTimeout/time.Millisecond) {
		t.Errorf("timeout_ms %d without a deadline", ms)
	}
}

func TestCloseWhileWaiting(t *testing.T) {
	arrived := make(chan struct{}, 8)
	d, k, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) { arrived <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			// An hour: only Close can end them with ErrClosed.
			errs <- d.Exchange(ctxTimeout(t, time.Hour), 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 256))
		}()
	}
	for i := 0; i < n; i++ {
		<-arrived
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, transport.ErrClosed) {
				t.Errorf("waiter: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Close did not end a waiting Exchange within a minute")
		}
	}
	k.mu.Lock()
	if len(k.unreg) != numAgents {
		t.Errorf("unregistered %v", k.unreg)
	}
	k.mu.Unlock()
	if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 256)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("exchange after close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
}

func TestGarbage(t *testing.T) {
	d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
		mod := binary.BigEndian.Uint32(mad[20:])
		// Noise before the real answer.
		k.write([]byte{1, 2, 3})                               // shorter than a header
		k.write(make([]byte, HeaderSize+10))                   // header without a MAD header
		stray := append(hdrBytes(h, HeaderSize), mad...)       // unknown TID
		binary.BigEndian.PutUint32(stray[HeaderSize+12:], 0x0) //
		k.write(stray)
		other := append(hdrBytes(h, HeaderSize), mad...) // right TID, other class
		other[HeaderSize+1] = 0x04
		k.write(other)
		k.write(append(hdrBytes(h, HeaderSize), mad...)) // right TID, not a response
		switch mod {
		case 1:
			k.respond(h, mad)
		case 2: // a truncated response with status 0
			k.write(append(hdrBytes(h, HeaderSize), mad[:100]...))
		case 3: // a kernel status other than 110
			h.Status = uint32(syscall.ECOMM)
			k.write(append(hdrBytes(h, HeaderSize), mad...))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, 256)
	if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), resp); err != nil {
		t.Fatal(err)
	}
	if string(resp[smp.DataOffset:smp.DataOffset+6]) != "answer" {
		t.Error("wrong packet delivered")
	}
	if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 2), resp); !errors.Is(err, smp.ErrShort) {
		t.Errorf("truncated response: %v", err)
	}
	if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 3), resp); !errors.Is(err, syscall.ECOMM) {
		t.Errorf("kernel status: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	d, _, err := startKernel(t, kernelOpts{}, respondAll)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, time.Second)
	if err := d.Exchange(ctx, 1, make([]byte, 100), make([]byte, 256)); !errors.Is(err, smp.ErrShort) {
		t.Errorf("short req: %v", err)
	}
	if err := d.Exchange(ctx, 1, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 255)); !errors.Is(err, smp.ErrShort) {
		t.Errorf("short resp: %v", err)
	}
	cm := newReq(t, 0x07, 1) // Communication Management: no agent registered
	if err := d.Exchange(ctx, 1, cm, make([]byte, 256)); !errors.Is(err, ErrClass) {
		t.Errorf("CM class: %v", err)
	}
}

func TestKernelGone(t *testing.T) {
	arrived := make(chan struct{}, 1)
	d, k, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) { arrived <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- d.Exchange(ctxTimeout(t, 5*time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 256))
	}()
	<-arrived
	k.end.Close()
	if err := <-errc; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("pending exchange: %v", err)
	}
	if err := d.Exchange(ctxTimeout(t, time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, 256)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("later exchange: %v", err)
	}
}

func TestOpenPathErrors(t *testing.T) {
	_, err := OpenPath("/nonexistent/umad0")
	var op *transport.OpError
	if !errors.As(err, &op) || op.Op != "open" || op.Source != "/nonexistent/umad0" ||
		!errors.Is(err, ErrNoUmad) || !errors.Is(err, transport.ErrNoDevice) {
		t.Errorf("missing node: %v", err)
	}
	if os.Geteuid() != 0 {
		f := t.TempDir() + "/umad0"
		if err := os.WriteFile(f, nil, 0o000); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenPath(f); !errors.Is(err, ErrPermission) || !errors.Is(err, os.ErrPermission) {
			t.Errorf("no permission: %v", err)
		}
	}
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM} {
		err := openErr("/dev/infiniband/umad0", errno)
		if !errors.Is(err, ErrPermission) || !errors.Is(err, os.ErrPermission) || !errors.Is(err, errno) ||
			!strings.Contains(err.Error(), "run as root") || !strings.Contains(err.Error(), "udev") {
			t.Errorf("%v: %v", errno, err)
		}
	}
	// Open goes through Select: a fixture without devices says so.
	if _, err := Open(fixture(t, "empty"), "", 0); !errors.Is(err, ErrNoInfiniBand) {
		t.Errorf("Open on empty sysfs: %v", err)
	}
}

func BenchmarkExchange(b *testing.B) {
	d, _, err := startKernel(b, kernelOpts{}, respondAll)
	if err != nil {
		b.Fatal(err)
	}
	req, resp := newReq(b, smp.ClassDirectRoute, 1), make([]byte, 256)
	ctx := ctxTimeout(b, time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Exchange(ctx, 0xffff, req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExchangeParallel(b *testing.B) {
	d, _, err := startKernel(b, kernelOpts{}, respondAll)
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxTimeout(b, time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := newReq(b, smp.ClassDirectRoute, 1), make([]byte, 256)
		for pb.Next() {
			if err := d.Exchange(ctx, 0xffff, req, resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// FuzzReader feeds an arbitrary record to the Device before the real
// answer: the reader must neither crash nor deliver the wrong packet.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1, 2, 3})
	f.Add(make([]byte, HeaderSize+smp.HeaderSize))
	to := hdrBytes(Header{ID: 3, Status: StatusTimeout, LID: 0xffff}, HeaderSize)
	f.Add(append(to, newReq(f, smp.ClassDirectRoute, 1)[:smp.HeaderSize]...))
	f.Fuzz(func(t *testing.T, noise []byte) {
		if len(noise) > 4096 {
			return
		}
		d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) {
			if len(noise) > 0 {
				k.write(noise)
			}
			k.respond(h, mad)
		})
		if err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, 256)
		err = d.Exchange(ctxTimeout(t, 2*time.Second), 0xffff, newReq(t, smp.ClassDirectRoute, 1), resp)
		if err == nil && string(resp[smp.DataOffset:smp.DataOffset+6]) != "answer" &&
			binary.BigEndian.Uint32(resp[20:]) != 1 {
			t.Fatalf("delivered a foreign packet % x", resp[:24])
		}
	})
}
