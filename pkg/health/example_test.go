package health_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fat tree an SM has routed, unplug a leaf-to-spine link afterwards
// (its routes now lead into a port without a link), and run the checks.
func ExampleRun() {
	fab, err := sim.Load("../../testdata/fabrics/fattree2.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.RunSM(""); err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.Unlink("L0", 5); err != nil {
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("H1")
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
	in := health.Input{Result: res, Querier: &discover.Querier{Transport: tr, Timeout: time.Second},
		NoSMInfo: "the embedded simulator's SM answers no SMInfo"}
	in.Counters.Transport = tr
	rep, err := health.Run(ctx, in, []string{health.CheckLinks, health.CheckIDs, health.CheckSM, health.CheckRoutes, health.CheckCreditLoops})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range rep.Checks {
		fmt.Printf("%s: %s\n", c.Name, c.Status)
	}
	f := rep.Findings[0]
	fmt.Printf("worst: %s %s/%s at %s %q port %d\n", f.Severity, f.Check, f.Kind, f.Place.Type, f.Place.Node, f.Place.Port)
	// Output:
	// links: passed
	// ids: passed
	// sm: nothing-to-check
	// routes: failed
	// credit-loops: passed
	// worst: error routes/down-port at switch "S0" port 1
}
