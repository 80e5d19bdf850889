package discover

import (
	"context"
	"sync"
	"time"
)

// workerCtx is the context a Parallel worker hands to its jobs: its
// parent's values and cancellation, plus a deadline that the Querier arms
// for one SMP attempt at a time with the worker's one reusable timer.
// Unlike a context.WithTimeout per attempt it allocates nothing while
// attempts end in time (a new Done channel only after one expired).
type workerCtx struct {
	parent context.Context
	mu     sync.Mutex
	armed  bool
	timed  bool // the armed attempt's timer runs
	dl     time.Time
	done   chan struct{} // closed when the armed deadline passes or the parent ends
	err    error
	ended  bool // the parent ended: done stays closed
	timer  *time.Timer
	stop   func() bool
	funcs  []*afterFunc
}

type afterFunc struct {
	fn  func()
	ran bool
}

func newWorkerCtx(parent context.Context) *workerCtx {
	c := &workerCtx{parent: parent, done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	c.stop = context.AfterFunc(parent, c.cancel)
	return c
}

// release stops the worker's timer and parent watch.
func (c *workerCtx) release() {
	c.timer.Stop()
	c.stop()
}

func (c *workerCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed {
		if pd, ok := c.parent.Deadline(); ok && pd.Before(c.dl) {
			return pd, true
		}
		return c.dl, true
	}
	return c.parent.Deadline()
}

func (c *workerCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *workerCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *workerCtx) Value(key any) any { return c.parent.Value(key) }

// AfterFunc lets context.AfterFunc (and contexts derived from this one)
// register without a goroutine of their own. f runs once, when Done is
// next closed: at the attempt's deadline or the parent's end.
func (c *workerCtx) AfterFunc(f func()) func() bool {
	a := &afterFunc{fn: f}
	c.mu.Lock()
	if c.err != nil {
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
	c.err = err
	close(c.done)
	for _, a := range c.funcs {
		if !a.ran {
			a.ran = true
			go a.fn()
		}
	}
	c.funcs = c.funcs[:0]
}

// arm starts an attempt, begun at now, that must end within d.
func (c *workerCtx) arm(now time.Time, d time.Duration) { c.start(now, d, true) }

// armUntimed is arm without the timer: Done does not close at the
// deadline, for a transport that enforces Deadline() itself
// (transport.Limits.Deadline).
func (c *workerCtx) armUntimed(now time.Time, d time.Duration) { c.start(now, d, false) }

func (c *workerCtx) start(now time.Time, d time.Duration, timed bool) {
	c.mu.Lock()
	c.armed, c.dl, c.timed = true, now.Add(d), timed
	c.mu.Unlock()
	if timed {
		c.timer.Reset(d)
	}
}

// disarm ends the attempt; it reports whether its deadline had passed.
func (c *workerCtx) disarm() (expired bool) {
	if c.timed { // (only the worker itself writes timed)
		c.timer.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.timed = false, false
	if c.err == context.DeadlineExceeded && !c.ended {
		c.err, c.done = nil, make(chan struct{})
		return true
	}
	return false
}

func (c *workerCtx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed && c.err == nil && !time.Now().Before(c.dl) {
		c.closeLocked(context.DeadlineExceeded)
	}
}

func (c *workerCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.err == nil {
		c.closeLocked(c.parent.Err())
	} else {
		c.err = c.parent.Err()
	}
}
