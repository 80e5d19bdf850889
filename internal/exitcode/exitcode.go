// Package exitcode names the exit statuses shared by every tool of the
// suite (documented in each man page and the README) and picks one from
// what a run found.
package exitcode

const (
	// OK: the work is complete (warnings about inconsistencies may have
	// been printed on stderr; see Inconsistent).
	OK = 0
	// Fatal: nothing useful could be done (no transport, I/O failure),
	// or an internal error.
	Fatal = 1
	// Usage: bad arguments or bad input files.
	Usage = 2
	// Partial: results were printed, but something is missing: part of
	// the fabric did not answer (failed SMPs, unread forwarding tables,
	// ports beyond the 63-hop limit, discovery stopped early).
	Partial = 3
	// Problem: the check that was asked for found a problem (a route
	// loop, a black hole, an MTU mismatch).
	Problem = 4
	// NothingChecked: the check that was asked for had nothing to check
	// (no LIDs assigned, no forwarding tables): it is not clean.
	NothingChecked = 5
	// Inconsistent: with --strict, the fabric answered completely but
	// inconsistently (duplicate GUIDs, overlapping LIDs, contradictions).
	// Without --strict these are warnings on stderr and the status is OK.
	Inconsistent = 6
	// Interrupted: stopped by SIGINT or SIGTERM; what was found so far
	// was printed, and no output file was replaced.
	Interrupted = 130
)

// Outcome is what one run found; Status turns it into the exit status.
type Outcome struct {
	Interrupted    bool // stopped by a signal
	Problem        bool // the check found a problem
	Partial        bool // something is missing from the result
	NothingChecked bool // the check had nothing to check
	Inconsistent   bool // complete, but inconsistent (warnings)
	Strict         bool // --strict: inconsistencies set the status
}

// Status is the exit status for o. The more a status tells a script, the
// earlier it comes: Interrupted, Problem, Partial, NothingChecked,
// Inconsistent (only with Strict), OK.
func (o Outcome) Status() int {
	switch {
	case o.Interrupted:
		return Interrupted
	case o.Problem:
		return Problem
	case o.Partial:
		return Partial
	case o.NothingChecked:
		return NothingChecked
	case o.Inconsistent && o.Strict:
		return Inconsistent
	}
	return OK
}
