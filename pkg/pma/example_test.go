package pma_test

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/pma"
)

// Ask a port's PMA for its PortCounters, then decode the data of an
// answer and print the counters that are not zero by perfquery's names
// (PortXmitWait among them, as ibqueryerrors counts it).
func ExampleNewGet() {
	req := pma.NewGet(pma.AttrPortCounters, 1)
	b, err := req.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: class 0x%02x, %s\n", len(b), b[1], pma.AttrName(req.AttrID))

	answer := pma.PortCounters{PortSelect: 1, SymbolErrorCounter: 12, PortRcvErrors: 7, PortXmitWait: 1500}
	var data [pma.DataSize]byte
	if err := answer.MarshalTo(data[:]); err != nil {
		fmt.Println(err)
		return
	}
	var pc pma.PortCounters
	if err := pc.UnmarshalBinary(data[:]); err != nil {
		fmt.Println(err)
		return
	}
	e := pc.Errors()
	for i, v := range e {
		if v != 0 {
			fmt.Printf("%s == %d\n", pma.ErrorNames[i], v)
		}
	}
	// Output:
	// 256 bytes: class 0x04, PortCounters
	// SymbolErrorCounter == 12
	// PortRcvErrors == 7
	// PortXmitWait == 1500
}
