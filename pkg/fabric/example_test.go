package fabric_test

import (
	"context"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
)

// Open the embedded simulator on a net file, at host h2, with the minimal
// SM run first (as OpenSM would), and discover the fabric. A kernel device
// is fabric.Options{CA: "mlx5_0", Port: 1}; a running ibsim is
// fabric.Options{IBSim: true}.
func ExampleOpen() {
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{Sim: "testdata/loop.net", Host: "h2", SimSM: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Desc)
	res, err := discover.Discover(ctx, c, discover.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Fabric.Nodes {
		fmt.Println(n.Description(), n.NumPorts())
	}
	// Output:
	// embedded simulator testdata/loop.net
	// h2 1
	// sw2 8
	// sw1 8
	// sw3 8
	// h1 1
	// h3 1
}
