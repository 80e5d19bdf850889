package linkinfo_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/linkinfo"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Discover a fabric on the embedded simulator and print the switch one
// hop from host h1 as iblinkinfo -D 0,1 does: a line per port, with
// "Could be" hints where a link runs below what both ends support.
func ExampleRender() {
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{Sim: "../../testdata/fabrics/loop.net", Host: "h1", SimSM: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := discover.Discover(ctx, c, discover.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	path, _ := smp.ParseDRPath("0,1")
	opts := linkinfo.Options{ByPath: true, Path: path}
	if err := linkinfo.Render(os.Stdout, res.Fabric, opts); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Switch: 0x0000000000200000 sw1:
	//            1    1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>       4    1[  ] "h1" (Could be 12X Could be 10.0 Gbps)
	//            1    2[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>       2    3[  ] "sw2" (Could be 12X Could be 10.0 Gbps)
	//            1    3[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>       3    2[  ] "sw3" (Could be 12X Could be 10.0 Gbps)
	//            1    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )
	//            1    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )
	//            1    6[  ] ==(                Down/ Polling)==>             [  ] "" ( )
	//            1    7[  ] ==(                Down/ Polling)==>             [  ] "" ( )
	//            1    8[  ] ==(                Down/ Polling)==>             [  ] "" ( )
}
