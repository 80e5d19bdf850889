package main

import (
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
)

// TestWatchLightSweepSMPs: between full sweeps the watch sweeps lightly.
// On a two-level fat tree of 22 nodes (6 switches) whose SM has run, each
// idle sweep after the first sends at most one SMP per switch, the
// probes of the watched route (at most 13 and the local port) and the
// SA's PathRecord query: 21 at most, where a full sweep sends over 100.
// With --full-interval 0 every sweep is full.
func TestWatchLightSweepSMPs(t *testing.T) {
	const limit = 6 + 14 + 1
	for _, tc := range []struct {
		full      string
		wantLight bool
	}{{"5m", true}, {"0", false}} {
		t.Run("full-interval="+tc.full, func(t *testing.T) {
			hookMu.Lock()
			defer hookMu.Unlock()
			over := make([]bool, 4)
			afterSweep = func(sweep int, fab *attach.Fabric) {
				if fab.Sim == nil {
					t.Error("no simulator")
					return
				}
				fab.Sim.StopSchedule()
				if sweep+1 < len(over) {
					fab.Sim.AfterSMPs(limit+1, func() error { over[sweep+1] = true; return nil })
				}
			}
			defer func() { afterSweep = nil }()
			stdout, stderr, code := runTool(t, "watch", "--sim", "../../testdata/fabrics/fattree2.net", "--sim-sm", "--sim-host", "H0",
				"--interval", "1ms", "--full-interval", tc.full, "--count", fmt.Sprint(len(over)), "H15")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if n := len(scanLines(stdout)); n != 1 {
				t.Errorf("%d lines, want the first AV only:\n%s", n, stdout)
			}
			for i := 1; i < len(over); i++ {
				if over[i] == tc.wantLight {
					t.Errorf("sweep %d: more than %d SMPs: %v, want %v", i+1, limit, over[i], !tc.wantLight)
				}
			}
		})
	}
}
