package netfile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// Parse a net file held in memory, generate a fat tree, and tell a missing
// file from a bad one.
func ExampleParse() {
	f, err := netfile.Parse("two.net", []byte(`Switch 4 "sw1"
[1] "h1"[1]

Hca 1 "h1"
[1] "sw1"[1]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range f.Nodes {
		fmt.Printf("%s %q: %d ports, GUID 0x%x\n", n.Type, n.ID, n.NumPorts, n.GUID)
	}

	tree, err := netfile.Generate("fattree:levels=2,radix=8")
	if err != nil {
		fmt.Println(err)
		return
	}
	nodes, switches, ports := tree.Counts()
	fmt.Println(nodes, "nodes,", switches, "switches,", ports, "ports")

	_, err = netfile.Parse("bad.net", []byte("Switch 4\n"))
	fmt.Println(err)
	_, err = netfile.ParseFile("nosuch.net")
	fmt.Println(errors.Is(err, fs.ErrNotExist), err)
	_, err = netfile.ParseFileOptions(os.DevNull, netfile.ParseOptions{RequireNodes: true})
	fmt.Println(errors.Is(err, netfile.ErrNoNodes), err)
	// Output:
	// Switch "sw1": 4 ports, GUID 0x200000
	// Ca "h1": 1 ports, GUID 0x100000
	// 44 nodes, 12 switches, 140 ports
	// bad.net:1: can't find valid id in <Switch 4>
	// true nosuch.net: no such file or directory
	// true /dev/null: no nodes (want an ibsim net file or an ibnetdiscover topology file)
}
