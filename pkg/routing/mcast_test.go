package routing_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// mftReader reads MFT blocks through r's querier; a switch in fail
// answers with an error.
func (r *routed) mftReader(fail *model.Node) routing.MFTReader {
	return func(ctx context.Context, sw *model.Node, block uint16, pos uint8) (smp.MulticastForwardingTable, error) {
		var tab smp.MulticastForwardingTable
		if sw == fail {
			return tab, errors.New("no answer")
		}
		var buf [smp.DataSize]byte
		if err := r.q.Get(ctx, sw.Path, smp.AttrMulticastFwdTable, smp.MFTModifier(block, pos), buf[:]); err != nil {
			return tab, err
		}
		return tab, tab.UnmarshalBinary(buf[:])
	}
}

// caPorts lists the PortGUIDs of the linked CA ports.
func caPorts(f *model.Fabric) []uint64 {
	var out []uint64
	for _, n := range f.Nodes {
		if n.IsSwitch() {
			continue
		}
		for _, pp := range n.Ports {
			if pp != nil && pp.Remote != nil {
				out = append(out, pp.GUID)
			}
		}
	}
	return out
}

// TestCheckMCast checks the broadcast tree the embedded simulator's SM
// programs on demo.net (every CA port a member) with the group's
// members known, unknown (taken from the tree), with a member no
// discovered port has, with a tree link's MTU lowered below the group's
// in the model, and with one switch's MFT unreadable; each asserts the
// counts and the findings' kinds and places.
func TestCheckMCast(t *testing.T) {
	r := load(t, fabrics+"demo.net")
	cas := caPorts(r.f)
	spine := r.node(t, "spine01")
	// a tree link of the spine: the first port its entry forwards to
	good, err := routing.ReadMFTs(context.Background(), r.f, []uint16{0xc000}, r.mftReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	sp, ok := good.Ports(spine, 0xc000)
	if !ok || len(sp) == 0 {
		t.Fatalf("spine01 forwards 0xc000 to %v (read %v)", sp, ok)
	}
	link := spine.Port(int(sp[0]))
	group := routing.MCastGroup{MLID: 0xc000, MTU: smp.MTU2048, Rate: smp.Rate10, Members: cas, MembersKnown: true}
	for _, c := range []struct {
		name    string
		group   func() routing.MCastGroup
		fail    *model.Node
		change  func() func()
		kinds   []string
		at      *model.Node
		reached int
		unknown int
	}{
		{name: "clean", group: func() routing.MCastGroup { return group }, reached: len(cas)},
		{name: "members from the tree", group: func() routing.MCastGroup {
			g := group
			g.Members, g.MembersKnown = nil, false
			return g
		}, reached: len(cas)},
		{name: "a member not in the fabric", group: func() routing.MCastGroup {
			g := group
			g.Members = append(append([]uint64{}, cas...), 0x1234)
			return g
		}, reached: len(cas), unknown: 1},
		{name: "link MTU 256", group: func() routing.MCastGroup { return group }, change: func() func() {
			old := link.Info.NeighborMTU
			link.Info.NeighborMTU = smp.MTU256
			return func() { link.Info.NeighborMTU = old }
		}, kinds: []string{routing.MCastMTU}, at: spine, reached: len(cas)},
		{name: "spine's MFT unreadable", group: func() routing.MCastGroup { return group }, fail: spine,
			kinds: []string{routing.MCastNoTable}, at: spine},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.change != nil {
				defer c.change()()
			}
			m, err := routing.ReadMFTs(context.Background(), r.f, []uint16{0xc000}, r.mftReader(c.fail))
			if err != nil {
				t.Fatal(err)
			}
			res := routing.CheckMCast(r.f, []routing.MCastGroup{c.group()}, m)
			gr := res.Groups[0]
			var kinds []string
			for _, fd := range gr.Findings {
				kinds = append(kinds, fd.Kind)
				// the expected kind at the switch (a link's: either end)
				if c.at != nil && fd.Kind == c.kinds[0] && fd.At != c.at && fd.At != link.Remote.Node {
					t.Errorf("%s at %v, want %s", fd.Kind, fd.At, c.at.Description())
				}
			}
			if c.fail == nil && (len(kinds) != len(c.kinds) || (len(kinds) > 0 && kinds[0] != c.kinds[0])) {
				t.Errorf("findings %v, want %v", kinds, c.kinds)
			}
			if c.fail != nil && (len(kinds) == 0 || kinds[0] != routing.MCastNoTable) {
				t.Errorf("findings %v, want %s first", kinds, routing.MCastNoTable)
			}
			if c.fail == nil && (gr.Reached != c.reached || gr.Members != len(cas) || gr.Unknown != c.unknown || gr.Switches != 3 || gr.Links != 2) {
				t.Errorf("reached %d of %d (unknown %d), %d switches, %d links; want %d of %d (%d), 3, 2",
					gr.Reached, gr.Members, gr.Unknown, gr.Switches, gr.Links, c.reached, len(cas), c.unknown)
			}
			if res.Clean() != (len(c.kinds) == 0) || res.Checked != 1 {
				t.Errorf("clean %v, checked %d", res.Clean(), res.Checked)
			}
		})
	}
}

// TestCheckMCastNothing: a group with no MFT entry and no member listed
// is not checked; with members and no entry it is mcast-no-tree.
func TestCheckMCastNothing(t *testing.T) {
	r := load(t, fabrics+"demo.net")
	m, err := routing.ReadMFTs(context.Background(), r.f, []uint16{0xc001}, r.mftReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	res := routing.CheckMCast(r.f, []routing.MCastGroup{{MLID: 0xc001}}, m)
	if res.Checked != 0 || !res.Clean() {
		t.Errorf("no entry, no member: checked %d, clean %v", res.Checked, res.Clean())
	}
	res = routing.CheckMCast(r.f, []routing.MCastGroup{{MLID: 0xc001, Members: caPorts(r.f), MembersKnown: true}}, m)
	if res.Checked != 1 || res.Count(routing.MCastNoTree) != 1 || res.Count("") != 1 {
		t.Errorf("members, no entry: checked %d, findings %+v", res.Checked, res.Groups[0].Findings)
	}
}
