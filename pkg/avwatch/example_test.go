package avwatch_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/avwatch"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Follow the AV from h1 to h2 over two sweeps of a simulated fabric
// whose faster link is unplugged between them.
func ExampleWatcher() {
	fab, err := sim.Load("testdata/watch.net", nil)
	if err != nil {
		panic(err)
	}
	w := avwatch.New(0, []string{"h2"})
	defer w.Close()
	for sweep := 0; sweep < 2; sweep++ {
		if sweep == 1 {
			fab.Unlink("sw1", 2) // the 1x link the SM routed over
		}
		fab.RunSM("h1")
		tr, err := fab.Attach("h1")
		if err != nil {
			panic(err)
		}
		ctx := context.Background()
		res, err := discover.Discover(ctx, tr, discover.Config{})
		if err != nil {
			panic(err)
		}
		tables, err := routing.Read(ctx, &discover.Querier{Transport: tr}, res.Fabric, 4)
		if err != nil {
			panic(err)
		}
		local, _ := res.Fabric.ResolvePort("h1", nil)
		src, slid, srcErr := avwatch.SourcePort(res.Fabric, "", local)
		w.Update(sweep, res.Fabric, tables, src, slid, srcErr, func(e *avwatch.Event) error {
			fmt.Printf("%s %s: %s\n", e.Kind, e.Target, e.Text())
			return nil
		})
		tr.Close()
	}
	// Output:
	// new h2: AV dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3 via h1[1] sw1[2] sw2[3] (computed)
	// change h2: rate 2.5 Gb/s → 10 Gb/s, rate set by sw1[2] → h1[1], route h1[1] sw1[2] sw2[3] → h1[1] sw1[3] sw2[3]
}
