package slurmtopo_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/slurmtopo"
)

// Discover the bundled demo fabric and write its topology.conf: the
// leaves list their hosts, the spines the leaves.
func ExampleWrite() {
	fab, err := sim.Load("../../testdata/fabrics/demo.net", nil)
	if err != nil {
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
	if _, err := slurmtopo.Write(os.Stdout, res.Fabric, slurmtopo.Options{Source: "demo.net"}); err != nil {
		panic(err)
	}
	// Output:
	// # topology.conf for Slurm's topology/tree plugin, written by ibdiscover --slurm
	// # from demo.net: 4 switches in 2 levels, 6 hosts (host names: rule word)
	// # level 1: leaf switches and their hosts
	// SwitchName=leaf01 Nodes=node[001-003]
	// SwitchName=leaf02 Nodes=node[004-006]
	// # level 2: switches and the switches below them
	// SwitchName=spine01 Switches=leaf[01-02]
	// SwitchName=spine02 Switches=leaf[01-02]
}

// Host lists as Slurm writes them.
func ExampleCompress() {
	fmt.Println(slurmtopo.Compress([]string{"node004", "node001", "node002", "node003", "node007", "login"}))
	// Output: login,node[001-004,007]
}
