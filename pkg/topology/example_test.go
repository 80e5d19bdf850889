package topology_test

import (
	"context"
	"os"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// Discover a fabric and print it as ibnetdiscover does (its topology
// file format, byte for byte).
func ExampleWriteTopology() {
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
	// a fixed date in the header, for this example's output
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := topology.WriteTopology(os.Stdout, res.Fabric, topology.Options{Generated: when}); err != nil {
		panic(err)
	}
	// Output:
	// #
	// # Topology file: generated on Fri Jan  2 03:04:05 2026
	// #
	// # Initiated from node 0000000000100000 port 0000000000100001
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x200002
	// switchguid=0x200002(200002)
	// Switch	8 "S-0000000000200002"		# "sw3" base port 0 lid 3 lmc 0
	// [1]	"H-0000000000100004"[1](100005) 		# "h3" lid 6 4xSDR
	// [2]	"S-0000000000200000"[3]		# "sw1" lid 1 4xSDR
	// [4]	"S-0000000000200001"[4]		# "sw2" lid 2 4xSDR
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x200001
	// switchguid=0x200001(200001)
	// Switch	8 "S-0000000000200001"		# "sw2" base port 0 lid 2 lmc 0
	// [1]	"H-0000000000100002"[1](100003) 		# "h2" lid 5 4xSDR
	// [3]	"S-0000000000200000"[2]		# "sw1" lid 1 4xSDR
	// [4]	"S-0000000000200002"[4]		# "sw3" lid 3 4xSDR
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x200000
	// switchguid=0x200000(200000)
	// Switch	8 "S-0000000000200000"		# "sw1" base port 0 lid 1 lmc 0
	// [1]	"H-0000000000100000"[1](100001) 		# "h1" lid 4 4xSDR
	// [2]	"S-0000000000200001"[3]		# "sw2" lid 2 4xSDR
	// [3]	"S-0000000000200002"[2]		# "sw3" lid 3 4xSDR
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x100004
	// caguid=0x100004
	// Ca	1 "H-0000000000100004"		# "h3"
	// [1](100005) 	"S-0000000000200002"[1]		# lid 6 lmc 0 "sw3" lid 3 4xSDR
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x100002
	// caguid=0x100002
	// Ca	1 "H-0000000000100002"		# "h2"
	// [1](100003) 	"S-0000000000200001"[1]		# lid 5 lmc 0 "sw2" lid 2 4xSDR
	//
	// vendid=0x0
	// devid=0x0
	// sysimgguid=0x100000
	// caguid=0x100000
	// Ca	1 "H-0000000000100000"		# "h1"
	// [1](100001) 	"S-0000000000200000"[1]		# lid 4 lmc 0 "sw1" lid 1 4xSDR
}
