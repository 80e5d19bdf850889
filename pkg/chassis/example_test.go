package chassis_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/chassis"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Group a discovered fabric's nodes into chassis as ibnetdiscover -g
// does: here two switches share a SystemImageGUID, and so do two
// hosts' CAs; two more CAs have GUIDs of their own.
func ExampleGroup() {
	fab, err := sim.Load("testdata/group.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := chassis.Group(res.Fabric)
	for _, c := range g.All() {
		if c.Num == 0 {
			continue // a node of its own, not a chassis
		}
		fmt.Printf("chassis %d, GUID 0x%x:", c.Num, c.GUID)
		for _, n := range c.Nodes {
			fmt.Printf(" %q", n.Description())
		}
		fmt.Println()
	}
	// Output:
	// chassis 1, GUID 0x7000: "host1" "host2"
	// chassis 2, GUID 0x5000: "chassisA-1" "chassisA-2"
}
