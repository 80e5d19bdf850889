package pathav_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fabric, read its switches' forwarding tables, and compute
// the address vector of the route between two hosts as the SM's
// PathRecord gives it: path MTU, static rate and the ports that set them.
func ExampleResolve() {
	fab, err := sim.Load("../../testdata/fabrics/mixed.net", nil)
	if err != nil {
		panic(err)
	}
	if err := fab.RunSM(""); err != nil { // LIDs and LFTs, as OpenSM would
		panic(err)
	}
	tr, err := fab.Attach("")
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{})
	if err != nil {
		panic(err)
	}
	tables, err := routing.Read(ctx, &discover.Querier{Transport: tr}, res.Fabric, 4)
	if err != nil {
		panic(err)
	}
	src, _ := res.Fabric.ResolvePort("hostA mlx5_0", nil)
	dst, _ := res.Fabric.ResolvePort("hostE qib0", nil)
	p, err := pathav.Resolve(res.Fabric, tables, src, dst)
	if err != nil {
		panic(err)
	}
	fmt.Printf("LID %d to LID %d: %d hops, MTU %s (set by %s), rate %s Gb/s (set by %s)\n",
		p.AV.SLID, p.AV.DLID, p.AV.HopCount, pathav.MTUText(p.AV.MTU), p.AV.MTULimit,
		pathav.GbpsText(p.AV.Rate), p.AV.RateLimit)
	// Output:
	// LID 3 to LID 7: 3 hops, MTU 2048 (set by hostA mlx5_0[1]), rate 10 Gb/s (set by SwA[3])
}
