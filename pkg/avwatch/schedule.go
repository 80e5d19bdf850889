package avwatch

import "time"

// Schedule decides whether a sweep of a watch is full (a discovery and
// every forwarding table) or light (discover.LightSweep, then a full
// sweep only when it sees a change).
type Schedule struct {
	// FullInterval is the longest time between full sweeps: the safety
	// net for what a light sweep cannot see (0: every sweep is full).
	FullInterval time.Duration
	last         time.Time
	done         bool
}

// Full reports whether the sweep at now must be full without a light
// sweep first: the first sweep, one after a partial result (partial: the
// last full sweep missed something, or the peer was attached again), one
// while a destination has no AV (w.Unresolved: there is no route to
// probe), and one FullInterval after the last full sweep.
func (s *Schedule) Full(now time.Time, w *Watcher, partial bool) bool {
	return !s.done || partial || s.FullInterval <= 0 || now.Sub(s.last) >= s.FullInterval || (w != nil && w.Unresolved())
}

// Ran records a full sweep that started at now.
func (s *Schedule) Ran(now time.Time) { s.last, s.done = now, true }

// Reset makes the next sweep full (after attaching again).
func (s *Schedule) Reset() { s.done = false }
