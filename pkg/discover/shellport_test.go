package discover_test

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
)

// TestShellPortNotRegistered: a port reached by NodeInfo whose PortInfo
// failed (a shell) is not entered into the fabric's GUID and LID maps:
// only ports with a PortInfo own a GUID or a LID.
func TestShellPortNotRegistered(t *testing.T) {
	_, tr, _ := simSpec(t, `fattree:levels=2,radix=8;Error "H5" 100 21`, "", nil)
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Timeout: 50 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var shells []*model.PhysPort
	logical := 0
	for _, n := range res.Fabric.Nodes {
		for _, p := range n.Ports {
			switch {
			case p == nil:
			case !p.HasInfo:
				shells = append(shells, p)
			case !n.IsSwitch() || p.Num == 0:
				logical++
			}
		}
	}
	if len(shells) == 0 {
		t.Fatal("no shell port in the discovery")
	}
	for _, p := range shells {
		if lp := res.Fabric.PortByGUID(p.GUID); lp != nil && lp.Phys == p {
			t.Errorf("shell port %s registered as the owner of GUID 0x%016x", p, p.GUID)
		}
	}
	if got := res.Fabric.NumLogicalPorts(); got != logical {
		t.Errorf("%d logical ports registered, want %d (the ports with a PortInfo)", got, logical)
	}
}
