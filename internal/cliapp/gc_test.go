package cliapp

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestEndGCFloor: after the floor Main sets, EndGCFloor leaves the GC
// target gcPercent and no memory limit; without the floor (GOGC or
// GOMEMLIMIT in the environment) it changes nothing.
func TestEndGCFloor(t *testing.T) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
		gcTuned.Store(false)
	})
	gcTuned.Store(false)
	debug.SetGCPercent(77)
	EndGCFloor()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("without the floor: GC percent %d after EndGCFloor, want 77 (as set)", got)
	}
	tuneGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("tuneGC: GC percent %d, want -1 (off until the floor)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != gcFloor {
		t.Fatalf("tuneGC: memory limit %d, want %d", got, gcFloor)
	}
	EndGCFloor()
	if got := debug.SetGCPercent(-1); got != gcPercent {
		t.Errorf("after EndGCFloor: GC percent %d, want %d", got, gcPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("after EndGCFloor: memory limit %d, want none", got)
	}
}
