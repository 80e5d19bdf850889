package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ErrDuplicateGUID is returned when a net file gives two nodes the same
// GUID and Options.AllowDuplicateGUIDs is not set.
var ErrDuplicateGUID = errors.New("sim: duplicate node GUID")

// Latency is the latency model: every SMP takes Hop per link crossed each
// way, and the target node's SMA serves one SMP at a time taking SMA each,
// holding at most VL15 SMPs (the one in service included; 0: unbounded)
// and dropping those that arrive when it is full. With VL15 = 1 an SMP
// that arrives while the SMA is busy is lost, as on a real switch whose
// VL15 buffer holds a single packet.
//
// A directed-route SMP is also handled by the firmware of every switch it
// crosses (to forward it and move the hop pointer), on the way out and
// again on the way back: Fwd at each, on the same processor that serves
// the switch's own SMPs, so the first switch from the requester handles
// nearly every SMP twice. SMPs waiting there to be forwarded queue in the
// firmware and are not dropped. LID-routed SMPs are forwarded by the
// switch hardware and cost Hop per link only.
//
// The model keeps time with package time's clock. Exchange waits for the
// modelled answer with a timer and, since timers wake about a
// millisecond late, spins (yielding the processor) through the last
// 2 ms, so that microsecond round trips are kept in real time. With
// TimersOnly it waits with timers alone: for a virtual clock (inside a
// testing/synctest bubble time advances only while every goroutine is
// blocked, so a spin would never end, and a timer fires exactly on time).
type Latency struct {
	Hop        time.Duration
	SMA        time.Duration
	Fwd        time.Duration
	VL15       int
	TimersOnly bool
}

// Stats counts what the fault injection did.
type Stats struct {
	Drops     int64 // SMPs dropped by Error, Drop or Kill
	BusyDrops int64 // SMPs dropped because the target SMA's VL15 buffer was full
	Lies      int64 // NodeInfo answers altered by Inconsistent
}

// Fields an Inconsistent node can lie about (see SetInconsistent).
const (
	LieNone     = 0
	LieNumPorts = 1 // NumPorts one higher (lower at 254)
	LieType     = 2 // a switch answers as a CA, others as a switch
	LiePortGUID = 3 // PortGUID with bit 47 flipped
	LieGUID     = 4 // NodeGUID with bit 40 flipped
)

// nodeFault is the per-node fault state, allocated only for nodes that
// have one.
type nodeFault struct {
	dead    bool
	lie     uint8
	every   uint32
	sma     time.Duration
	hasSMA  bool
	answers atomic.Uint32
}

// latency is the installed latency model. Every SMP books its service
// at the node that serves it: a slot of the node's (single) server and
// room in its VL15 buffer for the whole stay, from arrival to the end of
// its service. Bookings are made under mu and never moved afterwards, so
// an SMP whose goroutine reaches the model late (after SMPs stamped later
// than it) is judged by the time it arrived, not by the order it was
// booked in: it takes the earliest idle slot of the server after its
// arrival, and is dropped only when the buffer would really hold more
// than VL15 SMPs at some moment of its stay.
type latency struct {
	Latency
	epoch time.Time

	mu    sync.Mutex
	clock func() int64 // ns since epoch (replaced by tests)
	books [][]booking  // per node, sorted by start; guarded by mu
	// Timestamps of the Exchanges in flight (stamped, not yet done), in
	// stamping order, from sequence number seq0 on; done ones are -1.
	// The oldest one is the horizon before which no SMP can still arrive
	// anywhere, so bookings that ended before it are forgotten.
	fly  []int64
	seq0 uint64
	last int64 // the latest timestamp given
}

// booking is one SMP's stay at a node: it arrives at arr, is served from
// start to done, and holds a VL15 buffer slot from arr to done.
type booking struct {
	arr, start, done int64
	transit          bool // forwarded, not served: holds no VL15 slot
}

// latTicket carries one Exchange through the latency model.
type latTicket struct {
	lat     *latency
	now     int64 // ns since epoch when the request was sent
	seq     uint64
	stamped bool // now came from stamp (and done must be called)
	hops    int
	dr      bool                   // via holds a directed route's nodes
	via     [smp.MaxHops + 1]int32 // DR: the nodes crossed (via[1..hops-1]), when Fwd > 0
	until   int64                  // when the answer is back at the requester
	drop    bool
}

func newLatency(l *Latency, nodes int) *latency {
	lat := &latency{Latency: *l, epoch: time.Now(), books: make([][]booking, nodes)}
	lat.clock = func() int64 { return int64(time.Since(lat.epoch)) }
	return lat
}

// stamp gives t its send time and enters it among the Exchanges in flight.
func (l *latency) stamp(t *latTicket) {
	l.mu.Lock()
	t.lat, t.now, t.stamped = l, l.clock(), true
	if t.now < l.last {
		t.now = l.last // the clock is monotonic; keep the order exact
	}
	l.last = t.now
	t.seq = l.seq0 + uint64(len(l.fly))
	l.fly = append(l.fly, t.now)
	l.mu.Unlock()
}

// done takes a stamped t out of the Exchanges in flight.
func (l *latency) done(t *latTicket) {
	if !t.stamped {
		return
	}
	l.mu.Lock()
	l.fly[t.seq-l.seq0] = -1
	i := 0
	for i < len(l.fly) && l.fly[i] < 0 {
		i++
	}
	l.fly, l.seq0 = l.fly[i:], l.seq0+uint64(i)
	if len(l.fly) == 0 {
		l.fly = l.fly[:0:0] // let the backing array go
	}
	l.mu.Unlock()
}

// horizon is the earliest time an SMP not yet booked can arrive (under mu).
func (l *latency) horizon() int64 {
	if len(l.fly) > 0 {
		return l.fly[0]
	}
	return l.last
}

// book takes an SMP arriving at arr into node n's SMA for a service of
// svc (under mu). It returns the end of the service, or ok=false when
// the VL15 buffer would overflow during the SMP's stay (the SMP is lost).
func (l *latency) book(n int32, arr, svc int64, transit bool) (end int64, ok bool) {
	if svc <= 0 {
		return arr, true
	}
	bs := l.books[n]
	// forget what ended before anything still to come can arrive
	h := l.horizon()
	k := 0
	for k < len(bs) && bs[k].done <= h {
		k++
	}
	if k > 0 {
		bs = append(bs[:0], bs[k:]...)
	}
	// the earliest idle slot of the server at or after arr
	start, at := arr, 0
	for at < len(bs) {
		b := &bs[at]
		if b.done <= start {
			at++
			continue
		}
		if b.start >= start+svc {
			break
		}
		start = b.done
		at++
	}
	end = start + svc
	if !transit && l.VL15 > 0 && l.full(bs, arr, end) {
		l.books[n] = bs
		return 0, false
	}
	bs = append(bs, booking{})
	copy(bs[at+1:], bs[at:])
	bs[at] = booking{arr: arr, start: start, done: end, transit: transit}
	l.books[n] = bs
	return end, true
}

// full reports whether the buffer already holds VL15 SMPs at some moment
// of [from, to). The count only rises at an arrival, so it is enough to
// look at from and at the arrivals inside the interval.
func (l *latency) full(bs []booking, from, to int64) bool {
	at := func(x int64) int {
		c := 0
		for i := range bs {
			if !bs[i].transit && bs[i].arr <= x && x < bs[i].done {
				c++
			}
		}
		return c
	}
	if at(from) >= l.VL15 {
		return true
	}
	for i := range bs {
		if a := bs[i].arr; !bs[i].transit && a > from && a < to && at(a) >= l.VL15 {
			return true
		}
	}
	return false
}

type event struct {
	at  uint64 // fires once more than this many SMPs were counted
	seq int
	fn  func() error
}

// scheduler runs commands after a number of SMPs or after a time.
type scheduler struct {
	on     atomic.Bool
	count  atomic.Uint64
	next   atomic.Uint64
	mu     sync.Mutex
	seq    int
	events []event
	timers []*time.Timer
	errs   []error
}

// faultState is the Fabric's fault-injection state beyond the per-port
// Error rates.
type faultState struct {
	nodes   map[int32]*nodeFault // guarded by Fabric.mu; nil when empty
	dropAll uint8                // guarded by Fabric.mu
	lat     atomic.Pointer[latency]
	sched   scheduler
	drops   atomic.Int64
	busy    atomic.Int64
	lies    atomic.Int64
}

// Stats returns the fault-injection counters.
func (f *Fabric) Stats() Stats {
	return Stats{Drops: f.fs.drops.Load(), BusyDrops: f.fs.busy.Load(), Lies: f.fs.lies.Load()}
}

func (f *Fabric) nodeFault(n int32) *nodeFault {
	if f.fs.nodes == nil {
		f.fs.nodes = make(map[int32]*nodeFault)
	}
	nf := f.fs.nodes[n]
	if nf == nil {
		nf = &nodeFault{}
		f.fs.nodes[n] = nf
	}
	return nf
}

// Kill makes node id's SMA stop answering (console Kill "id"): SMPs for
// it are lost, SMPs passing through it (a switch) still go on. Unlike
// Error 100 the rest of the fabric stays reachable through it.
func (f *Fabric) Kill(id string) error { return f.setDead(id, true) }

// Revive undoes Kill (console Revive "id").
func (f *Fabric) Revive(id string) error { return f.setDead(id, false) }

func (f *Fabric) setDead(id string, dead bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, -1, 0)
	if err != nil {
		return err
	}
	f.nodeFault(n).dead = dead
	return nil
}

// SetDropRate drops rate percent of all SMPs, whatever their path,
// once per SMP (console Drop <rate>); 0 clears. Unlike Error, which
// applies at every port a packet enters, this is a fabric-wide loss rate
// per SMP.
func (f *Fabric) SetDropRate(rate int) error {
	if rate < 0 || rate > 100 {
		return fmt.Errorf("%w: drop rate must be in [0..100] range (%d)", ErrBadCommand, rate)
	}
	f.mu.Lock()
	f.fs.dropAll = uint8(rate)
	f.mu.Unlock()
	return nil
}

// SetInconsistent makes every every-th NodeInfo answer of node id lie
// about one field (LieNumPorts, LieType, LiePortGUID, LieGUID; LieNone
// clears), as console Inconsistent "id" <field> [every] does. every 1
// lies always, 2 on every other answer (the 2nd, 4th, ...). Answers are
// counted per node from this call on.
func (f *Fabric) SetInconsistent(id string, field, every int) error {
	if field < LieNone || field > LieGUID || every < 1 {
		return fmt.Errorf("%w: bad Inconsistent field %d or period %d", ErrBadCommand, field, every)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, -1, 0)
	if err != nil {
		return err
	}
	nf := f.nodeFault(n)
	nf.lie, nf.every = uint8(field), uint32(every)
	nf.answers.Store(0)
	return nil
}

// SetLatency installs the latency model (nil turns it off, the default).
// With it on, Exchange blocks for the modelled time, and an SMP that gets
// no answer (dropped, no route, dead node, VL15 overflow) blocks until
// the context's deadline, as a real transport times out; a context
// without a deadline then gets the timeout at once.
func (f *Fabric) SetLatency(l *Latency) error {
	if l == nil {
		f.fs.lat.Store(nil)
		return nil
	}
	if l.Hop < 0 || l.SMA < 0 || l.Fwd < 0 || l.VL15 < 0 {
		return fmt.Errorf("%w: negative latency", ErrBadCommand)
	}
	f.fs.lat.Store(newLatency(l, len(f.nodes)))
	return nil
}

// Latency returns the installed latency model, or nil.
func (f *Fabric) Latency() *Latency {
	if l := f.fs.lat.Load(); l != nil {
		c := l.Latency
		return &c
	}
	return nil
}

// SetServiceTime gives node id its own SMA service time under the latency
// model (console Latency "id" sma=D); a negative d restores the model's.
func (f *Fabric) SetServiceTime(id string, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, -1, 0)
	if err != nil {
		return err
	}
	nf := f.nodeFault(n)
	nf.sma, nf.hasSMA = d, d >= 0
	return nil
}

// AfterSMPs runs fn once n more SMPs have been handled, before the next
// one (counting from this call; Exchanges by all endpoints count, each
// attempt once). With one SMP outstanding at a time the point is exact,
// so a test can flap a link at a chosen step of a discovery. Errors of
// fn are kept for ScheduleErrors.
func (f *Fabric) AfterSMPs(n uint64, fn func() error) {
	s := &f.fs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.count.Load() + n
	s.seq++
	s.events = append(s.events, event{at: at, seq: s.seq, fn: fn})
	sort.Slice(s.events, func(i, j int) bool {
		if s.events[i].at != s.events[j].at {
			return s.events[i].at < s.events[j].at
		}
		return s.events[i].seq < s.events[j].seq
	})
	s.next.Store(s.events[0].at)
	s.on.Store(true)
}

// AfterTime runs fn after d (a timer); errors are kept for
// ScheduleErrors. StopSchedule cancels the timers not yet fired.
func (f *Fabric) AfterTime(d time.Duration, fn func() error) {
	s := &f.fs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timers = append(s.timers, time.AfterFunc(d, func() { s.record(fn()) }))
}

// StopSchedule cancels every pending AfterSMPs and AfterTime event.
func (f *Fabric) StopSchedule() {
	s := &f.fs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers, s.events = nil, nil
	s.on.Store(false)
}

// ScheduleErrors returns the errors of scheduled commands that failed.
func (f *Fabric) ScheduleErrors() []error {
	s := &f.fs.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func (s *scheduler) record(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// tick counts one SMP and runs the events that are due.
func (s *scheduler) tick() {
	n := s.count.Add(1)
	if n <= s.next.Load() {
		return
	}
	s.mu.Lock()
	var due []event
	for len(s.events) > 0 && s.events[0].at < n {
		due = append(due, s.events[0])
		s.events = s.events[1:]
	}
	if len(s.events) > 0 {
		s.next.Store(s.events[0].at)
	} else {
		s.next.Store(^uint64(0))
		s.on.Store(false)
	}
	s.mu.Unlock()
	for _, e := range due {
		s.record(e.fn())
	}
}

// runFault runs the console commands of package sim's own.
func (f *Fabric) runFault(c netfile.Command) (bool, error) {
	if err := c.CheckArgs(); err != nil {
		return true, fmt.Errorf("%w: %q", ErrBadCommand, c.String())
	}
	switch c.Verb {
	case "Drop":
		r, _ := strconv.Atoi(c.Args[0])
		return true, f.SetDropRate(r)
	case "Kill":
		return true, f.Kill(c.Node)
	case "Revive":
		return true, f.Revive(c.Node)
	case "Inconsistent":
		every := 1
		if len(c.Args) > 1 {
			every, _ = strconv.Atoi(c.Args[1])
		}
		return true, f.SetInconsistent(c.Node, netfile.LieField(c.Args[0]), every)
	case "Latency":
		l, _ := c.Latency()
		if c.Node != "" {
			return true, f.SetServiceTime(c.Node, l.SMA)
		}
		cur := Latency{VL15: 1}
		if old := f.Latency(); old != nil {
			cur = *old
		}
		if l.HasHop {
			cur.Hop = l.Hop
		}
		if l.HasSMA {
			cur.SMA = l.SMA
		}
		if l.HasFwd {
			cur.Fwd = l.Fwd
		}
		if l.HasVL15 {
			cur.VL15 = l.VL15
		}
		if cur == (Latency{VL15: cur.VL15}) && l.HasHop && l.HasSMA {
			return true, f.SetLatency(nil) // hop=0 sma=0: off
		}
		return true, f.SetLatency(&cur)
	case "After":
		n, _ := strconv.ParseUint(c.Args[0], 10, 63)
		then := *c.Then
		f.AfterSMPs(n, func() error { return f.run(then) })
		return true, nil
	case "At":
		d, _ := time.ParseDuration(c.Args[0])
		then := *c.Then
		f.AfterTime(d, func() error { return f.run(then) })
		return true, nil
	}
	return false, nil
}

// faultDrop applies the node faults and the fabric-wide drop rate to an
// SMP that reached node n (under the read lock). It reports whether the
// SMP is lost.
func (f *Fabric) faultDrop(n int32) bool {
	if f.fs.nodes != nil {
		if nf := f.fs.nodes[n]; nf != nil && nf.dead {
			f.fs.drops.Add(1)
			return true
		}
	}
	if f.fs.dropAll != 0 && f.drop(f.fs.dropAll) {
		f.fs.drops.Add(1)
		return true
	}
	return false
}

// lie alters a NodeInfo answer of node n when it is due to lie.
func (f *Fabric) lie(n int32, b []byte) {
	nf := f.fs.nodes[n]
	if nf == nil || nf.lie == LieNone {
		return
	}
	if nf.answers.Add(1)%nf.every != 0 {
		return
	}
	f.fs.lies.Add(1)
	switch nf.lie {
	case LieNumPorts:
		if b[3] < 254 {
			b[3]++
		} else {
			b[3]--
		}
	case LieType:
		if b[2] == 2 {
			b[2] = 1
		} else {
			b[2] = 2
		}
	case LiePortGUID:
		binary.BigEndian.PutUint64(b[20:], binary.BigEndian.Uint64(b[20:])^1<<47)
	case LieGUID:
		binary.BigEndian.PutUint64(b[12:], binary.BigEndian.Uint64(b[12:])^1<<40)
	}
}

// serve takes an SMP into node n's SMA under the latency model (under the
// read lock): it sets the time the answer is back, or drop when the VL15
// buffer is full.
func (f *Fabric) serve(t *latTicket, n int32) {
	l := t.lat
	if int(n) >= len(l.books) {
		return
	}
	sma := int64(l.SMA)
	if f.fs.nodes != nil {
		if nf := f.fs.nodes[n]; nf != nil && nf.hasSMA {
			sma = int64(nf.sma)
		}
	}
	hop := int64(l.Hop)
	fwd := int64(l.Fwd)
	l.mu.Lock()
	defer l.mu.Unlock()
	if fwd == 0 || t.hops < 2 || !t.dr {
		way := int64(t.hops) * hop
		done, ok := l.book(n, t.now+way, sma, false)
		if !ok {
			t.drop = true
			f.fs.busy.Add(1)
			return
		}
		t.until = done + way
		return
	}
	// Directed route: out through the switches crossed, served, and back.
	at := t.now
	for i := 1; i < t.hops; i++ {
		at, _ = l.book(t.via[i], at+hop, fwd, true)
	}
	done, ok := l.book(n, at+hop, sma, false)
	if !ok {
		t.drop = true
		f.fs.busy.Add(1)
		return
	}
	at = done
	for i := t.hops - 1; i >= 1; i-- {
		at, _ = l.book(t.via[i], at+hop, fwd, true)
	}
	t.until = at + hop
}

// await blocks an Exchange under the latency model until its answer is
// back, or until the context ends when there is no answer.
func (t *latTicket) await(ctx context.Context, answered bool) error {
	if !answered || t.drop {
		if _, ok := ctx.Deadline(); !ok {
			return errNoAnswer
		}
		<-ctx.Done()
		return ctxErr(ctx)
	}
	until := t.lat.epoch.Add(time.Duration(t.until))
	if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
		if err := sleepUntil(ctx, dl, t.lat.TimersOnly); err != nil {
			return err
		}
		return errNoAnswer
	}
	return sleepUntil(ctx, until, t.lat.TimersOnly)
}

func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errNoAnswer
	}
	return &transport.OpError{Op: "recv", Source: "sim", Err: ctx.Err()}
}

// sleepUntil waits until t with microsecond precision: timers (which
// wake about a millisecond late on Linux) for the bulk, then yielding
// until t; with timersOnly, a timer for the whole wait. It returns early,
// with the context's error, when ctx ends.
func sleepUntil(ctx context.Context, t time.Time, timersOnly bool) error {
	coarse := 2 * time.Millisecond
	if timersOnly {
		coarse = 0
	}
	for {
		rem := time.Until(t)
		if rem <= 0 {
			return nil
		}
		if rem > coarse {
			tm := time.NewTimer(rem - coarse)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return ctxErr(ctx)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctxErr(ctx)
		default:
		}
		runtime.Gosched()
	}
}
