package routing_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Read the switches' forwarding tables of a fabric an SM has routed, check
// every route against the min-hop tables, and trace one route hop by hop,
// as ibtracert does. Without the tables there is no route to follow.
func ExampleCheck() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.RunSM(""); err != nil { // LIDs and min-hop tables, as OpenSM
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("h1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := res.Fabric
	tabs, err := routing.Read(ctx, &discover.Querier{Transport: tr, Timeout: time.Second}, f, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := routing.Check(f, tabs, model.ComputeHops(f))
	fmt.Printf("%d routes, %d broken, %d longer than min-hop, clean %v\n", r.Routes, r.Broken, r.Longer, r.Clean())

	src := f.From.Ports[f.FromPort]
	hops, dst, err := routing.Trace(f, tabs, src, 6)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hops {
		fmt.Printf("%s[%d] -> %s[%d]\n", h.Out.Node.Description(), h.Out.Num, h.In.Node.Description(), h.In.Num)
	}
	fmt.Println("reached", dst.Node.Description())

	_, _, err = routing.Trace(f, routing.NewTables(), src, 6)
	fmt.Println(errors.Is(err, routing.ErrNoTable), err)
	// Output:
	// 18 routes, 0 broken, 0 longer than min-hop, clean true
	// h1[1] -> sw1[1]
	// sw1[3] -> sw3[2]
	// sw3[1] -> h3[1]
	// reached h3
	// true to LID 6 at sw1 (0x0000000000200000): switch forwarding table not read
}
