package discover

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// TestWindowAdapts: the window starts small, grows while round trips stay
// flat, never beyond its bound, holds when they rise, halves once per
// loss event, and a fixed window stays at its bound.
func TestWindowAdapts(t *testing.T) {
	w := NewWindow(32, false)
	if got := w.Size(); got != initialWindow {
		t.Fatalf("starts at %d, want %d", got, initialWindow)
	}
	ctx := context.Background()
	answer := func(rtt time.Duration) {
		t.Helper()
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w.release(mono(), rtt, false)
	}
	for i := 0; i < 200; i++ {
		answer(100 * time.Microsecond)
	}
	if got := w.Size(); got != 32 {
		t.Fatalf("after 200 flat answers: %d, want the bound 32", got)
	}
	// a loss halves it; losses of SMPs sent before that cut do not cut again
	before := mono() - int64(time.Second) // sent before the cut below
	if err := w.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w.release(before, 0, true)
	if got := w.Size(); got != 16 {
		t.Fatalf("after a loss: %d, want 16", got)
	}
	for i := 0; i < 5; i++ {
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w.release(before, 0, true)
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
	for i := 0; i < 16; i++ {
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
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
