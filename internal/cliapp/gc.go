package cliapp

import (
	"math"
	"runtime"
	"runtime/debug"
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
