package model_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fabric, compute the LID hop matrix as OpenSM's min-hop
// engine does, and print it in opensm-lid-matrix.dump's format; then ask
// for the least hops between two ports.
func ExampleComputeHops() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		panic(err)
	}
	if err := fab.RunSM(""); err != nil { // LIDs, as OpenSM would give
		panic(err)
	}
	tr, err := fab.Attach("h1")
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		panic(err)
	}
	h := model.ComputeHops(res.Fabric)
	if err := model.WriteLIDMatrixDump(os.Stdout, res.Fabric, h); err != nil {
		panic(err)
	}
	h1, _ := res.Fabric.ResolvePort("h1", nil)
	h3, _ := res.Fabric.ResolvePort("h3", nil)
	fmt.Println("h1 to h3:", h.HopsBetween(h1, h3), "hops")
	// Output:
	// Switch: guid 0x0000000000200000
	// 0x0001: 00 ff 02 02 ff ff ff ff ff # portguid 0x0000000000200000
	// 0x0002: 01 ff 01 02 ff ff ff ff ff # portguid 0x0000000000200001
	// 0x0003: 01 ff 02 01 ff ff ff ff ff # portguid 0x0000000000200002
	// Switch: guid 0x0000000000200001
	// 0x0001: 01 ff ff 01 02 ff ff ff ff # portguid 0x0000000000200000
	// 0x0002: 00 ff ff 02 02 ff ff ff ff # portguid 0x0000000000200001
	// 0x0003: 01 ff ff 02 01 ff ff ff ff # portguid 0x0000000000200002
	// Switch: guid 0x0000000000200002
	// 0x0001: 01 ff 01 ff 02 ff ff ff ff # portguid 0x0000000000200000
	// 0x0002: 01 ff 02 ff 01 ff ff ff ff # portguid 0x0000000000200001
	// 0x0003: 00 ff 02 ff 02 ff ff ff ff # portguid 0x0000000000200002
	// h1 to h3: 3 hops
}
