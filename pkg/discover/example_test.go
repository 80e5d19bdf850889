package discover_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fabric (here the embedded simulator on a net file; a
// umad.Device or an ibsim.Client are transports too) and list its nodes
// in discovery order with the directed route that reached each.
func ExampleDiscover() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		panic(err)
	}
	tr, err := fab.Attach("h1")
	if err != nil {
		panic(err)
	}
	defer tr.Close()

	// The zero Config is a whole-fabric discovery with the defaults.
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		panic(err)
	}
	for _, n := range res.Fabric.Nodes {
		fmt.Printf("%-3s %d ports  DR path %s\n", n.Description(), n.NumPorts(), n.Path)
	}
	fmt.Println("complete:", !res.Partial())
	// Output:
	// h1  1 ports  DR path 0
	// sw1 8 ports  DR path 0,1
	// sw2 8 ports  DR path 0,1,2
	// sw3 8 ports  DR path 0,1,3
	// h2  1 ports  DR path 0,1,2,1
	// h3  1 ports  DR path 0,1,3,1
	// complete: true
}
