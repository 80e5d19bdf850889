package routing_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestCheckUnownedLIDs: routes to LIDs no discovered port owns (a port
// that is gone) are followed from every switch whose entry is a port and
// reported wherever they end; switches whose entry is 0xFF are not
// routes. loop.net: sw1 port 2 -> sw2, sw2 port 3 -> sw1, sw3 port 1 ->
// h3, sw1 port 7 has no link.
func TestCheckUnownedLIDs(t *testing.T) {
	r := load(t, fabrics+"loop.net")
	top := r.f.MaxLID()
	u := []uint16{top + 1, top + 2, top + 3, top + 4, top + 5}
	for _, sw := range []string{"sw1", "sw2", "sw3"} {
		n := r.node(t, sw)
		tab := slices.Clone(r.tabs.Table(n))
		for len(tab) <= int(u[len(u)-1]) {
			tab = append(tab, routing.NoRoute)
		}
		r.tabs.Set(n, tab)
	}
	r.setEntry(t, "sw1", u[0], 2) // then 0xFF at sw2
	r.setEntry(t, "sw1", u[1], 2) // sw1 <-> sw2
	r.setEntry(t, "sw2", u[1], 3)
	r.setEntry(t, "sw3", u[2], 1) // to h3
	r.setEntry(t, "sw1", u[3], 7) // no link
	// u[4]: 0xFF everywhere, an unused LID

	res := routing.Check(r.f, r.tabs, r.hops)
	var got []string
	for _, fd := range res.Findings {
		if fd.Dest != nil {
			t.Errorf("finding for an owned LID: %s", describe(fd))
			continue
		}
		got = append(got, describe(fd))
	}
	want := []string{
		fmt.Sprintf("black-hole lid %d at sw2 port 255 routes 1", u[0]),
		fmt.Sprintf("loop lid %d at sw1 port 2 routes 2 cycle sw1 sw2", u[1]),
		fmt.Sprintf("transit-ca lid %d at sw3 port 1 routes 1", u[2]),
		fmt.Sprintf("down-port lid %d at sw1 port 7 routes 1", u[3]),
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
	if res.Unowned != 4 || res.UnownedRoutes != 5 || res.Broken != 5 {
		t.Errorf("unowned %d, routes %d, broken %d; want 4, 5, 5", res.Unowned, res.UnownedRoutes, res.Broken)
	}
}
