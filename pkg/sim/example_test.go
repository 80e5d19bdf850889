package sim_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Generate a fat tree, let the embedded SM give it LIDs and forwarding
// tables (as OpenSM would), attach to a host and discover it: the
// simulator is a transport like a umad device or ibsim.
func ExampleGenerate() {
	fab, err := sim.Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		panic(err)
	}
	if err := fab.RunSM(""); err != nil {
		panic(err)
	}
	tr, err := fab.Attach("")
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		panic(err)
	}
	for _, n := range res.Fabric.Nodes[:4] {
		for _, p := range n.Ports {
			if p != nil && p.HasInfo {
				fmt.Printf("%s port %d lid %d\n", n.Description(), p.Num, p.BaseLID())
				break
			}
		}
	}
	fmt.Println(len(res.Fabric.Nodes), "nodes")
	// Output:
	// H0 port 1 lid 1
	// L0 port 0 lid 9
	// H1 port 1 lid 2
	// S0 port 0 lid 13
	// 14 nodes
}
