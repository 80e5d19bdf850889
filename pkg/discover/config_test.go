package discover_test

import (
	"context"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
)

// TestZeroConfig: the zero Config discovers the whole fabric and says
// it is complete; StartOnly reads the start node alone; MaxHops counts
// only when positive.
func TestZeroConfig(t *testing.T) {
	_, tr := attach(t, fabrics+"fattree2.net", "")
	want := len(discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric.Nodes)
	for _, tc := range []struct {
		name  string
		cfg   discover.Config
		nodes int
	}{
		{"zero", discover.Config{}, want},
		{"negative", discover.Config{MaxHops: -1}, want},
		{"start only", discover.Config{StartOnly: true, MaxHops: 5}, 1},
		{"one hop", discover.Config{MaxHops: 1}, 2}, // a host and its leaf
	} {
		res, err := discover.Discover(context.Background(), tr, tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := len(res.Fabric.Nodes); n != tc.nodes || res.Partial() {
			t.Errorf("%s: %d nodes (partial %v), want %d, complete", tc.name, n, res.Partial(), tc.nodes)
		}
	}
}
