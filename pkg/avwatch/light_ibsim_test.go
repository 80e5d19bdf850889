package avwatch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestLightSweepReportsAsFullIbsim is TestLightSweepReportsAsFull through
// a running ibsim, its console making the changes and OpenSM (--once)
// bringing ports up, assigning LIDs and clearing the PortStateChange bits
// as an SM does: after each change a watch with light and incremental
// sweeps reports exactly what a watch with full sweeps only reports, in
// the same sweep, from the same fabric and routes.
func TestLightSweepReportsAsFullIbsim(t *testing.T) {
	ibsimtest.Require(t)
	net, err := filepath.Abs("../../testdata/fabrics/fattree2.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, net, ibsimtest.WithConsole())
	sm := func() {
		t.Helper()
		s.RunOpenSM(t, "H0", t.TempDir())
	}
	sm()
	open := func(set bool) *attach.Fabric {
		t.Helper()
		fab, err := attach.Open(context.Background(), attach.Settings{IBSim: true, IBSimSock: s.SockName, SimHost: "H0", Timeout: time.Second, Retries: 3, AllowSet: set})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fab.Close() })
		return fab
	}
	dsts := []string{"H15", "H5", "H9"}
	full, light := newSideOn(t, open(false), false, dsts), newSideOn(t, open(false), true, dsts)
	// ibsim answers through a socket from another process: on a loaded
	// machine (under -race) an answer can take longer than the embedded
	// simulator's 100 ms, and a discovery that misses nodes would be
	// taken for a change.
	full.smpTimeout, light.smpTimeout = time.Second, time.Second
	probe := open(true) // the test's own, for the width change (ibportstate's Set)

	step := func(name string, wantEvents, wantChange bool) {
		t.Helper()
		fe, le := full.sweep(t), light.sweep(t)
		for _, side := range []*watchSide{full, light} {
			if r := side.res; r.Partial() {
				t.Fatalf("%s: a discovery missed part of the fabric (%d SMPs failed, %v): not a change this test makes", name, len(r.Errors), r.Err)
			}
		}
		compareSweeps(t, name, full, light, dsts, fe, le, wantEvents, wantChange)
	}
	incr := func(name string) { t.Helper(); light.requireIncremental(t, name) }
	con := func(cmd string) {
		t.Helper()
		s.Console(t, cmd)
	}

	step("first sweep", true, true)
	step("idle", false, false)
	if light.lastLight == nil || light.lastLight.Changed {
		t.Fatalf("idle: want a light sweep that sees no change, got %+v", light.lastLight)
	}
	con(`Unlink "H2"[1]`)
	step("link down, off route", false, true)
	incr("link down, off route")
	// One link: the SMPs of the incremental sweep are the light sweep's
	// (33), the leaf switch's ports and their peers (3 × 9), the switch
	// read again (3 + 9: its PortInfo is the light sweep's), and for each
	// of the three routes its forwarding table blocks (3) and ports (9).
	if n, bound := light.lastSMPs, int64(33+3*9+(3+9)+3*(3+9)); n > bound {
		t.Errorf("link down, off route: %d SMPs, want at most %d", n, bound)
	}
	con(`ReLink "H2"[1]`)
	step("link up, off route (Initialize)", false, true)
	incr("link up, off route (Initialize)")
	sm()
	step("link up, off route, SM ran", false, true)
	incr("link up, off route, SM ran")
	con(`Unlink "H10"`)
	step("node gone, off route", false, true)
	incr("node gone, off route")
	con(`ReLink "H10"`)
	step("node added, off route (Initialize)", false, true)
	incr("node added, off route (Initialize)")
	sm()
	step("node added, off route, SM ran", false, true)
	incr("node added, off route, SM ran")
	con(`Unlink "H10"[1]`)
	con(`Unlink "H11"[1]`)
	con(`Link "L2"[3] "H11"[1]`)
	con(`Link "L2"[4] "H10"[1]`)
	step("hosts swapped", false, true)
	incr("hosts swapped")
	sm()
	step("hosts swapped, SM ran", false, true)
	incr("hosts swapped, SM ran")
	for p := 5; p <= 8; p++ {
		con(fmt.Sprintf(`Unlink "L2"[%d]`, p))
	}
	step("subtree cut off", true, true)
	incr("subtree cut off")
	for p := 5; p <= 8; p++ {
		con(fmt.Sprintf(`ReLink "L2"[%d]`, p))
	}
	sm()
	step("subtree back, SM ran", true, true)
	con(`Unlink "H15"[1]`)
	step("link down", true, true)
	incr("link down")
	con(`ReLink "H15"[1]`)
	step("link up (Initialize)", true, true)
	sm()
	step("link up, SM ran", true, true)
	con(`Unlink "H5"`)
	step("node gone", true, true)
	incr("node gone")
	con(`ReLink "H5"`)
	sm()
	step("node added, SM ran", true, true)
	con(`Baselid "H9"[1] 200`)
	step("LID moved", true, true)
	incr("LID moved")
	sm()
	step("LID moved, SM ran", true, true)
	setWidth(t, probe, pathTo(t, full.res.Fabric, "H15"), 1, 1)
	step("width change", true, true)
	incr("width change")
	step("idle again", false, false)
	if light.lastLight == nil || light.lastLight.Changed {
		t.Errorf("idle again: want a light sweep that sees no change, got %+v", light.lastLight)
	}
}
