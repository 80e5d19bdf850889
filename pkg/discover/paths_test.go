package discover

import (
	"context"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// walk follows path from local through f's links; nil when it leaves the
// graph.
func walk(local *model.Node, path smp.DRPath) *model.Node {
	n := local
	for i := 1; i <= int(path.Len()); i++ {
		pp := n.Port(int(path.Port(i)))
		if pp == nil || pp.Remote == nil {
			return nil
		}
		n = pp.Remote.Node
	}
	return n
}

// TestShortestPaths: a discovery from another node than the local one
// (--from) gives every node its shortest directed route from the local
// port, as a discovery from the local node does: the local node is "0",
// not a route through the start node back to it.
func TestShortestPaths(t *testing.T) {
	for _, tc := range []struct {
		spec, host string
		from       []string
		hops       int
	}{
		{"../../testdata/fabrics/demo.net", "", []string{"0,1,3", "0,2,1", "0,1", "0,1,37", "0,2,38,1,2"}, 2},
		{"../../testdata/fabrics/fattree3.net", "", []string{"0,1,3", "0,1,3,2"}, 2},
		{"../../testdata/fabrics/demo.net", "node003 mlx5_0", []string{"0,1,37,2,1", "0,1,38"}, 3},
	} {
		f, err := sim.Load(tc.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := f.Attach(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		full, err := Discover(context.Background(), tr, Config{MaxHops: -1})
		if err != nil {
			t.Fatal(err)
		}
		shortest := map[uint64]int{} // from a discovery at the local node
		for _, n := range full.Fabric.Nodes {
			shortest[n.GUID()] = int(n.Path.Len())
		}
		local := full.Fabric.From
		for _, f := range tc.from {
			from, err := smp.ParseDRPath(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Discover(context.Background(), tr, Config{From: from, MaxHops: tc.hops})
			if err != nil || res.Partial() {
				t.Fatalf("%s --from %s: %v, partial %v", tc.spec, f, err, res.Partial())
			}
			if len(res.Errors) != 0 {
				t.Errorf("--from %s: SMP errors %v", f, res.Errors)
			}
			for _, n := range res.Fabric.Nodes {
				if got, want := int(n.Path.Len()), shortest[n.GUID()]; got != want {
					t.Errorf("%s --from %s: %q at %s (%d hops), shortest %d hops", tc.spec, f, n.Description(), n.Path, got, want)
				}
				if m := walk(full.Fabric.NodeByGUID(local.GUID()), n.Path); m == nil || m.GUID() != n.GUID() {
					t.Errorf("%s --from %s: %q's route %s leads elsewhere", tc.spec, f, n.Description(), n.Path)
				}
			}
		}
	}
}
