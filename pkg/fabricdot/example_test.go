package fabricdot_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricdot"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fabric and draw it with Graphviz (pipe the output to
// "dot -Tsvg").
func ExampleWrite() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.RunSM(""); err != nil { // LIDs, ports Active
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("h1")
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
	if err := fabricdot.Write(os.Stdout, res.Fabric, fabricdot.Options{Title: "loop"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// graph "loop" {
	// 	graph [splines=true, outputorder=edgesfirst, ranksep=1.2, nodesep=0.25];
	// 	node [fontname="Helvetica", fontsize=10];
	// 	edge [fontname="Helvetica", fontsize=8, labelfontsize=8, labelfontcolor="#404040"];
	// 	subgraph "level1" { // leaf switches
	// 		rank=same;
	// 		"S-0000000000200000" [label="sw1\n0x0000000000200000\nlid 1", shape=box, style="rounded,filled", fillcolor="#9ecae1"];
	// 		"S-0000000000200001" [label="sw2\n0x0000000000200001\nlid 2", shape=box, style="rounded,filled", fillcolor="#9ecae1"];
	// 		"S-0000000000200002" [label="sw3\n0x0000000000200002\nlid 3", shape=box, style="rounded,filled", fillcolor="#9ecae1"];
	// 	}
	// 	subgraph "level0" { // hosts
	// 		rank=same;
	// 		"H-0000000000100000" [label="h1\n0x0000000000100000\nlid 4", shape=ellipse, style=filled, fillcolor="#c7e9c0"];
	// 		"H-0000000000100002" [label="h2\n0x0000000000100002\nlid 5", shape=ellipse, style=filled, fillcolor="#c7e9c0"];
	// 		"H-0000000000100004" [label="h3\n0x0000000000100004\nlid 6", shape=ellipse, style=filled, fillcolor="#c7e9c0"];
	// 	}
	// 	"S-0000000000200000" -- "H-0000000000100000" [label="4xSDR", taillabel="1", headlabel="1"];
	// 	"S-0000000000200000" -- "S-0000000000200001" [xlabel="4xSDR", taillabel="2", headlabel="3", constraint=false];
	// 	"S-0000000000200000" -- "S-0000000000200002" [xlabel="4xSDR", taillabel="3", headlabel="2", constraint=false];
	// 	"S-0000000000200001" -- "H-0000000000100002" [label="4xSDR", taillabel="1", headlabel="1"];
	// 	"S-0000000000200001" -- "S-0000000000200002" [xlabel="4xSDR", taillabel="4", headlabel="4", constraint=false];
	// 	"S-0000000000200002" -- "H-0000000000100004" [label="4xSDR", taillabel="1", headlabel="1"];
	// }
}
