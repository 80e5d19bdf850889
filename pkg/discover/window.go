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
// trips stay flat (within twice the smallest of the phase, plus
// flatSlack), stops growing when round trips rise (a queue is building
// somewhere), and shrinks on a loss (an SMP that timed out), at most
// once per window of SMPs.
//
// Past slackWindow it doubles once per round (a window of answers) in
// which at most one SMP in lostGrow was lost and the round trips took on
// average at most queueGrow times the smallest of all: there a queue at
// one switch's firmware costs no needless resends, since every short
// timeout allows for the SMPs in flight (rtoOf) and a lost SMP is resent
// once SMPs sent after it have come back (flights), and an irregular
// fabric, whose SMPs spread over many switches, gains from more of them
// in flight; but a queue that holds each SMP for several round trips
// only delays the fabric's other SMPs (the SM's) and the host.
//
// It shrinks as DCTCP does, in proportion to the share of SMPs lost: by
// half of lossShare, a running average of the fraction lost per window
// of answers that starts at 1 (the first loss halves the window). So
// losses that come with every window size (two parents probing one node
// at once, whose one-packet VL15 buffer drops one) cost a little of the
// window each, while a congested fabric that loses most SMPs still
// halves it and stops growing. It never exceeds its Max, the hard upper
// bound (-o). A Window is safe for concurrent use.
type Window struct {
	max   int
	fixed bool
	sem   chan struct{}

	mu       sync.Mutex
	cwnd     float64
	ssthresh float64
	tokens   int           // tokens in circulation (the current limit)
	debt     int           // tokens to withdraw as they come back
	minRTT   time.Duration // the smallest round trip of this phase
	baseRTT  time.Duration // the smallest round trip of all
	cut      int64         // when the window was last cut (mono)
	share    float64       // lossShare: running average of the fraction lost per round (window of answers)
	round    int           // SMPs ended in the current round (a window of them)
	lost     int           // of which lost
	sumRTT   time.Duration // the round trips of the others
	peak     int
	losses   int64
	size     atomic.Int32 // tokens - debt, for readers without mu
}

// flatSlack is added to twice the smallest round trip before a round
// trip counts as risen: scheduling noise on a loaded host must not stop
// the growth.
const flatSlack = 200 * time.Microsecond

// slackWindow is the window up to which flatSlack applies and the
// window grows while round trips stay flat; beyond it, it grows once per
// round while few SMPs are lost (lostGrow).
const slackWindow = 64

// lostGrow: past slackWindow a round in which more than one SMP in
// lostGrow was lost does not grow the window (structural losses, two
// parents probing one node at once, stay well below that share: 1-2 %
// on random irregular graphs).
const lostGrow = 16

// queueGrow: past slackWindow a round whose round trips took on average
// more than queueGrow times the smallest of all does not grow the window.
const queueGrow = 8

// initialWindow is where an adaptive Window starts.
const initialWindow = 4

// shareGain is the weight of one round's lost fraction in lossShare
// (DCTCP's g is 1/16 per round trip; a discovery has fewer rounds).
const shareGain = 1.0 / 8

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
		cwnd: float64(start), ssthresh: float64(max), tokens: start, peak: start, share: 1,
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

// inflight is about the number of SMPs in flight (at least 1: the
// caller's, acquired), read without locking.
func (w *Window) inflight() int { return max(1, w.limit()-len(w.sem)) }

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
	w.round++
	if lost {
		w.lost++
	}
	if !lost {
		if w.minRTT == 0 || rtt < w.minRTT {
			w.minRTT = rtt
		}
		if w.baseRTT == 0 || rtt < w.baseRTT {
			w.baseRTT = rtt
		}
		w.sumRTT += rtt
	}
	if w.round >= max(1, int(w.cwnd)) {
		w.share += shareGain * (float64(w.lost)/float64(w.round) - w.share)
		// Past slackWindow the window doubles once per round, unless
		// the round lost more than one SMP in lostGrow or its round
		// trips took on average more than queueGrow times the smallest.
		answered := w.round - w.lost
		if w.cwnd >= slackWindow && lostGrow*w.lost <= w.round &&
			w.sumRTT <= time.Duration(queueGrow*answered)*w.baseRTT {
			w.cwnd = min(2*w.cwnd, float64(w.max))
		}
		w.round, w.lost, w.sumRTT = 0, 0, 0
	}
	switch {
	case lost:
		w.losses++
		if sent < w.cut {
			break // sent before the last cut: the same loss event
		}
		w.cut = mono()
		w.cwnd *= 1 - w.share/2
		if w.cwnd < 1 {
			w.cwnd = 1
		}
		w.ssthresh = w.cwnd
	case w.cwnd >= slackWindow:
		// (grows at the end of a round, above)
	default:
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
