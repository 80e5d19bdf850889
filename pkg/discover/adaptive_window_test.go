package discover

import (
	"context"
	"errors"
	"testing"
	"time"
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
func (b *busyWindow) end(sent time.Time, rtt time.Duration, lost bool) {
	b.t.Helper()
	b.fill()
	b.w.release(sent, rtt, lost)
	b.held--
	b.fill()
}

// TestWindowAdapts: the window starts small, grows while round trips stay
// flat and it is in use, never beyond its bound, holds when they rise,
// halves on the first loss (nothing is known yet of how often SMPs are
// lost), cuts once per loss event, and a fixed window stays at its bound.
func TestWindowAdapts(t *testing.T) {
	w := NewWindow(32, false)
	if got := w.Size(); got != initialWindow {
		t.Fatalf("starts at %d, want %d", got, initialWindow)
	}
	ctx := context.Background()
	// one SMP at a time: flat round trips say nothing of a larger window
	for i := 0; i < 100; i++ {
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w.release(time.Now(), 100*time.Microsecond, false)
	}
	if got := w.Size(); got != initialWindow {
		t.Fatalf("after 100 answers with one SMP in flight: %d, want it held at %d", got, initialWindow)
	}
	b := &busyWindow{t: t, w: w}
	answer := func(rtt time.Duration) {
		t.Helper()
		b.end(time.Now(), rtt, false)
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
	before := time.Now().Add(-time.Second) // sent before the cut below
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
	f.release(time.Now(), 0, true)
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
	step := func(lost bool, sent time.Time) {
		t.Helper()
		b.end(sent, 100*time.Microsecond, lost)
	}
	for i := 0; i < 5000; i++ {
		step(false, time.Now())
	}
	if got := w.Size(); got != 128 {
		t.Fatalf("after 5000 flat answers: %d, want the bound 128", got)
	}
	if w.share > 0.01 {
		t.Fatalf("share lost after 5000 answers without a loss: %.3f, want near 0", w.share)
	}
	step(true, time.Now())
	if got := w.Size(); got < 126 {
		t.Errorf("one loss after a long loss-free run: window %d, want at least 126 (a small cut)", got)
	}
	// one SMP lost in 100, every loss a new event: the window stays large
	for i := 0; i < 20000; i++ {
		step(i%100 == 99, time.Now())
	}
	if got := w.Size(); got < 64 {
		t.Errorf("1 %% of SMPs lost: window %d, want it to stay above 64", got)
	}
	// every other SMP lost: the cuts near a half each, down to a few
	for i := 0; i < 3000; i++ {
		step(i%2 == 0, time.Now())
	}
	if w.share < 0.3 {
		t.Errorf("half the SMPs lost: share %.2f, want it near 0.5", w.share)
	}
	if got := w.Size(); got > 8 {
		t.Errorf("half the SMPs lost: window %d, want it down to a few", got)
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
	c.arm(time.Now(), time.Millisecond)
	if _, ok := c.Deadline(); !ok {
		t.Error("armed worker context has no deadline")
	}
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("expired attempt: %v", c.Err())
	}
	if !c.disarm() {
		t.Error("disarm did not report the expiry")
	}
	if c.Err() != nil {
		t.Errorf("after disarm: %v", c.Err())
	}
	c.arm(time.Now(), time.Hour)
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
	c.arm(time.Now(), time.Hour)
	if c.disarm(); !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("cancelled context came back: %v", c.Err())
	}
}
