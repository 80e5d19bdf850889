package discover

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// TestFlights: an answer rushes the attempts listed before it (sent
// earlier), not those after it, each to now plus the wait doubled per
// earlier attempt of its SMP, and never later than it was due; an
// attempt that ends unanswered (lost) rushes nothing; removal keeps the
// list and its count whole.
func TestFlights(t *testing.T) {
	var f flights
	var e rttEst // an estimate that would rush at once: 1µs round trips
	e.minRTT.Store(int64(time.Microsecond))
	e.svc.Store(int64(time.Microsecond))
	ctxs := make([]*workerCtx, 4)
	for i := range ctxs {
		ctxs[i] = newWorkerCtx(context.Background())
		defer ctxs[i].release()
	}
	a, b, c, d := ctxs[0], ctxs[1], ctxs[2], ctxs[3]
	now := mono()
	for i, x := range ctxs {
		x.armUntimed(now, time.Hour)
		f.push(x, now+int64(i)*10, i%2) // b and d are their SMPs' second attempts
	}
	f.end(d, false, &e, 0) // the tail, sent last, lost
	if f.n.Load() != 3 || f.tail != c || c.fnext != nil {
		t.Fatalf("after removing the tail: %d listed, tail %p (want %p)", f.n.Load(), f.tail, c)
	}
	for i, x := range ctxs[:3] {
		if got, want := x.dl.Load(), now+int64(time.Hour); got != want {
			t.Errorf("attempt %d after a later attempt ended unanswered: due %d, want %d (a loss shows nothing about the attempts before it)", i, got-now, want-now)
		}
	}
	const wait = int64(time.Millisecond)
	// answered at now, sent after a and b, before c: with 3 listed,
	// minRTT 100µs and svc 50µs the wait is 2·(100+3·50)µs = 500µs, under
	// the floor of 1 ms
	f.rushBefore(now+15, now, int64(100*time.Microsecond), int64(50*time.Microsecond), wait)
	if got, want := a.dl.Load(), now+wait; got != want {
		t.Errorf("a (sent before the answer): due %d, want %d", got-now, want-now)
	}
	if got, want := b.dl.Load(), now+2*wait; got != want {
		t.Errorf("b (a second attempt): due %d, want %d", got-now, want-now)
	}
	if got, want := c.dl.Load(), now+int64(time.Hour); got != want {
		t.Errorf("c (sent after the answer): due %d, want %d (not rushed)", got-now, want-now)
	}
	// a later answer that would make a due later leaves it as it was
	f.rushBefore(now+25, now+wait, 0, 0, wait)
	if got, want := a.dl.Load(), now+wait; got != want {
		t.Errorf("a rushed again to a later time: due %d, want %d", got-now, want-now)
	}
	if got, want := c.dl.Load(), now+2*wait; got != want {
		t.Errorf("c after an answer sent after it: due %d, want %d", got-now, want-now)
	}
	f.end(b, false, &e, 0) // the middle
	f.end(a, false, &e, 0) // the head
	if f.n.Load() != 1 || f.head != c || f.tail != c || c.fprev != nil {
		t.Fatalf("after removing the middle and the head: %d listed, head %p tail %p (want %p)", f.n.Load(), f.head, f.tail, c)
	}
	f.end(c, false, &e, 0)
	for _, x := range ctxs {
		x.disarm()
	}
	// An answered attempt's end rushes the attempts sent before it, to
	// now plus the wait (here the floor: 2·(1+2·1)µs is less), and not
	// the later ones.
	now = mono()
	for i, x := range ctxs[:3] {
		x.armUntimed(now, time.Hour)
		f.push(x, now+int64(i)*10, 0)
	}
	before := mono()
	f.end(b, true, &e, wait)
	after := mono()
	if got := a.dl.Load(); got < before+wait || got > after+wait {
		t.Errorf("a (sent before the answer): due %v after the answer, want %v", time.Duration(got-before), time.Duration(wait))
	}
	if got, want := c.dl.Load(), now+int64(time.Hour); got != want {
		t.Errorf("c (sent after the answer): due %d, want %d (not rushed)", got-now, want-now)
	}
	f.end(a, false, &e, wait)
	f.end(c, false, &e, wait)
	if f.n.Load() != 0 || f.head != nil || f.tail != nil {
		t.Fatalf("after removing all: %d listed", f.n.Load())
	}
	for _, x := range ctxs {
		x.disarm()
	}
}

// TestRush: a rushed attempt ends at its new deadline even when the
// transport enforces deadlines itself (no timer was armed), disarm
// reports it expired and gives the next attempt an open Done; an
// attempt due already ends at once; an unarmed one is not rushed.
func TestRush(t *testing.T) {
	c := newWorkerCtx(context.Background())
	defer c.release()
	c.armUntimed(mono(), time.Hour)
	c.rush(mono() + int64(time.Millisecond))
	expired(t, c, "a rushed attempt")
	c.armUntimed(mono(), time.Hour)
	if c.disarm() {
		t.Error("an attempt that was not rushed reported expired")
	}
	c.arm(mono(), time.Hour)
	c.rush(mono() - 1)
	select {
	case <-c.Done():
	default:
		t.Error("an attempt rushed to a past deadline is still open")
	}
	if !c.disarm() {
		t.Error("disarm did not report the expiry")
	}
	c.rush(mono() - 1) // unarmed
	if c.Err() != nil {
		t.Errorf("an unarmed worker was rushed: %v", c.Err())
	}
}

// dropFirst answers every SMP after rtt, except the first attempt of
// the one along a path whose first port is dead, which it drops (the
// way a busy SMA's one-packet VL15 buffer does); it records when each
// attempt along that path was sent. lim is what it states of itself.
type dropFirst struct {
	dead byte
	rtt  time.Duration
	lim  transport.Limits
	mu   sync.Mutex
	sent []time.Time
}

func (d *dropFirst) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if req[smp.InitPathOff+1] == d.dead {
		d.mu.Lock()
		d.sent = append(d.sent, time.Now())
		first := len(d.sent) == 1
		d.mu.Unlock()
		if first {
			<-ctx.Done()
			return transport.ErrTimeout
		}
	}
	t := time.NewTimer(d.rtt) // the round trip, on the synctest bubble's clock
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return transport.ErrTimeout
	}
	copy(resp, req[:smp.MADSize])
	resp[3] |= smp.MethodResponseFlag
	return nil
}

func (d *dropFirst) Close() error { return nil }

func (d *dropFirst) Limits() transport.Limits { return d.lim }

// TestLostSMPRushed: an SMP dropped while SMPs sent after it come back
// is resent once those answers show it overdue, well before its short
// timeout (at least MinRTO, ten round trips here); through a peer that
// queues (ibsim), which drops nothing and gets only full attempts, or a
// transport that answers at once, it waits its timeout as before
// (virtual clock).
func TestLostSMPRushed(t *testing.T) {
	for _, lim := range []transport.Limits{{}, {Queues: true}, {Immediate: true}} {
		synctest.Test(t, func(t *testing.T) {
			const rtt = 100 * time.Microsecond
			tr := &dropFirst{dead: 2, rtt: rtt, lim: lim}
			rushed := lim == (transport.Limits{})
			q := &Querier{Transport: tr, Timeout: time.Second, Retries: 1} // (through a peer that queues, every attempt is a full one)
			ctx := context.Background()
			path := func(port byte) smp.DRPath {
				p, _ := smp.DRPath{}.Extend(port)
				return p
			}
			get := func(ctx context.Context, port byte) error {
				var buf [smp.DataSize]byte
				return q.Get(ctx, path(port), smp.AttrNodeInfo, 0, buf[:])
			}
			// learn the round trip, then send the dead path's SMP and,
			// 10µs later, four more
			if err := Parallel(ctx, 1, 10, func(ctx context.Context, i int) error { return get(ctx, 1) }); err != nil {
				t.Fatal(err)
			}
			err := Parallel(ctx, 5, 5, func(ctx context.Context, i int) error {
				if i == 0 {
					return get(ctx, 2)
				}
				time.Sleep(10 * time.Microsecond)
				return get(ctx, 1)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.sent) != 2 {
				t.Fatalf("%+v: the dropped SMP was sent %d times, want 2", lim, len(tr.sent))
			}
			gap := tr.sent[1].Sub(tr.sent[0])
			if rushed && gap >= MinRTO {
				t.Errorf("resent after %v, want it rushed: sooner than the short timeout (at least MinRTO %v)", gap, MinRTO)
			}
			if !rushed && gap < MinRTO {
				t.Errorf("%+v: resent after %v, want the short timeout (at least MinRTO %v)", lim, gap, MinRTO)
			}
		})
	}
}

// deadlines answers every SMP after rtt and records how long each was
// given (its deadline, as it was sent).
type deadlines struct {
	rtt   time.Duration
	mu    sync.Mutex
	waits []time.Duration
}

func (d *deadlines) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		d.mu.Lock()
		d.waits = append(d.waits, time.Until(dl))
		d.mu.Unlock()
	}
	time.Sleep(d.rtt) // the round trip, on the synctest bubble's clock
	copy(resp, req[:smp.MADSize])
	resp[3] |= smp.MethodResponseFlag
	return nil
}

func (d *deadlines) Close() error { return nil }

// TestFixedWindowQueue: without a Window (a fixed window, whose workers
// bound the SMPs in flight) a short attempt still allows for the SMPs in
// flight ahead of it, as the adaptive window's do: 32 sent at once
// behind a peer that served one at a time in 100µs (learnt one by one)
// get up to 32 times that, not MinRTO alone (virtual clock).
func TestFixedWindowQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &deadlines{rtt: 100 * time.Microsecond}
		q := &Querier{Transport: tr, Timeout: time.Second}
		one, _ := smp.DRPath{}.Extend(1)
		get := func(ctx context.Context, i int) error {
			var buf [smp.DataSize]byte
			return q.Get(ctx, one, smp.AttrNodeInfo, 0, buf[:])
		}
		if err := Parallel(context.Background(), 1, 10, get); err != nil {
			t.Fatal(err)
		}
		tr.waits = nil
		if err := Parallel(context.Background(), 32, 32, get); err != nil {
			t.Fatal(err)
		}
		if got, want := slices.Max(tr.waits), 2*16*tr.rtt; got < want {
			t.Errorf("32 SMPs sent at once: the longest short wait %v, want at least %v (twice 16 SMPs ahead at 100µs)", got, want)
		}
	})
}
