package ibndcache_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Save a discovered fabric in ibnetdiscover's cache format (what
// "ibnetdiscover --cache FILE" writes, and --load-cache reads back), load
// it again, and refuse bytes that are not a cache.
func ExampleMarshal() {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
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
	b, err := ibndcache.Marshal(res.Fabric)
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := ibndcache.Unmarshal(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(b), "bytes,", len(f.Nodes), "nodes, from", f.From.Description())

	_, err = ibndcache.Unmarshal([]byte("#\n# Topology file\n"))
	fmt.Println(errors.Is(err, ibndcache.ErrMagic), err)
	// Output:
	// 4390 bytes, 6 nodes, from h1
	// true not an ibnetdiscover cache (bad magic): magic 0x20230a23, want 0x8fe7832b (at byte 0)
}
