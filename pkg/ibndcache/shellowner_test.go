package ibndcache

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// A port whose PortInfo was not read owns no port key: when an earlier
// node's shell port and a later node's read port share a GUID and
// number, the later port is the first serialized one with that key and
// gets its record (the shell gets none).
func TestShellPortOwnsNoKey(t *testing.T) {
	f, err := Unmarshal(readCaches(t)["2sw2path4hca.osm.cache"])
	if err != nil {
		t.Fatal(err)
	}
	var cas []*model.PhysPort
	for _, n := range f.Nodes {
		if !n.IsSwitch() {
			cas = append(cas, n.Port(1))
		}
	}
	shell, twin := cas[0], cas[1]
	twin.GUID = shell.GUID
	shell.HasInfo = false
	g, err := Unmarshal(checkRoundTrip(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if p := g.NodeByGUID(shell.Node.GUID()).Port(1); p != nil {
		t.Errorf("shell port written: %v", p)
	}
	p := g.NodeByGUID(twin.Node.GUID()).Port(1)
	if p == nil {
		t.Fatal("the read port sharing the shell's key was not written: the shell owned the key")
	}
	if r := twin.Remote; r != nil && (p.Remote == nil || p.Remote.Node.GUID() != r.Node.GUID() || p.Remote.Num != r.Num) {
		t.Errorf("twin's link %v, want to %v", p.Remote, r)
	}
}
