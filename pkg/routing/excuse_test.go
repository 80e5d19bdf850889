package routing_test

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestExcuse: only black holes with no route at all (0xFF) to an owned
// LID, where the rule says the engine has none, become information; the
// result is clean when nothing else is left.
func TestExcuse(t *testing.T) {
	r := load(t, fabrics+"loop.net")
	sw1, h2, h3 := r.lid(t, "sw1"), r.lid(t, "h2"), r.lid(t, "h3")
	r.setEntry(t, "sw2", sw1, routing.NoRoute) // excused below
	r.setEntry(t, "sw3", h3, routing.NoRoute)  // sw3 owns port 1 -> h3: not excused
	r.setEntry(t, "sw1", h2, 7)                // down port: never excused
	res := routing.Check(r.f, r.tabs, nil)
	// sw2 alone meets its hole; all three switches meet sw3's; sw1 alone
	// its down port
	if res.Broken != 5 {
		t.Fatalf("broken %d, want 5", res.Broken)
	}
	res.Excuse(func(at *model.Node, dlid uint16) bool { return dlid == sw1 || dlid == h2 })
	if res.Unrouted != 1 || res.Broken != 4 || res.Count(routing.KindUnrouted) != 1 || res.Clean() {
		t.Errorf("after Excuse: unrouted %d broken %d findings %d clean %v", res.Unrouted, res.Broken, res.Count(routing.KindUnrouted), res.Clean())
	}
	for _, fd := range res.Findings {
		if fd.Kind == routing.KindUnrouted && (fd.DLID != sw1 || fd.At.Description() != "sw2" || fd.Err != nil) {
			t.Errorf("excused %s", describe(fd))
		}
	}
	r.setEntry(t, "sw3", h3, 1)
	r.setEntry(t, "sw1", h2, 2)
	res = routing.Check(r.f, r.tabs, nil)
	res.Excuse(func(at *model.Node, dlid uint16) bool { return true })
	if !res.Clean() || res.Unrouted != 1 {
		t.Errorf("only excused findings: clean %v unrouted %d %v", res.Clean(), res.Unrouted, res.Findings)
	}
}
