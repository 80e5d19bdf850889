package model

import (
	"errors"
	"fmt"
	"sync"
)

// Errors of AVTracker.
var (
	// ErrAVUnknown: the AV is not (or no longer) in the tracker.
	ErrAVUnknown = errors.New("AV not in tracker")
	// ErrAVRefUnderflow: the count would drop below the references held,
	// counting the current AV's own reference, which only SetCurrent or
	// ClearCurrent release.
	ErrAVRefUnderflow = errors.New("AV reference count underflow")
	// ErrTrackerDestroyed: the tracker was destroyed.
	ErrTrackerDestroyed = errors.New("AV tracker destroyed")
)

// AV is an address vector toward one destination: what a PathRecord
// query resolved, plus which links limit it.
type AV struct {
	DLID, SLID uint16
	SL         uint8
	MTU        uint8 // MTU code (smp.MTU256 ..)
	Rate       uint8 // rate code (PathRecord numbering)
	HopCount   uint8
	// MTULimit and RateLimit name the links that set the path's MTU and
	// rate (free-form, e.g. "0x0002c903000a1b2c[1]").
	MTULimit, RateLimit string
}

func (a *AV) String() string {
	return fmt.Sprintf("dlid %d slid %d sl %d mtu %d rate %d hops %d", a.DLID, a.SLID, a.SL, a.MTU, a.Rate, a.HopCount)
}

// AVTracker tracks the current AV toward a destination and keeps every
// AV that is still referenced until its count reaches zero, destroying
// it then through the callback given to Init (ib_avtracker). AVs are
// identified by pointer. The current AV holds one reference of its own.
// The zero value (or InitState) is a tracker without callback; it is safe
// for concurrent use and must not be copied after first use.
type AVTracker struct {
	mu        sync.Mutex
	current   *AV
	refs      map[*AV]uint32
	order     []*AV // AVs in the order they were added
	destroy   func(*AV)
	destroyed bool
}

// InitState resets t to the zero state without destroying anything.
func (t *AVTracker) InitState() {
	t.mu.Lock()
	t.current, t.refs, t.order, t.destroy, t.destroyed = nil, nil, nil, nil, false
	t.mu.Unlock()
}

// Init prepares t; destroy (which may be nil) is called, outside the
// tracker's lock, exactly once for each AV whose count reaches zero or
// that Destroy removes.
func (t *AVTracker) Init(destroy func(*AV)) {
	t.InitState()
	t.mu.Lock()
	t.destroy = destroy
	t.mu.Unlock()
}

// Destroy removes every AV still in the tracker, current or not, and
// destroys it. Later calls fail with ErrTrackerDestroyed (GetCurrent
// returns nothing).
func (t *AVTracker) Destroy() {
	t.mu.Lock()
	gone := t.order
	fn := t.destroy
	t.current, t.refs, t.order, t.destroyed = nil, nil, nil, true
	t.mu.Unlock()
	if fn != nil {
		for _, av := range gone {
			fn(av)
		}
	}
}

// GetCurrent returns the current AV; with incRef its count is
// incremented before the lock is released, so it cannot be destroyed
// until a matching DecRef.
func (t *AVTracker) GetCurrent(incRef bool) (*AV, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	av := t.current
	if av == nil {
		return nil, false
	}
	if incRef {
		t.refs[av]++
	}
	return av, true
}

// SetCurrent makes av the current AV: a no-op if it already is; else a
// different current AV is cleared first (dropping its own reference) and
// av is added if new, taking a reference of its own.
func (t *AVTracker) SetCurrent(av *AV) error {
	if av == nil {
		return ErrAVUnknown
	}
	t.mu.Lock()
	if t.destroyed {
		t.mu.Unlock()
		return ErrTrackerDestroyed
	}
	if t.current == av {
		t.mu.Unlock()
		return nil
	}
	dead := t.clearLocked()
	if t.refs == nil {
		t.refs = make(map[*AV]uint32)
	}
	if _, ok := t.refs[av]; !ok {
		t.order = append(t.order, av)
	}
	t.refs[av]++
	t.current = av
	fn := t.destroy
	t.mu.Unlock()
	if dead != nil && fn != nil {
		fn(dead)
	}
	return nil
}

// ClearCurrent drops the current AV's own reference (destroying it if
// that was the last); a no-op without current AV.
func (t *AVTracker) ClearCurrent() {
	t.mu.Lock()
	dead := t.clearLocked()
	fn := t.destroy
	t.mu.Unlock()
	if dead != nil && fn != nil {
		fn(dead)
	}
}

// IncRef increments av's count; av must be in the tracker.
func (t *AVTracker) IncRef(av *AV) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.destroyed {
		return ErrTrackerDestroyed
	}
	if _, ok := t.refs[av]; !ok {
		return ErrAVUnknown
	}
	t.refs[av]++
	return nil
}

// DecRef decrements av's count, destroying av when it reaches zero.
func (t *AVTracker) DecRef(av *AV) error { return t.SubRef(av, 1) }

// SubRef subtracts n from av's count (for coalesced completions),
// destroying av when it reaches zero. It fails, changing nothing, when
// av is unknown or n exceeds the references callers hold.
func (t *AVTracker) SubRef(av *AV, n uint32) error {
	t.mu.Lock()
	if t.destroyed {
		t.mu.Unlock()
		return ErrTrackerDestroyed
	}
	c, ok := t.refs[av]
	if !ok {
		t.mu.Unlock()
		return ErrAVUnknown
	}
	held := c
	if av == t.current {
		held-- // the current AV's own reference
	}
	if n > held {
		t.mu.Unlock()
		return fmt.Errorf("subtract %d from %d held: %w", n, held, ErrAVRefUnderflow)
	}
	c -= n
	var dead *AV
	if c == 0 {
		dead = t.removeLocked(av)
	} else {
		t.refs[av] = c
	}
	fn := t.destroy
	t.mu.Unlock()
	if dead != nil && fn != nil {
		fn(dead)
	}
	return nil
}

// Refs returns av's reference count and whether it is in the tracker.
func (t *AVTracker) Refs(av *AV) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.refs[av]
	return c, ok
}

// Retired returns the AVs still referenced but no longer current, in the
// order they were added.
func (t *AVTracker) Retired() []*AV {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*AV
	for _, av := range t.order {
		if av != t.current {
			out = append(out, av)
		}
	}
	return out
}

// clearLocked drops the current AV's own reference and returns the AV if
// it must be destroyed.
func (t *AVTracker) clearLocked() *AV {
	av := t.current
	if av == nil {
		return nil
	}
	t.current = nil
	if c := t.refs[av] - 1; c > 0 {
		t.refs[av] = c
		return nil
	}
	return t.removeLocked(av)
}

func (t *AVTracker) removeLocked(av *AV) *AV {
	delete(t.refs, av)
	for i, x := range t.order {
		if x == av {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	return av
}
