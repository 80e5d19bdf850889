package main

import (
	"os"
	"testing"
	"time"
)

// TestMain lets the tests watch with --interval 1ms (the tool's floor is
// MinInterval; TestIntervalFloor checks it).
func TestMain(m *testing.M) {
	minInterval = time.Millisecond
	os.Exit(m.Run())
}

// TestIntervalFloor: --interval below MinInterval is refused with one
// line, before anything is opened.
func TestIntervalFloor(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	minInterval = MinInterval
	defer func() { minInterval = time.Millisecond }()
	for _, iv := range []string{"1ns", "999ms"} {
		out, stderr, code := runTool(t, "watch", "--sim", "testdata/pathmix.net", "--interval", iv, "hA")
		want := "ibavtrack: --interval " + iv + ": must be at least 1s (every sweep rediscovers the fabric)\n"
		if code != 2 || string(stderr) != want || len(out) != 0 {
			t.Errorf("--interval %s: exit %d, stderr %q, want 2 and %q", iv, code, stderr, want)
		}
	}
	if _, stderr, code := runTool(t, "watch", "--sim", "testdata/pathmix.net", "--interval", "1s", "--count", "1", "hA"); code != 0 {
		t.Errorf("--interval 1s: exit %d: %s", code, stderr)
	}
}
