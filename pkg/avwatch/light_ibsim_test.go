package avwatch_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestLightSweepReportsAsFullIbsim is TestLightSweepReportsAsFull through
// a running ibsim, its console making the changes and OpenSM (--once)
// bringing ports up, assigning LIDs and clearing the PortStateChange bits
// as an SM does: after each change a watch with light sweeps reports
// exactly what a watch with full sweeps only reports, in the same sweep.
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
	probe := open(true) // the test's own, for the width change (ibportstate's Set)

	step := func(name string, wantEvents, wantChange bool) {
		t.Helper()
		fe, le := full.sweep(t), light.sweep(t)
		if !slices.Equal(fe, le) {
			t.Errorf("%s: light sweep reported\n%q\nfull sweep reported\n%q", name, le, fe)
		}
		if wantEvents && len(fe) == 0 {
			t.Errorf("%s: no event: the change does not test anything", name)
		}
		if wantChange {
			if light.lastLight != nil && !light.lastLight.Changed {
				t.Errorf("%s: the light sweep saw no change", name)
			}
			if a, b := fabricJSON(t, light.res), fabricJSON(t, full.res); a != b {
				t.Errorf("%s: the light watch's fabric differs from a full discovery's", name)
			}
		}
		t.Logf("%s: %q (light: %+v)", name, le, light.lastLight)
	}
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
	con(`ReLink "H2"[1]`)
	step("link up, off route (Initialize)", false, true)
	con(`Unlink "H15"[1]`)
	step("link down", true, true)
	con(`ReLink "H15"[1]`)
	step("link up (Initialize)", true, true)
	sm()
	step("link up, SM ran", true, true)
	con(`Unlink "H5"`)
	step("node gone", true, true)
	con(`ReLink "H5"`)
	sm()
	step("node added, SM ran", true, true)
	con(`Baselid "H9"[1] 200`)
	step("LID moved", true, true)
	sm()
	step("LID moved, SM ran", true, true)
	setWidth(t, probe, pathTo(t, full.res.Fabric, "H15"), 1, 1)
	step("width change", true, true)
	step("idle again", false, false)
	if light.lastLight == nil || light.lastLight.Changed {
		t.Errorf("idle again: want a light sweep that sees no change, got %+v", light.lastLight)
	}
}
