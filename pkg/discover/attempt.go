package discover

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// workerCtx is the context a Parallel worker hands to its jobs: its
// parent's values and cancellation, plus a deadline that the Querier arms
// for one SMP attempt at a time with the worker's one reusable timer.
// Unlike a context.WithTimeout per attempt it allocates nothing while
// attempts end in time (a new Done channel only after one expired).
// Err, Done and Deadline read atomics: the transport asks them on every
// SMP, and the attempt's own worker is the only one that arms it.
type workerCtx struct {
	parent context.Context
	dl     atomic.Int64               // the armed attempt's deadline (mono); unarmed: none armed
	st     atomic.Pointer[workerDone] // Done's channel and Err, replaced (never changed) under mu
	timed  bool                       // the armed attempt's timer runs (only the worker touches it)
	mu     sync.Mutex
	ended  bool // the parent ended: done stays closed
	timer  *time.Timer
	stop   func() bool
	funcs  []*afterFunc
	// w is the worker's MAD wrapper, from pool (see mad).
	w    *model.MADWrapper
	pool *model.MADPool
	// The attempt's place in the Querier's flights (under flights.mu),
	// and whether rush moved its deadline (read by the worker after it
	// left the flights).
	fprev, fnext *workerCtx
	fsent        int64
	fshift       int // the attempt's number among its SMP's
	rushed       atomic.Bool
}

// unarmed is workerCtx.dl when no attempt is armed (below any mono).
const unarmed = math.MinInt64

// workerDone is a workerCtx's Done channel with its Err (nil while open).
type workerDone struct {
	done chan struct{}
	err  error
}

type afterFunc struct {
	fn  func()
	ran bool
}

func newWorkerCtx(parent context.Context) *workerCtx {
	c := &workerCtx{parent: parent}
	c.dl.Store(unarmed)
	c.st.Store(&workerDone{done: make(chan struct{})})
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	c.stop = context.AfterFunc(parent, c.cancel)
	return c
}

// release stops the worker's timer and parent watch, and gives its MAD
// wrapper back.
func (c *workerCtx) release() {
	c.timer.Stop()
	c.stop()
	if c.w != nil {
		c.pool.Put(c.w)
		c.w, c.pool = nil, nil
	}
}

// mad returns the worker's MAD wrapper from pool: one for all the SMPs
// the worker sends one after another, instead of a Get and Put (and a
// wrapper zeroed) per SMP.
func (c *workerCtx) mad(pool *model.MADPool) *model.MADWrapper {
	if c.pool != pool {
		if c.w != nil {
			c.pool.Put(c.w)
		}
		c.w, c.pool = pool.Get(), pool
	}
	return c.w
}

func (c *workerCtx) Deadline() (time.Time, bool) {
	pd, ok := c.parent.Deadline()
	if dl := c.dl.Load(); dl != unarmed {
		if dl += epochNano; ok && pd.UnixNano() < dl {
			return pd, true
		}
		return time.Unix(0, dl), true
	}
	return pd, ok
}

func (c *workerCtx) Done() <-chan struct{} { return c.st.Load().done }

func (c *workerCtx) Err() error { return c.st.Load().err }

func (c *workerCtx) Value(key any) any { return c.parent.Value(key) }

// AfterFunc lets context.AfterFunc (and contexts derived from this one)
// register without a goroutine of their own. f runs once, when Done is
// next closed: at the attempt's deadline or the parent's end.
func (c *workerCtx) AfterFunc(f func()) func() bool {
	a := &afterFunc{fn: f}
	c.mu.Lock()
	if c.st.Load().err != nil {
		a.ran = true
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.funcs = append(c.funcs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.ran {
			return false
		}
		a.ran = true
		for i, x := range c.funcs {
			if x == a {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				break
			}
		}
		return true
	}
}

// closeLocked closes done with err and runs the registered funcs (under mu).
func (c *workerCtx) closeLocked(err error) {
	st := c.st.Load()
	c.st.Store(&workerDone{done: st.done, err: err}) // (Err is set when Done closes)
	close(st.done)
	for _, a := range c.funcs {
		if !a.ran {
			a.ran = true
			go a.fn()
		}
	}
	c.funcs = c.funcs[:0]
}

// arm starts an attempt, begun at now (mono), that must end within d.
func (c *workerCtx) arm(now int64, d time.Duration) { c.start(now, d, true) }

// armUntimed is arm without the timer: Done does not close at the
// deadline, for a transport that enforces Deadline() itself
// (transport.Limits.Deadline).
func (c *workerCtx) armUntimed(now int64, d time.Duration) { c.start(now, d, false) }

func (c *workerCtx) start(now int64, d time.Duration, timed bool) {
	c.timed = timed
	c.dl.Store(max(now+int64(d), unarmed+1))
	if timed {
		c.timer.Reset(d)
	}
}

// disarm ends the attempt; it reports whether its deadline had passed.
// Only a timed attempt expires (an untimed one leaves its deadline to the
// transport), so an untimed one is disarmed without locking.
func (c *workerCtx) disarm() (expired bool) {
	if !c.timed && !c.rushed.Load() {
		c.dl.Store(unarmed)
		return false
	}
	c.timed = false
	c.rushed.Store(false)
	c.timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dl.Store(unarmed)
	if st := c.st.Load(); st.err == context.DeadlineExceeded && !c.ended {
		c.st.Store(&workerDone{done: make(chan struct{})})
		return true
	}
	return false
}

// rush brings the armed attempt's deadline forward to dl (mono), timed
// from now on even if the transport enforces it: an SMP sent after it
// came back (see flights). Only a listed attempt is rushed, so the
// worker, which unlists it before disarm, is not arming it meanwhile.
func (c *workerCtx) rush(dl int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.dl.Load(); cur == unarmed || dl >= cur || c.st.Load().err != nil {
		return
	}
	c.dl.Store(dl)
	c.rushed.Store(true)
	if d := dl - mono(); d > 0 {
		c.timer.Reset(time.Duration(d))
	} else {
		c.closeLocked(context.DeadlineExceeded)
	}
}

func (c *workerCtx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dl := c.dl.Load(); dl != unarmed && c.st.Load().err == nil && mono() >= dl {
		c.closeLocked(context.DeadlineExceeded)
	}
}

func (c *workerCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if st := c.st.Load(); st.err == nil {
		c.closeLocked(c.parent.Err())
	} else {
		c.st.Store(&workerDone{done: st.done, err: c.parent.Err()})
	}
}
