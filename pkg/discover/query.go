package discover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Querier sends SubnGet SMPs with a per-attempt timeout and retries,
// counts them, and records the ones that fail. It is safe for concurrent
// use. The engine uses one; tools use one for further reads (forwarding
// tables, single attributes) over a discovered fabric.
type Querier struct {
	Transport transport.Transport
	Timeout   time.Duration // per attempt; default DefaultTimeout
	Retries   int           // further attempts after a timeout
	MKey      uint64
	// Pool supplies the request buffers and accounts for them (default:
	// a pool of the Querier's own).
	Pool *model.MADPool
	// Sent, when set, is called after every SMP sent.
	Sent func()
	// Window, when set, bounds the SMPs this Querier has in flight and
	// learns from their round trips and losses (see Window).
	Window *Window
	// FixedTimeout makes every attempt wait the full Timeout. By default
	// the first attempts wait only a retransmission timeout estimated
	// from the round trips seen so far and the host's lateness (see rtoOf),
	// doubled on each loss, so an SMP lost on the way (a switch SMA drops
	// SMPs that arrive while it is busy) costs a few round trips, not a
	// whole Timeout; once the doubled wait reaches half the Timeout it is
	// resent with the full Timeout, and Retries more times after that.
	// Through a transport whose peer queues (transport.Limits.Queues:
	// ibsim, which answers every SMP, a drop at once with status 110) every
	// attempt waits the full Timeout, as with FixedTimeout: an answer not
	// yet come waits behind others, and a resend would only queue behind it.
	FixedTimeout bool

	limOnce sync.Once
	lim     transport.Limits

	lastOK atomic.Int64 // when the latest answer came (mono)
	late   atomic.Int64 // how late an expired attempt ended, ns (decaying)
	// est are the round-trip estimates of directed-route SMPs ([0]) and
	// of LID-routed ones ([1]), which switches forward in hardware: they
	// overtake directed-route SMPs queued at a switch's firmware.
	est     [2]rttEst
	smps    atomic.Int64
	retries atomic.Int64
	mu      sync.Mutex
	errs    []*SMPError
	pool    model.MADPool
}

// limits are the Transport's Limits.
func (q *Querier) limits() *transport.Limits {
	q.limOnce.Do(func() { q.lim = transport.LimitsOf(q.Transport) })
	return &q.lim
}

// SMPs is the number of SMPs sent, retries included.
func (q *Querier) SMPs() int64 { return q.smps.Load() }

// RetryCount is the number of retries after timeouts.
func (q *Querier) RetryCount() int64 { return q.retries.Load() }

// Errors returns the SMPs that failed so far.
func (q *Querier) Errors() []*SMPError {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*SMPError(nil), q.errs...)
}

// Outstanding is the number of MAD buffers in use (0 when idle).
func (q *Querier) Outstanding() int { return q.madPool().Outstanding() }

func (q *Querier) madPool() *model.MADPool {
	if q.Pool != nil {
		return q.Pool
	}
	return &q.pool
}

func (q *Querier) fail(path smp.DRPath, attr uint16, mod uint32, err error) error {
	q.mu.Lock()
	q.errs = append(q.errs, &SMPError{Path: path, Attr: attr, Mod: mod, Err: err})
	q.mu.Unlock()
	return err
}

// forget drops the last recorded failure of attr/mod along path (a read
// that is then made another way).
func (q *Querier) forget(path smp.DRPath, attr uint16, mod uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := len(q.errs) - 1; i >= 0; i-- {
		if e := q.errs[i]; e.Path == path && e.Attr == attr && e.Mod == mod {
			q.errs = append(q.errs[:i], q.errs[i+1:]...)
			return
		}
	}
}

// FatalError wraps a transport failure (not a timeout): the transport is
// unusable and the work should stop.
type FatalError struct{ Err error }

func (f *FatalError) Error() string { return f.Err.Error() }

// Unwrap returns the transport's error.
func (f *FatalError) Unwrap() error { return f.Err }

// Get reads attribute attr/mod of the node at the end of the directed
// route path into out (64 bytes). A failure after the retries is recorded
// and returned as an *SMPError-compatible error (timeouts wrap
// transport.ErrTimeout, a bad status is *smp.StatusError); a transport
// failure is returned as *FatalError and not recorded; cancellation
// returns ctx.Err().
func (q *Querier) Get(ctx context.Context, path smp.DRPath, attr uint16, mod uint32, out []byte) error {
	return q.do(ctx, smp.PermissiveLID, nil, path, attr, mod, out)
}

// do sends m (nil: the directed-route SubnGet of attr/mod along path,
// marshalled in place) and waits for its answer, with retries.
func (q *Querier) do(ctx context.Context, dlid uint16, m *smp.MAD, path smp.DRPath, attr uint16, mod uint32, out []byte) error {
	pool := q.madPool()
	wc, _ := ctx.(*workerCtx)
	var w *model.MADWrapper
	if wc != nil {
		w = wc.mad(pool) // the worker's own, for all its SMPs
	} else {
		w = pool.Get()
		defer pool.Put(w)
	}
	w.DLID, w.Path, w.Attr, w.AttrMod, w.Retries = dlid, path, attr, mod, 0
	var err error
	if m == nil {
		err = smp.MarshalGet(w.Buf[:], path, attr, mod, q.MKey)
	} else {
		err = m.MarshalTo(w.Buf[:])
	}
	if err != nil {
		return q.fail(path, attr, mod, err)
	}
	err = q.attempts(ctx, wc, w, dlid)
	resp := &w.Resp
	if err != nil {
		var fe *FatalError
		if errors.As(err, &fe) || (ctx.Err() != nil && err == ctx.Err()) {
			return err // the work stops: not this SMP's failure
		}
		return q.fail(path, attr, mod, err)
	}
	// The header fields are checked in place: no need to decode the
	// whole MAD (paths included) to read its data.
	if resp[0] != 1 || (resp[1] != smp.ClassDirectRoute && resp[1] != smp.ClassLIDRouted) {
		return q.fail(path, attr, mod, fmt.Errorf("bad response: not an SMP (version %d class 0x%x)", resp[0], resp[1]))
	}
	if rattr := uint16(resp[16])<<8 | uint16(resp[17]); rattr != attr || resp[3]&smp.MethodResponseFlag == 0 {
		return q.fail(path, attr, mod, fmt.Errorf("response for attribute 0x%x method 0x%x", rattr, resp[3]))
	}
	st := uint16(resp[4])<<8 | uint16(resp[5])
	if resp[1] == smp.ClassDirectRoute {
		st &^= smp.StatusDirection
	}
	if st != 0 {
		return q.fail(path, attr, mod, &smp.StatusError{Status: st})
	}
	copy(out, resp[smp.DataOffset:smp.DataOffset+smp.DataSize])
	return nil
}

// attempts sends w.Buf to dlid and waits for the answer in w.Resp: the
// short and full attempts, the Window, the round-trip estimates. It
// returns nil, a timeout after the last attempt (wrapping
// transport.ErrTimeout), ctx's error, transport.ErrReadOnly, or a
// *FatalError.
func (q *Querier) attempts(ctx context.Context, wc *workerCtx, w *model.MADWrapper, dlid uint16) error {
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	resp := &w.Resp
	var err error
	// Short first attempts (a timeout estimated from the round trips,
	// doubled on each loss) do not use up retries: after them the SMP
	// still gets Retries+1 attempts of the full Timeout.
	lim := q.limits()
	short := 0
	if !q.FixedTimeout && !lim.Queues {
		short = maxShort
	}
	attempts := q.Retries + 1
	est := q.estOf(dlid)
	// A transport that answers at once (the embedded simulator without
	// its latency model) has nothing in flight: no attempt there is
	// rushed (see flights), nor costs the bookkeeping.
	rack := wc != nil && short > 0 && !lim.Immediate
	for attempt := 0; attempt < attempts+short; attempt++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if q.Window != nil {
			if err := q.Window.acquire(ctx); err != nil {
				return err
			}
		}
		// The wait is estimated as the SMP goes out, after any wait for
		// room: the round trips may have grown meanwhile.
		wait := timeout
		inflight := 1
		if q.Window != nil {
			inflight = q.Window.inflight()
		} else if rack && attempt < short {
			// a fixed window takes no tokens: count the attempts listed
			inflight = int(est.fl.n.Load()) + 1
		}
		if attempt < short {
			r := q.rtoOf(est, timeout, inflight)
			if s := r << attempt; r < timeout && s < timeout/2 {
				wait = s
			} else {
				short = attempt // no short attempt left worth making
			}
		}
		if attempt > 0 {
			q.retries.Add(1)
			w.Retries++
		}
		q.smps.Add(1)
		if q.Sent != nil {
			q.Sent()
		}
		sent := mono()
		var expired bool
		if wc != nil {
			if lim.Deadline {
				wc.armUntimed(sent, wait)
			} else {
				wc.arm(sent, wait)
			}
			listed := rack && attempt < short
			if listed {
				est.fl.push(wc, sent, attempt)
			}
			err = q.Transport.Exchange(wc, dlid, w.Buf[:], resp[:])
			if listed {
				est.fl.end(wc, err == nil, est, rtoLate*q.late.Load())
			}
			expired = wc.disarm()
		} else {
			actx, cancel := context.WithTimeout(ctx, wait)
			err = q.Transport.Exchange(actx, dlid, w.Buf[:], resp[:])
			expired = actx.Err() != nil && ctx.Err() == nil
			cancel()
		}
		end := mono()
		rtt := time.Duration(end - sent)
		lost := false
		if err == nil {
			q.lastOK.Store(end)
			if sent > est.lastFed.Load() {
				est.lastFed.Store(sent)
			}
		} else if expired || errors.Is(err, transport.ErrTimeout) {
			q.noteLate(rtt - wait)
			// Only when an SMP sent after this one came back first was
			// this one lost on the way, and the window shrinks: a queue
			// keeps the order. Nothing come back since it went out, or
			// only SMPs sent before it, is a stall or a queue (a
			// descheduled peer or requester, a busy switch).
			lost = est.lastFed.Load() > sent
			if !lost && rtt >= wait && q.lastOK.Load() < sent && q.Window != nil && q.Window.inflight() > 1 {
				// Not one of the SMPs in flight came back while this
				// one waited out its wait: the peer (or this host)
				// stalls. Back the short waits that follow off, as TCP
				// does its timer. (A "no answer" that came at once, as
				// the embedded simulator's drops do, waited for nothing.)
				q.noteLate(wait)
			}
		}
		if q.Window != nil {
			q.Window.release(sent, rtt, lost)
		}
		if err == nil {
			q.sampleOf(est, rtt, inflight)
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if expired {
			// The attempt's own deadline passed: a timeout, whatever
			// error the transport chose to report it with.
			err = fmt.Errorf("%w (%w)", transport.ErrTimeout, err)
		} else if errors.Is(err, transport.ErrReadOnly) {
			return err // a Set refused before it was sent: not the transport's failure
		} else if !errors.Is(err, transport.ErrTimeout) {
			return &FatalError{err}
		}
	}
	return err
}

// Exchange sends req, a MAD of any class (a PerfMgt GMP to a port's LID,
// say), to dlid and waits for its answer in resp, by the rules Get
// follows for SMPs: a wait per attempt (the full Timeout through a peer
// that queues), Retries more attempts after a timeout, and no more in
// flight than the Window allows. A timeout after the last attempt wraps
// transport.ErrTimeout; a transport failure is a *FatalError; a Set the
// transport refuses as read-only is transport.ErrReadOnly; cancellation
// returns ctx.Err(). The answer is not checked, nor is a failure
// recorded in Errors: the caller decodes it.
func (q *Querier) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if len(req) < smp.MADSize || len(resp) < smp.MADSize {
		return fmt.Errorf("querier exchange: buffers of %d and %d bytes, want %d", len(req), len(resp), smp.MADSize)
	}
	pool := q.madPool()
	wc, _ := ctx.(*workerCtx)
	var w *model.MADWrapper
	if wc != nil {
		w = wc.mad(pool)
	} else {
		w = pool.Get()
		defer pool.Put(w)
	}
	w.DLID, w.Path, w.Attr, w.AttrMod, w.Retries = dlid, smp.DRPath{}, 0, 0, 0
	copy(w.Buf[:], req[:smp.MADSize])
	if err := q.attempts(ctx, wc, w, dlid); err != nil {
		return err
	}
	copy(resp, w.Resp[:])
	return nil
}

// epoch is the origin of mono's clock, a century back (with the process's
// monotonic reading, moved as far), so that mono is positive on the real
// clock and inside a synctest bubble, whose clock starts in 2000, and a
// stamp left zero is earlier than any SMP; epochNano is its UnixNano.
var (
	epoch     = time.Now().Add(-100 * 365 * 24 * time.Hour)
	epochNano = epoch.UnixNano()
)

// mono is the time in nanoseconds since epoch, on the monotonic clock
// (one reading, where time.Now takes a wall and a monotonic one: the
// engine stamps every SMP twice), or inside a synctest bubble on the
// bubble's clock (time.Since reads it there). epochNano+mono() is the
// time as UnixNano.
func mono() int64 { return int64(time.Since(epoch)) }

// rttEst is what the round trips of one kind of SMP showed.
type rttEst struct {
	lastFed atomic.Int64 // the latest send time of an SMP answered (mono)
	srtt    atomic.Int64 // smoothed round trip, ns (0: no sample yet)
	rttvar  atomic.Int64 // round-trip variation, ns
	peakRTT atomic.Int64 // the longest recent round trip, ns (decaying)
	svc     atomic.Int64 // the least round trip per SMP in flight at its send, ns
	minRTT  atomic.Int64 // the least round trip, ns
	fl      flights      // the short attempts in flight (see flights)
}

// estOf is the estimate for SMPs to dlid.
func (q *Querier) estOf(dlid uint16) *rttEst {
	if dlid == smp.PermissiveLID {
		return &q.est[0]
	}
	return &q.est[1]
}

// Bounds of the short attempts' retransmission timeout.
const (
	// MinRTO is the least a short attempt waits: a timer's resolution
	// on a busy host (and umad's, whose timeouts are whole ms).
	MinRTO   = time.Millisecond
	rtoK     = 4 // rto = srtt + rtoK*rttvar (RFC 6298)
	rtoFloor = 4 // and at least rtoFloor*srtt
	rtoLate  = 2 // and at least rtoLate times the host's lateness
	rtoPeak  = 4 // and at least rtoPeak times the longest recent round trip
	rtoQueue = 2 // and at least rtoQueue times the SMPs in flight times svc
	// maxShort bounds the short attempts (each twice the one before);
	// they end sooner, once one would wait half the full timeout.
	maxShort = 16
)

// rtoOf is a short attempt's timeout from the estimate e, tied to what
// was measured: srtt + 4·rttvar, and at least
//   - 4·srtt;
//   - 4 times the longest recent round trip (a queue building in the
//     fabric while the window grows can double the round trip faster
//     than srtt follows, and an SMP behind a busy switch other SMPs do
//     not cross waits longer than the SMPs in flight tell);
//   - twice the SMPs in flight as this one goes out times svc, the
//     least round trip per SMP in flight yet seen (behind a bottleneck
//     that serves one SMP at a time, the first switch's firmware or a
//     single-threaded ibsim, an SMP sent in a burst waits for those
//     ahead of it, each taking at least that long; where nothing
//     serializes the SMPs, svc is tiny);
//   - twice the lateness with which recent failed attempts came back (a
//     loaded host runs timers and requesters late);
//   - MinRTO;
//
// and at most timeout; timeout itself until a round trip has been
// measured. So a loss costs a few round trips of the fabric, and only a
// fabric or host that has shown itself slow waits longer.
func (q *Querier) rtoOf(e *rttEst, timeout time.Duration, inflight int) time.Duration {
	srtt := e.srtt.Load()
	if srtt == 0 {
		return timeout
	}
	queue := time.Duration(rtoQueue * e.svc.Load() * int64(inflight))
	r := time.Duration(srtt + rtoK*e.rttvar.Load())
	r = max(r, rtoFloor*time.Duration(srtt), rtoPeak*time.Duration(e.peakRTT.Load()), queue,
		rtoLate*time.Duration(q.late.Load()), MinRTO)
	if r > timeout {
		r = timeout
	}
	return r
}

// noteLate records that an attempt which failed came back l after its
// deadline: this host ran the requester (or the transport's deadline)
// late, and a short wait must outlast that, or a descheduled requester
// would count its own answers as lost.
func (q *Querier) noteLate(l time.Duration) {
	if l > time.Duration(q.late.Load()) {
		q.late.Store(int64(l))
	}
}

// sampleOf folds one round trip, of an SMP sent with inflight in
// flight, into e's srtt and rttvar (RFC 6298 weights; concurrent updates
// may lose a sample, which an estimate can afford).
func (q *Querier) sampleOf(e *rttEst, d time.Duration, inflight int) {
	r := int64(d)
	srtt := e.srtt.Load()
	if srtt == 0 {
		e.srtt.Store(r)
		e.rttvar.Store(r / 2)
		e.svc.Store(r / int64(inflight))
		e.minRTT.Store(r)
		return
	}
	if r < e.minRTT.Load() {
		e.minRTT.Store(r)
	}
	if v := r / int64(inflight); v < e.svc.Load() {
		e.svc.Store(v)
	}
	diff := srtt - r
	if diff < 0 {
		diff = -diff
	}
	e.rttvar.Store((3*e.rttvar.Load() + diff) / 4)
	e.srtt.Store((7*srtt + r) / 8)
	// the peak and the lateness are forgotten over some 256 answers
	if p := e.peakRTT.Load(); r > p {
		e.peakRTT.Store(r)
	} else {
		e.peakRTT.Store(p - p/1024)
	}
	if l := q.late.Load(); l > 0 {
		q.late.Store(l - l/256 - 1)
	}
}

// GetLID reads attribute attr/mod of the port with LID lid by a
// LID-routed SMP (the error's path is the empty route).
func (q *Querier) GetLID(ctx context.Context, lid uint16, attr uint16, mod uint32, out []byte) error {
	m := smp.NewLIDGet(attr, mod)
	m.MKey = q.MKey
	return q.do(ctx, lid, &m, smp.DRPath{}, attr, mod, out)
}

// Parallel runs job(0..n-1) on workers goroutines and waits. It stops at
// the first fatal error or cancellation and returns it; other job errors
// are left to the jobs (recorded by the Querier).
func Parallel(ctx context.Context, workers, n int, job func(ctx context.Context, i int) error) error {
	return parallel(ctx, nil, nil, workers, n, job)
}

// parallel is Parallel with as many workers running as win allows SMPs
// in flight (see crew), run on g's goroutines where it has idle ones.
func parallel(ctx context.Context, g *gang, win *Window, workers, n int, job func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	c := &crew{gang: g, win: win, max: max(1, min(workers, n))}
	c.work = func() {
		wc := newWorkerCtx(ctx)
		defer wc.release()
		for c.stay() {
			i := int(next.Add(1) - 1)
			if i >= n || ctx.Err() != nil {
				return
			}
			if err := job(wc, i); IsStop(err) {
				once.Do(func() { first = err; cancel() })
				return
			}
			if int(next.Load()) < n {
				c.grow()
			}
		}
	}
	c.start()
	c.wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// crew runs up to max workers, but no more than its window allows SMPs
// in flight (when it has one): a worker beyond the window would only wait
// for room, and every SMP would then cost a goroutine hand-off more (the
// one releasing room waking the one waiting). Workers are added as the
// window grows and leave as it shrinks, at least one staying.
type crew struct {
	gang    *gang // nil: a new goroutine per worker
	win     *Window
	max     int
	work    func()
	running atomic.Int32
	wg      sync.WaitGroup
}

// want is the number of workers the window calls for.
func (c *crew) want() int {
	if c.win == nil {
		return c.max
	}
	return max(1, min(c.max, c.win.limit()))
}

func (c *crew) start() {
	for range c.want() {
		c.running.Add(1)
		c.spawn()
	}
}

// spawn starts a worker already counted in running.
func (c *crew) spawn() {
	c.wg.Add(1)
	c.gang.run(func() {
		defer c.wg.Done()
		c.work()
	})
}

// gang keeps the goroutines of finished workers for the next ones: a
// discovery runs a crew per level and chunk, and a fresh goroutine would
// grow its stack again through the transport's call chain each time.
// A nil gang starts a goroutine per worker.
type gang struct {
	idle chan func() // unbuffered: a send succeeds only to an idle goroutine
}

func newGang() *gang { return &gang{idle: make(chan func())} }

// run runs f on an idle goroutine of g, or on a new one that joins g
// after f.
func (g *gang) run(f func()) {
	if g == nil {
		go f()
		return
	}
	select {
	case g.idle <- f:
	default:
		go func() {
			f()
			for f := range g.idle {
				f()
			}
		}()
	}
}

// stop lets g's idle goroutines end; no run may follow.
func (g *gang) stop() {
	if g != nil {
		close(g.idle)
	}
}

// stay reports whether the calling worker should take another job; a
// worker beyond the window leaves (and no longer counts as running).
func (c *crew) stay() bool {
	if c.win == nil || c.win.fixed { // (a fixed window keeps its size)
		return true
	}
	for {
		r := c.running.Load()
		if r <= 1 || int(r) <= c.want() {
			return true
		}
		if c.running.CompareAndSwap(r, r-1) {
			return false
		}
	}
}

// grow adds workers up to what the window calls for (called by a running
// worker, so the WaitGroup cannot be at zero).
func (c *crew) grow() {
	if c.win == nil || c.win.fixed {
		return
	}
	for {
		r := c.running.Load()
		if int(r) >= c.want() {
			return
		}
		if c.running.CompareAndSwap(r, r+1) {
			c.spawn()
		}
	}
}

// IsStop reports whether err must stop the work: a transport failure or
// a cancellation.
func IsStop(err error) bool {
	if err == nil {
		return false
	}
	var f *FatalError
	return errors.As(err, &f) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ParallelApart is Parallel for jobs of which two with the same key
// (>= 0; -1: none) should not run at once: a worker takes the first job
// in order whose key no running job holds, so jobs start in order except
// that one is passed over while its key is busy. The engine keys a
// level's NodeInfo probes by the port they leave by (with two keys, see
// sharing.keys): sibling switches of a fat tree reach the same node by
// the same port number, and two probes of one node at once make its
// one-packet VL15 buffer drop one.
func ParallelApart(ctx context.Context, workers, n int, key func(i int) int, job func(ctx context.Context, i int) error) error {
	return parallelApart(ctx, nil, nil, workers, n, func(i int) (int, int) { return key(i), -1 }, nil, job)
}

// parallelApart is ParallelApart with two keys per job, as many workers
// running as win allows SMPs in flight (see crew), run on g's goroutines
// where it has idle ones. free (nil: never) reports, when job i is
// considered, that it may run whatever its keys (the engine releases
// probes it learns cannot collide); a job holds the keys it started with
// until it ends.
func parallelApart(ctx context.Context, g *gang, win *Window, workers, n int, keys func(i int) (int, int), free func(i int) bool, job func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newApart(n, keys, free)
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	var once sync.Once
	var first error
	c := &crew{gang: g, win: win, max: max(1, min(workers, n))}
	c.work = func() {
		wc := newWorkerCtx(ctx)
		defer wc.release()
		for c.stay() {
			i := s.take(ctx)
			if i < 0 {
				return
			}
			err := job(wc, i)
			s.done(i)
			if IsStop(err) {
				once.Do(func() { first = err; cancel() })
				return
			}
			c.grow()
		}
	}
	c.start()
	c.wg.Wait()
	if stop() { // (else the broadcast may still be running: s is dropped)
		s.recycle()
	}
	if first != nil {
		return first
	}
	return ctx.Err()
}

// apart hands out a parallelApart's jobs: the first job in order that is
// free or whose keys no running job holds. Keys are numbered densely
// once. The jobs that may be next sit in a min-heap by index; a job found
// blocked is parked on the busy key and goes back into the heap when
// that key's job ends, so a take costs heap operations however many jobs
// wait behind busy keys.
type apart struct {
	mu    sync.Mutex
	cond  *sync.Cond
	left  int // jobs not started
	free  func(int) bool
	keys  [][2]int32 // job -> its dense keys, -1 for none
	held  []bool     // job -> it started holding its keys
	busy  []bool     // dense key -> a job holding it runs
	wait  [][]int32  // dense key -> jobs parked on it
	ready jobHeap    // jobs that may be next
	dense map[int]int32
}

// aparts keeps the state of finished parallelApart calls for the next
// (a discovery makes one per chunk of probes and level).
var aparts sync.Pool

func newApart(n int, keys func(i int) (int, int), free func(int) bool) *apart {
	s, _ := aparts.Get().(*apart)
	if s == nil {
		s = &apart{dense: map[int]int32{}}
		s.cond = sync.NewCond(&s.mu)
	}
	s.left, s.free = n, free
	s.keys = slices.Grow(s.keys[:0], n)[:n]
	s.held = slices.Grow(s.held[:0], n)[:n]
	clear(s.held)
	s.ready = slices.Grow(s.ready[:0], n)[:n]
	clear(s.dense)
	denseOf := func(k int) int32 {
		if k < 0 {
			return -1
		}
		d, ok := s.dense[k]
		if !ok {
			d = int32(len(s.dense))
			s.dense[k] = d
		}
		return d
	}
	for i := 0; i < n; i++ {
		k1, k2 := keys(i)
		s.keys[i] = [2]int32{denseOf(k1), denseOf(k2)}
		s.ready[i] = int32(i) // in order: already a heap
	}
	s.busy = slices.Grow(s.busy[:0], len(s.dense))[:len(s.dense)]
	clear(s.busy)
	s.wait = slices.Grow(s.wait[:0], len(s.dense))[:len(s.dense)]
	for i := range s.wait {
		s.wait[i] = s.wait[i][:0]
	}
	return s
}

// recycle gives s to the next parallelApart call.
func (s *apart) recycle() {
	s.free = nil
	aparts.Put(s)
}

// jobHeap is a min-heap of job indexes.
type jobHeap []int32

func (h *jobHeap) push(j int32) {
	*h = append(*h, j)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *jobHeap) pop() int32 {
	s := *h
	top, last := s[0], len(s)-1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < last && s[l] < s[m] {
			m = l
		}
		if r := l + 1; r < last && s[r] < s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[m], s[i] = s[i], s[m]
		i = m
	}
	*h = s
	return top
}

// take returns the next job to run, waiting while every job left is
// held back by a busy key; -1 when none is left or ctx ended.
func (s *apart) take(ctx context.Context) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if ctx.Err() != nil || s.left == 0 {
			return -1
		}
		if len(s.ready) == 0 {
			s.cond.Wait()
			continue
		}
		i := s.ready.pop()
		k := s.keys[i]
		if (k[0] >= 0 || k[1] >= 0) && (s.free == nil || !s.free(int(i))) {
			blocked := int32(-1)
			for _, d := range k {
				if d >= 0 && s.busy[d] {
					blocked = d
					break
				}
			}
			if blocked >= 0 {
				s.wait[blocked] = append(s.wait[blocked], i)
				continue
			}
			for _, d := range k {
				if d >= 0 {
					s.busy[d] = true
				}
			}
			s.held[i] = true
		}
		s.left--
		if s.left == 0 {
			s.cond.Broadcast() // the waiters have nothing left to wait for
		}
		return int(i)
	}
}

// done ends job i: the jobs parked on its keys may start.
func (s *apart) done(i int) {
	if !s.held[i] {
		return
	}
	s.mu.Lock()
	woke := 0
	for _, d := range s.keys[i] {
		if d < 0 {
			continue
		}
		s.busy[d] = false
		for _, j := range s.wait[d] {
			s.ready.push(j)
		}
		woke += len(s.wait[d])
		s.wait[d] = s.wait[d][:0]
	}
	switch {
	case woke == 1:
		s.cond.Signal()
	case woke > 1:
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}
