// Package exitcode names the exit statuses shared by every tool of the
// suite (documented in each man page).
package exitcode

const (
	// OK: the work is complete.
	OK = 0
	// Fatal: nothing useful could be done (no transport, I/O failure).
	Fatal = 1
	// Usage: bad arguments or bad input files.
	Usage = 2
	// Partial: results were printed, but part of the fabric did not
	// answer or answered inconsistently.
	Partial = 3
	// Problem: the check that was asked for found a problem (a route
	// loop, a black hole, an MTU mismatch).
	Problem = 4
	// Interrupted: stopped by SIGINT or SIGTERM; what was found so far
	// was printed.
	Interrupted = 130
)
