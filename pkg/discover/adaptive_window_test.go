package discover

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// busyWindow keeps a Window full, as a phase with SMPs enough does: every
// SMP that ends is replaced at once.
type busyWindow struct {
	t    *testing.T
	w    *Window
	held int
}

// fill takes all the room there is.
func (b *busyWindow) fill() {
	b.t.Helper()
	for b.held < b.w.Size() {
		if err := b.w.acquire(context.Background()); err != nil {
			b.t.Fatal(err)
		}
		b.held++
	}
}

// end ends one SMP (sent at sent) and fills the window again.
func (b *busyWindow) end(sent int64, rtt time.Duration, lost bool) {
	b.t.Helper()
	b.fill()
	b.w.release(sent, rtt, lost)
	b.held--
	b.fill()
}

// TestWindowAdapts: the window starts small, grows while round trips stay
// flat, never beyond its bound, holds when they rise,
// halves on the first loss (nothing is known yet of how often SMPs are
// lost), cuts once per loss event, and a fixed window stays at its bound.
func TestWindowAdapts(t *testing.T) {
	w := NewWindow(32, false)
	if got := w.Size(); got != initialWindow {
		t.Fatalf("starts at %d, want %d", got, initialWindow)
	}
	ctx := context.Background()
	b := &busyWindow{t: t, w: w}
	answer := func(rtt time.Duration) {
		t.Helper()
		b.end(mono(), rtt, false)
	}
	for i := 0; i < 27; i++ { // 4+1+...: slow start reaches 32 in 28 answers
		answer(100 * time.Microsecond)
	}
	if got := w.Size(); got != 31 {
		t.Fatalf("after 27 flat answers: %d, want 31", got)
	}
	for i := 0; i < 200; i++ {
		answer(100 * time.Microsecond)
	}
	if got := w.Size(); got != 32 {
		t.Fatalf("after 200 more flat answers: %d, want the bound 32", got)
	}
	// a loss halves it while the share lost is not known (it starts at 1);
	// losses of SMPs sent before that cut do not cut again
	w.share = 1
	before := mono() - int64(time.Second) // sent before the cut below
	b.end(before, 0, true)
	if got := w.Size(); got != 16 {
		t.Fatalf("after a loss: %d, want 16", got)
	}
	for i := 0; i < 5; i++ {
		b.end(before, 0, true)
	}
	if got := w.Size(); got != 16 {
		t.Errorf("after more losses of the same event: %d, want 16", got)
	}
	// rising round trips: no growth
	for i := 0; i < 100; i++ {
		answer(10 * time.Millisecond)
	}
	if got := w.Size(); got != 16 {
		t.Errorf("after risen round trips: %d, want 16", got)
	}
	// the room really is the size: 16 acquired, the 17th waits
	b.fill()
	if b.held != 16 {
		t.Fatalf("%d SMPs in flight, want 16", b.held)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.acquire(short); !errors.Is(err, context.Canceled) {
		t.Errorf("17th acquire: %v, want to wait (cancelled)", err)
	}
	f := NewWindow(8, true)
	for i := 0; i < 8; i++ {
		if err := f.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f.release(mono(), 0, true)
	if got := f.Size(); got != 8 {
		t.Errorf("fixed window after a loss: %d, want 8", got)
	}
}

// TestWindowLossShare: the window shrinks in proportion to the share of
// SMPs lost (DCTCP's rule): after many windows without a loss a loss
// takes a little off, rounds that lose most of their SMPs bring the cut
// back to a half, and an occasional loss among many answers does not
// keep the window from its bound.
func TestWindowLossShare(t *testing.T) {
	w := NewWindow(128, false)
	b := &busyWindow{t: t, w: w}
	step := func(lost bool, sent int64) {
		t.Helper()
		b.end(sent, 100*time.Microsecond, lost)
	}
	for i := 0; i < 5000; i++ {
		step(false, mono())
	}
	if got := w.Size(); got != 128 {
		t.Fatalf("after 5000 flat answers: %d, want the bound 128", got)
	}
	if w.share > 0.01 {
		t.Fatalf("share lost after 5000 answers without a loss: %.3f, want near 0", w.share)
	}
	step(true, mono())
	if got := w.Size(); got < 126 {
		t.Errorf("one loss after a long loss-free run: window %d, want at least 126 (a small cut)", got)
	}
	// one SMP lost in 100, every loss a new event: the window stays large
	for i := 0; i < 20000; i++ {
		step(i%100 == 99, mono())
	}
	if got := w.Size(); got < 64 {
		t.Errorf("1 %% of SMPs lost: window %d, want it to stay above 64", got)
	}
	// every other SMP lost: the cuts near a half each, down to a few
	for i := 0; i < 3000; i++ {
		step(i%2 == 0, mono())
	}
	if w.share < 0.3 {
		t.Errorf("half the SMPs lost: share %.2f, want it near 0.5", w.share)
	}
	if got := w.Size(); got > 8 {
		t.Errorf("half the SMPs lost: window %d, want it down to a few", got)
	}
}

// TestWindowPastSlack: past slackWindow the window doubles once per
// round (a window of answers), up to its bound, also where the round
// trips grow with the SMPs in flight (a queue at one switch's firmware:
// 2µs more per SMP here) until they take on average more than queueGrow
// times the smallest; a round that loses more than one SMP in lostGrow
// does not grow it, and the losses shrink it.
func TestWindowPastSlack(t *testing.T) {
	for _, tc := range []struct {
		queue bool
		want  int // 100µs + 2µs per SMP held passes 800µs past 350 held
	}{{false, 1024}, {true, 512}} {
		w := NewWindow(1024, false)
		b := &busyWindow{t: t, w: w}
		for i := 0; i < 20000; i++ {
			rtt := 100 * time.Microsecond
			if tc.queue {
				rtt += time.Duration(b.held) * 2 * time.Microsecond
			}
			size := w.Size()
			b.end(mono(), rtt, false)
			if size >= slackWindow && w.Size() > size && w.Size() != 2*size {
				t.Fatalf("queue %v: past %d grew from %d to %d, want it doubled", tc.queue, slackWindow, size, w.Size())
			}
		}
		if got := w.Size(); got != tc.want {
			t.Errorf("queue %v: %d, want %d", tc.queue, got, tc.want)
		}
	}
	// a round losing one SMP in 8 (spread out, as structural losses are)
	// shrinks the window and does not grow it
	w := NewWindow(1024, false)
	b := &busyWindow{t: t, w: w}
	for i := 0; i < 20000 && w.Size() < 256; i++ {
		b.end(mono(), 100*time.Microsecond, false)
	}
	if got := w.Size(); got != 256 {
		t.Fatalf("lossless: %d, want 256", got)
	}
	for i := 0; i < 4*256; i++ {
		b.end(mono()-1, 100*time.Microsecond, i%8 == 0)
		if w.Size() > 256 {
			t.Fatalf("a round losing 1 SMP in 8 grew the window to %d", w.Size())
		}
	}
	if got := w.Size(); got >= 256 {
		t.Errorf("after losing 1 SMP in 8 for 4 rounds: %d, want it shrunk below 256", got)
	}
}

// expired waits for the attempt armed on c to end at its deadline and
// checks that disarm reports it and leaves c open for the next one.
func expired(t *testing.T, c *workerCtx, what string) {
	t.Helper()
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("%s: %v", what, c.Err())
	}
	if !c.disarm() {
		t.Errorf("%s: disarm did not report the expiry", what)
	}
	if c.Err() != nil {
		t.Errorf("%s, after disarm: %v", what, c.Err())
	}
}

// TestWorkerCtx: an armed attempt ends at its deadline, disarming makes
// the context usable again, and the parent's cancellation ends it for good.
func TestWorkerCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newWorkerCtx(parent)
	defer c.release()
	if _, ok := c.Deadline(); ok {
		t.Error("idle worker context has a deadline")
	}
	c.arm(mono(), time.Millisecond)
	if _, ok := c.Deadline(); !ok {
		t.Error("armed worker context has no deadline")
	}
	expired(t, c, "an expired attempt")
	c.arm(mono(), time.Hour)
	ran := make(chan struct{})
	stop := context.AfterFunc(c, func() { close(ran) })
	defer stop()
	if c.disarm() {
		t.Error("an attempt that ended in time reported expired")
	}
	cancel()
	<-c.Done()
	<-ran
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("after the parent's cancel: %v", c.Err())
	}
	c.arm(mono(), time.Hour)
	if c.disarm(); !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("cancelled context came back: %v", c.Err())
	}
}

// TestRTO: a short attempt's wait is tied to what was measured: the
// round trip (at least 4·srtt, and MinRTO), the longest recent round
// trip, the SMPs in flight times the least round trip per SMP in flight,
// and the lateness of the host; the full timeout until a round trip is
// known.
func TestRTO(t *testing.T) {
	const timeout = time.Second
	q := &Querier{}
	if got := q.rtoOf(&q.est[0], timeout, 1); got != timeout {
		t.Errorf("before any round trip: %v, want the timeout", got)
	}
	for range 100 {
		q.sampleOf(&q.est[0], 100*time.Microsecond, 4)
	}
	if got := q.rtoOf(&q.est[0], timeout, 4); got != MinRTO {
		t.Errorf("100µs round trips: %v, want MinRTO %v", got, MinRTO)
	}
	// 100µs with 4 in flight: up to 25µs each behind a bottleneck; an
	// SMP sent with 100 in flight may wait behind them all
	if got, want := q.rtoOf(&q.est[0], timeout, 100), 2*25*100*time.Microsecond; got < want {
		t.Errorf("100 in flight, usually 4: %v, want at least %v", got, want)
	}
	q.sampleOf(&q.est[0], 3*time.Millisecond, 4) // one long round trip
	if got := q.rtoOf(&q.est[0], timeout, 4); got < 12*time.Millisecond {
		t.Errorf("after a 3 ms round trip: %v, want at least 4 times it", got)
	}
	for range 5000 { // the peak is forgotten
		q.sampleOf(&q.est[0], 100*time.Microsecond, 4)
	}
	if got := q.rtoOf(&q.est[0], timeout, 4); got != MinRTO {
		t.Errorf("after 5000 more 100µs round trips: %v, want MinRTO again", got)
	}
	q.noteLate(4 * time.Millisecond)
	if got := q.rtoOf(&q.est[0], timeout, 4); got < 8*time.Millisecond {
		t.Errorf("after an attempt that came back 4 ms late: %v, want at least 8 ms", got)
	}
	for range 100 {
		q.sampleOf(&q.est[0], time.Second, 4)
	}
	if got := q.rtoOf(&q.est[0], timeout, 4); got != timeout {
		t.Errorf("1 s round trips: %v, want at most the timeout", got)
	}
}

// lossy answers NodeInfo after 100µs except along one path, which never
// answers (or none, stall, or none at once, refuse); it records how long
// each attempt along the dead path or stalled was given.
type lossy struct {
	dead   byte // the first port of the path that never answers
	stall  bool // no path answers
	refuse bool // no path answers, and says so at once
	mu     sync.Mutex
	waits  []time.Duration
}

func (l *lossy) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if l.refuse {
		return transport.ErrTimeout
	}
	if l.stall || req[smp.InitPathOff+1] == l.dead {
		dl, _ := ctx.Deadline()
		l.mu.Lock()
		l.waits = append(l.waits, time.Until(dl))
		l.mu.Unlock()
		<-ctx.Done()
		return transport.ErrTimeout
	}
	time.Sleep(100 * time.Microsecond) // the round trip, on the synctest bubble's clock (lossy is used only there)
	copy(resp, req[:256])
	resp[3] |= smp.MethodResponseFlag
	return nil
}

func (l *lossy) Close() error { return nil }

// TestShortAttemptsBackOff: an SMP that is not answered is resent after
// a wait tied to the round trip, doubled each time until it would reach
// half the full timeout; then it gets the full timeout, Retries+1 times
// (virtual clock).
func TestShortAttemptsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &lossy{dead: 2}
		q := &Querier{Transport: tr, Timeout: 100 * time.Millisecond, Retries: 1}
		ctx := context.Background()
		var buf [smp.DataSize]byte
		one, _ := smp.DRPath{}.Extend(1)
		for range 10 { // learn the round trip: 100µs
			if err := q.Get(ctx, one, smp.AttrNodeInfo, 0, buf[:]); err != nil {
				t.Fatal(err)
			}
		}
		dead, _ := smp.DRPath{}.Extend(2)
		if err := q.Get(ctx, dead, smp.AttrNodeInfo, 0, buf[:]); !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("dead path: %v, want a timeout", err)
		}
		ms := time.Millisecond
		want := []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 100 * ms, 100 * ms}
		if !slices.Equal(tr.waits, want) {
			t.Errorf("waits %v, want %v", tr.waits, want)
		}
		if got := q.RetryCount(); got != int64(len(want)-1) {
			t.Errorf("%d retries, want %d", got, len(want)-1)
		}
	})
}

// TestLossOrStall: an SMP that times out while one sent after it came
// back was lost on the way and shrinks the window; one that times out
// while nothing came back (a stalled peer) does not, and the short waits
// that follow back off (virtual clock).
func TestLossOrStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &lossy{dead: 2}
		w := NewWindow(8, false)
		q := &Querier{Transport: tr, Timeout: 100 * time.Millisecond, Retries: -1, Window: w}
		ctx := context.Background()
		one, _ := smp.DRPath{}.Extend(1)
		dead, _ := smp.DRPath{}.Extend(2)
		get := func(p smp.DRPath) error {
			var buf [smp.DataSize]byte
			return q.Get(ctx, p, smp.AttrNodeInfo, 0, buf[:])
		}
		for range 10 {
			if err := get(one); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			get(dead) // (times out)
		}()
		synctest.Wait() // the dead SMP is on its way; others follow it
		for range 30 {
			if err := get(one); err != nil {
				t.Fatal(err)
			}
		}
		<-done
		if w.Losses() == 0 {
			t.Error("an SMP that timed out after later ones came back: no loss counted")
		}

		four := func() { // four SMPs in flight at once
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					get(one)
				}()
			}
			wg.Wait()
		}

		// a "no answer" said at once (the embedded simulator's drops)
		// waited for nothing: it backs nothing off
		tr.refuse = true
		q.Window = NewWindow(8, false)
		before := q.rtoOf(&q.est[0], time.Second, 1)
		four()
		if after := q.rtoOf(&q.est[0], time.Second, 1); after != before {
			t.Errorf("after answers refused at once the short wait is %v, want it as it was, %v", after, before)
		}
		tr.refuse = false

		tr.stall = true
		w = NewWindow(8, false)
		q.Window = w
		four()
		if got := w.Losses(); got != 0 {
			t.Errorf("a stalled peer: %d losses counted, want none", got)
		}
		if after := q.rtoOf(&q.est[0], time.Second, 1); after < 2*before {
			t.Errorf("after a stall the short wait is %v, want it backed off from %v", after, before)
		}
	})
}

// TestWorkerCtxErrWithDone: whoever sees Done closed sees Err set (a
// transport that returns ctx.Err() when Done closes must not return nil),
// and the Querier's reused MAD wrapper is the worker's until release.
func TestWorkerCtxErrWithDone(t *testing.T) {
	c := newWorkerCtx(context.Background())
	defer c.release()
	for i := 0; i < 2000; i++ {
		c.arm(mono(), time.Nanosecond)
		<-c.Done()
		if c.Err() == nil {
			t.Fatalf("attempt %d: Done closed with Err nil", i)
		}
		if !c.disarm() {
			t.Fatalf("attempt %d: disarm did not report the expiry", i)
		}
	}
	var pool model.MADPool
	w := c.mad(&pool)
	if c.mad(&pool) != w || pool.Outstanding() != 1 {
		t.Fatalf("the worker's wrapper changed (outstanding %d)", pool.Outstanding())
	}
	c.release()
	if pool.Outstanding() != 0 {
		t.Errorf("after release: %d wrappers outstanding", pool.Outstanding())
	}
}

// TestMonoPositive: mono is positive, and grows, on the real clock and
// inside a synctest bubble (whose clock starts in 2000): the Querier's
// stamps left zero ("no answer yet") must be earlier than any SMP.
func TestMonoPositive(t *testing.T) {
	if a, b := mono(), mono(); a <= 0 || b < a {
		t.Errorf("real clock: mono %d then %d", a, b)
	}
	synctest.Test(t, func(t *testing.T) {
		a := mono()
		time.Sleep(time.Millisecond) // (the bubble's clock: no real wait)
		if b := mono(); a <= 0 || b != a+int64(time.Millisecond) {
			t.Errorf("synctest bubble: mono %d then %d", a, b)
		}
	})
}
