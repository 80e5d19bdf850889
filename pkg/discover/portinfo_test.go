package discover_test

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
)

// TestFailedPortInfoLeavesNoPort: as in libibnetdisc, a port exists only
// once its PortInfo answered, or as a shell (no PortInfo) when a NodeInfo
// answered through it.
func TestFailedPortInfoLeavesNoPort(t *testing.T) {
	for _, id := range []string{"S0", "L2", "H3"} {
		t.Run(id, func(t *testing.T) {
			_, tr, _ := simSpec(t, `fattree:levels=2,radix=8;Error "`+id+`" 100 21`, "", nil)
			res := discoverAll(t, tr, discover.Config{MaxHops: -1, Timeout: peerTimeout, Retries: -1, FixedTimeout: true})
			if !res.Partial() {
				t.Fatal("not partial")
			}
			shells := 0
			for _, n := range res.Fabric.Nodes {
				for _, p := range n.Ports {
					if p == nil || p.HasInfo {
						continue
					}
					if p.Remote == nil {
						t.Errorf("%s: port without PortInfo and without link", p)
					}
					if n.Description() != id {
						t.Errorf("%s of %q has no PortInfo", p, n.Description())
					}
					shells++
				}
			}
			if shells == 0 {
				t.Error("no shell port")
			}
		})
	}
}
