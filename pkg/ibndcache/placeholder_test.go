package ibndcache

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
)

// TestSwitchPortsAllWritten: a partial discovery that read no PortInfo
// of a spine (its unused ports included) writes a record for every port
// 1..NumPorts of every switch, the unread ones without PortInfo or
// remote port, so ibnetdiscover 44's --diff against a complete cache
// never meets a port only one side holds (see withPlaceholders).
func TestSwitchPortsAllWritten(t *testing.T) {
	tr := attach(t, `fattree:levels=2,radix=8,leaves=2;Error "S0" 100 21`, 1)
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Timeout: 5 * time.Second, Retries: -1, FixedTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	s0 := res.Fabric.NodeByGUID(0x200002)
	if s0 == nil || !s0.IsSwitch() {
		t.Fatalf("spine S0 not discovered")
	}
	if p := s0.Port(5); p != nil && p.HasInfo {
		t.Fatalf("S0 port 5's PortInfo was read: the case tests nothing")
	}
	b := checkRoundTrip(t, res.Fabric)
	g, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if !n.IsSwitch() {
			continue
		}
		for num := 1; num <= int(n.Info.NumPorts); num++ {
			p := n.Port(num)
			if p == nil || !p.HasInfo {
				t.Errorf("switch 0x%016x port %d has no record", n.GUID(), num)
				continue
			}
			if n.GUID() == 0x200002 && (p.Remote != nil || p.Info.PortPhysicalState != 0 || p.Info.LinkWidthActive != 0) {
				t.Errorf("S0 port %d: unread port written with a remote port or PortInfo", num)
			}
		}
	}
}
