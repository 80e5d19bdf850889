package chassis_test

import (
	"context"
	"io"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/chassis"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// FuzzGroup groups arbitrary fabrics (any cache that loads) and prints
// them with -g: no panic, every chip in at most one slot.
func FuzzGroup(f *testing.F) {
	for _, net := range []string{"chassis-vendors.net", "chassis-voltaire.net", "chassis-ipr.net", "chassis-vrouter.net", "chassis-fail.net"} {
		fab, err := sim.Load("../../cmd/ibdiscover/testdata/"+net, nil)
		if err != nil {
			f.Fatal(err)
		}
		tr, err := fab.Attach("h0")
		if err != nil {
			f.Fatal(err)
		}
		res, err := discover.Discover(context.Background(), tr, discover.Config{})
		tr.Close()
		if err != nil {
			f.Fatal(err)
		}
		b, err := ibndcache.Marshal(res.Fabric)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fab, err := ibndcache.Unmarshal(b)
		if err != nil {
			return
		}
		g := chassis.Group(fab)
		seen := map[any]bool{}
		for _, ch := range g.All() {
			for _, slots := range [][]*model.Node{ch.Spines[:], ch.Lines[:]} {
				for _, n := range slots {
					if n == nil {
						continue
					}
					if seen[n] {
						t.Fatalf("node 0x%016x in two slots", n.GUID())
					}
					seen[n] = true
				}
			}
		}
		if err := topology.WriteTopology(io.Discard, fab, topology.Options{Group: true}); err != nil {
			t.Fatal(err)
		}
	})
}
