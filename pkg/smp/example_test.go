package smp_test

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Build a directed-route SubnGet of NodeInfo for the node two hops away
// (out of port 1, then port 3), encode it to the 256 bytes put on the
// wire, and decode a NodeInfo answer.
func ExampleNewGet() {
	path, err := smp.ParseDRPath("0,1,3")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := smp.NewGet(path, smp.AttrNodeInfo, 0)
	b, err := req.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: class 0x%02x hop count %d, path %s\n", len(b), b[1], b[7], req.Path())

	answer := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: 2, NumPorts: 36, NodeGUID: 0x0c42a1030020a000, LocalPortNum: 3}
	var data [smp.DataSize]byte
	if err := answer.MarshalTo(data[:]); err != nil {
		fmt.Println(err)
		return
	}
	var ni smp.NodeInfo
	if err := ni.UnmarshalBinary(data[:]); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d ports, GUID 0x%016x, entered at port %d\n", smp.AttrName(smp.AttrNodeInfo), ni.NumPorts, ni.NodeGUID, ni.LocalPortNum)

	if _, err := smp.ParseDRPath("1,2"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 256 bytes: class 0x81 hop count 2, path 0,1,3
	// NodeInfo: 36 ports, GUID 0x0c42a1030020a000, entered at port 3
	// first element must be 0
}
