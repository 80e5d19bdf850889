package sa_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/sa"
)

// Example asks the subnet administrator of the embedded simulator (its
// minimal SM assigned the LIDs) for every NodeRecord and for the
// PathRecord between two LIDs.
func Example() {
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{Sim: "../fabric/testdata/loop.net", Host: "h1", SimSM: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	smLID, err := sa.MasterSMLID(ctx, c.Transport, time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := sa.NewClient(c.Transport, smLID)
	if err != nil {
		fmt.Println(err)
		return
	}
	tab, err := client.GetTable(ctx, sa.AttrNodeRecord, 0, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < tab.Len(); i++ {
		var nr sa.NodeRecord
		if err := nr.UnmarshalBinary(tab.Record(i)); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("LID %d %q\n", nr.LID, nr.NodeDescription.String())
	}
	var req, out [sa.PathRecordSize]byte
	q := sa.PathRecord{SLID: 4, DLID: 6, NumbPath: 1}
	if err := q.MarshalTo(req[:]); err != nil {
		fmt.Println(err)
		return
	}
	if err := client.Get(ctx, sa.AttrPathRecord, sa.PRSLID|sa.PRDLID|sa.PRNumbPath, req[:], out[:]); err != nil {
		fmt.Println(err)
		return
	}
	var pr sa.PathRecord
	if err := pr.UnmarshalBinary(out[:]); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("path %d -> %d: SL %d, MTU code %d, rate code %d\n", pr.SLID, pr.DLID, pr.SL, pr.MTU, pr.Rate)
	// Output:
	// LID 1 "sw1"
	// LID 2 "sw2"
	// LID 3 "sw3"
	// LID 4 "h1"
	// LID 5 "h2"
	// LID 6 "h3"
	// path 4 -> 6: SL 0, MTU code 4, rate code 3
}
