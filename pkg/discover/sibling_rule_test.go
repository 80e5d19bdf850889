package discover_test

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
)

// TestSiblingRuleNoVL15Drops: on a 3-level radix-8 fat tree under the
// latency model (one-packet VL15 buffers, virtual clock), keeping the
// probes of sibling parents apart (one probe per node at a time) leaves
// no SMP dropped at a busy SMA, at 16 and at 64 SMPs in flight. Without
// the rule the topology is the same but sibling probes meet at one SMA
// and are dropped (about 20 at -o 16, 31 at -o 64).
func TestSiblingRuleNoVL15Drops(t *testing.T) {
	f, tr := latencyFabric(t, latencyTree{name: "3-level, radix 8", spec: "fattree:levels=3,radix=8"})
	want := fingerprint(t, discoverAll(t, tr, discover.Config{MaxHops: -1}))
	for _, c := range []struct {
		name string
		cfg  discover.Config
	}{
		{"-o 16", discover.Config{Outstanding: 16, FixedWindow: true}},
		{"-o 64", discover.Config{Outstanding: 64, FixedWindow: true}},
		{"-o 16 adaptive", discover.Config{Outstanding: 16}},
		{"-o 64 adaptive", discover.Config{Outstanding: 64}},
	} {
		_, res, drops := virtualRun(t, f, tr, c.cfg)
		if res.Partial() {
			t.Fatalf("%s: partial: %v", c.name, res.Errors)
		}
		if fingerprint(t, res) != want {
			t.Errorf("%s: the result differs from the lossless run's", c.name)
		}
		if drops != 0 {
			t.Errorf("%s: %d VL15 drops (%d SMPs, %d retries), want 0: sibling probes were not kept apart", c.name, drops, res.SMPs, res.Retries)
		}
	}
}
