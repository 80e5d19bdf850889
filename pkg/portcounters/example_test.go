package portcounters_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Read every port's PerfMgt counters of a discovered fabric and print
// the ports beyond their thresholds as ibqueryerrors does (the fabric's
// net file injects the counters with ibsim's PerformanceSet).
func ExampleRead() {
	fab, err := sim.Load("testdata/counters.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.RunSM(""); err != nil { // PMAs are reached by LID
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("")
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
	th, _, err := portcounters.ParseThresholds("thresholds", []byte("SymbolErrorCounter=10\nPortXmitWait=1000\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := portcounters.Read(ctx, portcounters.Config{Transport: tr, Thresholds: th}, res.Fabric)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := portcounters.WriteIBQueryErrors(os.Stdout, rep); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Errors for "h4 mlx5_0"
	//    GUID 0x100008 port 2: [PortXmitWait == 1500]
	// Errors for "h3 mlx5_0"
	//    GUID 0x100005 port 1: [PortRcvErrors == 7]
	// Errors for 0x200001 "sw2"
	//    GUID 0x200001 port ALL: [PortXmitDiscards == 4]
	//    GUID 0x200001 port 3: [PortXmitDiscards == 4]
	// Errors for 0x200000 "sw1"
	//    GUID 0x200000 port ALL: [SymbolErrorCounter == 12]
	//    GUID 0x200000 port 1: [SymbolErrorCounter == 12]
	//
	// ## Summary: 6 nodes checked, 4 bad nodes found
	// ##          21 ports checked, 4 ports have errors beyond threshold
	// ## Thresholds: [SymbolErrorCounter = 10][PortXmitWait = 1000]
	// ## Suppressed:
}
