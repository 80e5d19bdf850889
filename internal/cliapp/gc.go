package cliapp

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// gcFloor is the memory the runtime may use before the first collection.
// A one-shot tool keeps most of what it allocates, so on a small or
// medium fabric collecting is wasted work (at 2,144 nodes it was a fifth
// of the instructions per SMP, and it allocates about 7 MB in all); from
// the first collection on, the GC target is gcPercent.
const gcFloor = 16 << 20

// tuneGC makes the first collection wait for gcFloor bytes in use, then
// sets the GC target to gcPercent.
func tuneGC() {
	gcTuned.Store(true)
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcFloor)
	runtime.SetFinalizer(new(gcSentinel), afterFirstGC)
}

type gcSentinel struct{ _ [16]byte } // not tiny-allocated: its own finalizer runs

// afterFirstGC runs once the first collection has found the sentinel
// unreachable.
func afterFirstGC(*gcSentinel) {
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(math.MaxInt64)
}

// gcTuned is set when tuneGC ran (no GOGC or GOMEMLIMIT in the environment).
var gcTuned atomic.Bool

// EndGCFloor ends the floor Main set, if it set one: from now on the GC
// target is gcPercent. It is for a command that keeps a small part of
// what it allocates (ibcheck's exporter: a sweep of the 2,144-node tree
// allocates about 17 MB and keeps about 3 MB), for which collecting from
// the start costs less memory than the floor lets it use.
func EndGCFloor() {
	if gcTuned.Load() {
		afterFirstGC(nil)
	}
}
