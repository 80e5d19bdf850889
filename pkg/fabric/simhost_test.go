package fabric

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// TestSimHost: Options.Host (--sim-host) takes a node's id, its description, its node
// GUID or a port GUID, with or without 0x (a topology file's header
// names the start node by GUIDs without it); anything else says what is
// taken and suggests the nearest.
func TestSimHost(t *testing.T) {
	demo, err := netfile.ParseFile("../../testdata/fabrics/demo.net")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := netfile.ParseFile("../../testdata/fabrics/nolft.topo")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		nf         *netfile.Fabric
		host, want string // want: the node id, or the error
	}{
		{demo, "S-0c42a1030010b000", "S-0c42a1030010b000"},
		{demo, "spine02", "S-0c42a1030010b000"},
		{demo, "node001 mlx5_0", "H-0c42a10300300100"},
		{demo, "0x0c42a1030010b000", "S-0c42a1030010b000"}, // node GUID
		{demo, "0x0c42a10300300101", "H-0c42a10300300100"}, // port GUID
		{demo, "0C42A10300300100", "H-0c42a10300300100"},   // bare hex
		{topo, "0000000000200000", "S-0000000000200000"},   // the header's "Initiated from node"
		{topo, "0x506b4b030043f9e2", `no node has this id, description, node GUID or port GUID (the first node is "S-0000000000200002", "sw3", node GUID 0x0000000000200002)`},
		{demo, "spine1", `no node has this id, description, node GUID or port GUID (did you mean "spine01" or "spine02"?)`},
		{demo, "node001", `no node has this id, description, node GUID or port GUID (did you mean "node001 mlx5_0"?)`},
	}
	for _, tt := range tests {
		got, err := simHost(tt.nf, tt.host)
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("--sim-host %s: %q, want %q", tt.host, got, tt.want)
		}
	}
}
