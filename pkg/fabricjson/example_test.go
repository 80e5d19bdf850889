package fabricjson_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Discover a fabric and build its JSON document (schema ibdiag.fabric/v1,
// docs/fabric.schema.json); Write prints the same document.
func ExampleBuild() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fab.RunSM(""); err != nil {
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
	doc := fabricjson.Build(res.Fabric, fabricjson.Options{})
	fmt.Println(doc.Schema, len(doc.Nodes), "nodes", len(doc.Links), "links")
	for _, n := range doc.Nodes[:2] {
		fmt.Println(n.Type, n.Name, n.LIDs)
	}
	b, _ := json.Marshal(doc.Links[0])
	fmt.Println(string(b))
	// Output:
	// ibdiag.fabric/v1 6 nodes 6 links
	// ca h1 [4]
	// switch sw1 [1]
	// {"a":{"node_guid":"0x0000000000100000","port":1,"port_guid":"0x0000000000100001","name":"h1"},"b":{"node_guid":"0x0000000000200000","port":1,"port_guid":"0x0000000000200000","name":"sw1"},"width":"4x","speed":"SDR","rate_gbps":10}
}
