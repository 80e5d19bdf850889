package discover

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Window limits the SMPs in flight and adapts the limit as TCP's
// congestion control does: it starts small, grows by one per answer
// (slow start) and then by one per window of answers while the round
// trips stay flat (within twice the smallest seen, plus flatSlack) and
// nothing is lost, stops growing when round trips rise (a queue is
// building somewhere), and halves on a loss (an SMP that timed out),
// at most once per window of SMPs. It never exceeds its Max, the hard
// upper bound (-o). A Window is safe for concurrent use.
type Window struct {
	max   int
	fixed bool
	sem   chan struct{}

	mu       sync.Mutex
	cwnd     float64
	ssthresh float64
	tokens   int // tokens in circulation (the current limit)
	debt     int // tokens to withdraw as they come back
	minRTT   time.Duration
	cut      int64 // when the window was last halved (mono)
	peak     int
	losses   int64
	size     atomic.Int32 // tokens - debt, for readers without mu
}

// flatSlack is added to twice the smallest round trip before a round
// trip counts as risen: scheduling noise on a loaded host must not stop
// the growth.
const flatSlack = 200 * time.Microsecond

// initialWindow is where an adaptive Window starts.
const initialWindow = 4

// NewWindow returns a Window of at most max SMPs in flight; fixed keeps
// it at max (no adaptation).
func NewWindow(max int, fixed bool) *Window {
	if max < 1 {
		max = 1
	}
	start := max
	if !fixed && start > initialWindow {
		start = initialWindow
	}
	w := &Window{max: max, fixed: fixed, sem: make(chan struct{}, max),
		cwnd: float64(start), ssthresh: float64(max), tokens: start, peak: start,
		cut: math.MinInt64}
	for i := 0; i < start; i++ {
		w.sem <- struct{}{}
	}
	w.size.Store(int32(start))
	return w
}

// limit is the current limit, read without locking.
func (w *Window) limit() int { return int(w.size.Load()) }

// Max is the hard upper bound.
func (w *Window) Max() int { return w.max }

// Size is the current limit.
func (w *Window) Size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tokens - w.debt
}

// Peak is the largest limit reached.
func (w *Window) Peak() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// Losses is the number of SMPs counted as lost.
func (w *Window) Losses() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.losses
}

// NewPhase forgets the smallest round trip: the SMPs that follow go to
// other places (a deeper level, other attributes).
func (w *Window) NewPhase() {
	w.mu.Lock()
	w.minRTT = 0
	w.mu.Unlock()
}

// acquire waits for room for one SMP.
func (w *Window) acquire(ctx context.Context) error {
	select {
	case <-w.sem:
		return nil
	default:
	}
	select {
	case <-w.sem:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the room back after an attempt sent at sent (mono):
// answered after rtt, or lost.
func (w *Window) release(sent int64, rtt time.Duration, lost bool) {
	w.mu.Lock()
	if !w.fixed {
		w.adapt(sent, rtt, lost)
	}
	give := true
	if w.debt > 0 {
		w.debt--
		w.tokens--
		give = false
	}
	w.size.Store(int32(w.tokens - w.debt))
	w.mu.Unlock()
	if give {
		w.sem <- struct{}{}
	}
}

// adapt updates the window after one attempt (under mu) and puts tokens
// in or takes them out of circulation to match it.
func (w *Window) adapt(sent int64, rtt time.Duration, lost bool) {
	switch {
	case lost:
		w.losses++
		if sent < w.cut {
			break // sent before the last cut: the same loss event
		}
		w.cut = mono()
		w.cwnd /= 2
		if w.cwnd < 1 {
			w.cwnd = 1
		}
		w.ssthresh = w.cwnd
	default:
		if w.minRTT == 0 || rtt < w.minRTT {
			w.minRTT = rtt
		}
		if rtt > 2*w.minRTT+flatSlack {
			break // a queue is building: hold
		}
		if w.cwnd < w.ssthresh {
			w.cwnd++
		} else {
			w.cwnd += 1 / w.cwnd
		}
		if w.cwnd > float64(w.max) {
			w.cwnd = float64(w.max)
		}
	}
	want := int(w.cwnd)
	cur := w.tokens - w.debt
	for ; cur < want; cur++ {
		if w.debt > 0 {
			w.debt--
		} else {
			w.tokens++
			w.sem <- struct{}{} // room: tokens never exceed max
		}
	}
	if cur > want {
		w.debt += cur - want
	}
	if n := w.tokens - w.debt; n > w.peak {
		w.peak = n
	}
	w.size.Store(int32(w.tokens - w.debt))
}
