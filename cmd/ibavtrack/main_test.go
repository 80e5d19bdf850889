package main

import (
	"os"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestMain lets the tests watch with --interval 1ms (the tool's floor is
// MinInterval; TestIntervalFloor checks it).
func TestMain(m *testing.M) {
	minInterval = time.Millisecond
	code := m.Run()
	ibsimtest.StopShared() // lashTorus's ibsim and OpenSM
	os.Exit(code)
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
		want := "ibavtrack: --interval " + iv + ": must be at least 1s (every sweep reads every switch)\n"
		if code != 2 || string(stderr) != want || len(out) != 0 {
			t.Errorf("--interval %s: exit %d, stderr %q, want 2 and %q", iv, code, stderr, want)
		}
	}
	// Seconds as a number are seconds.
	for _, iv := range []string{"1s", "1", "1.5", "2m"} {
		if _, stderr, code := runTool(t, "watch", "--sim", "testdata/pathmix.net", "--interval", iv, "--count", "1", "hA"); code != 0 {
			t.Errorf("--interval %s: exit %d: %s", iv, code, stderr)
		}
	}
	if _, stderr, code := runTool(t, "watch", "--sim", "testdata/pathmix.net", "--interval", "0.5", "hA"); code != 2 ||
		string(stderr) != "ibavtrack: --interval 0.5: must be at least 1s (every sweep reads every switch)\n" {
		t.Errorf("--interval 0.5: exit %d: %q", code, stderr)
	}
}
