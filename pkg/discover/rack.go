package discover

import (
	"sync"
	"sync/atomic"
)

// flights are the short attempts in flight of one kind of SMP, in about
// the order sent, for detecting a loss early, much as TCP's RACK does
// (RFC 8985): once an SMP sent after an attempt has come back, the
// attempt has passed the queues they shared, and it is due once the SMPs
// still in flight have been served (rushBefore); past that it is taken
// as lost and resent, instead of waiting out its short timeout, which
// was set for the queue as it stood when it went out, several round
// trips long at a large window. This matters most at the end of a phase,
// where the next level waits for the last SMPs of this one. Only the
// oldest few attempts are looked at, one answer at a time: a lost one
// soon becomes one of them.
type flights struct {
	mu         sync.Mutex
	head, tail *workerCtx
	n          atomic.Int64 // attempts listed (changed under mu)
}

// rackLook bounds the attempts one answer looks at.
const rackLook = 16

// push lists c's attempt, the SMP's attempt'th, sent at sent (mono).
func (f *flights) push(c *workerCtx, sent int64, attempt int) {
	f.mu.Lock()
	c.fsent, c.fshift, c.fnext, c.fprev = sent, attempt, nil, f.tail
	if f.tail != nil {
		f.tail.fnext = c
	} else {
		f.head = c
	}
	f.tail = c
	f.n.Add(1)
	f.mu.Unlock()
}

// end unlists c's attempt and, if it was answered, rushes the attempts
// sent before it (see rushBefore) with the estimate e of their kind.
func (f *flights) end(c *workerCtx, answered bool, e *rttEst, floor int64) {
	f.mu.Lock()
	f.unlink(c)
	if answered && f.head != nil && f.head.fsent < c.fsent {
		f.rushBefore(c.fsent, mono(), e.minRTT.Load(), e.svc.Load(), floor)
	}
	f.mu.Unlock()
}

func (f *flights) unlink(c *workerCtx) {
	if c.fprev != nil {
		c.fprev.fnext = c.fnext
	} else {
		f.head = c.fnext
	}
	if c.fnext != nil {
		c.fnext.fprev = c.fprev
	} else {
		f.tail = c.fprev
	}
	c.fprev, c.fnext = nil, nil
	f.n.Add(-1)
}

// rushBefore notes an answer, at now, to an SMP sent at sent (mono): an
// attempt sent before it and still in flight is due by now plus wait,
// doubled for each earlier attempt of its SMP (as the short waits back
// off), where wait is at least twice the least round trip plus the
// service of the SMPs still in flight, each taking svc (see rttEst), and
// at least floor (under mu).
func (f *flights) rushBefore(sent, now int64, minRTT, svc, floor int64) {
	wait := max(2*(minRTT+f.n.Load()*svc), floor)
	i := 0
	for c := f.head; c != nil && i < rackLook; c = c.fnext {
		i++
		if c.fsent >= sent {
			break // listed in about the order sent
		}
		if dl := now + wait<<c.fshift; dl < c.dl.Load() {
			c.rush(dl)
		}
	}
}
