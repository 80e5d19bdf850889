package routing

import (
	"math/bits"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// RoutedHops returns the hop tables of the routes the forwarding tables t
// give ("as routed"): for every switch with a table and every LID a port
// owns (every LID of an LMC range), the number of links the route from
// the switch crosses to reach the LID's port, stored at the port the
// switch's LFT forwards the LID to, and in column 0; a switch's own LIDs
// have 0 at port 0. A LID whose route from a switch breaks (black hole,
// down port, loop, a switch without a table on the way, a CA that does
// not own it) has no entry for that switch.
//
// These are exactly the tables OpenSM's dfsssp and sssp engines leave
// behind: they record, for each destination LID, the hop count of the
// Dijkstra tree they program into the LFTs at the tree's port
// (osm_ucast_dfsssp.c update_lft). nue does the same for CA and router
// LIDs (see NueHops).
func RoutedHops(f *model.Fabric, t *Tables) *model.HopTables {
	return routedTables(f, t, nil)
}

// routedTables fills hop tables with the routed hop counts; value, when
// not nil, replaces the count stored for (switch index, LID).
func routedTables(f *model.Fabric, t *Tables, value func(i int, lid uint16, hops uint8) uint8) *model.HopTables {
	h := model.NewHopTables(f)
	r := newRouter(f, t, h.Switches())
	maxLID := h.MaxLID()
	for l := uint32(1); l <= uint32(maxLID); l++ {
		lid := uint16(l)
		if f.PortByLID(lid) == nil {
			continue
		}
		r.resolveAll(lid)
		for i, sw := range r.sws {
			v := r.hops[i]
			if v == model.NoPath {
				continue
			}
			if value != nil {
				v = value(i, lid, v)
			}
			_ = h.SetHops(sw, lid, r.out[i], v)
		}
	}
	return h
}

// router follows the routes of one LID from every switch at once,
// sharing each switch's outcome with the routes through it.
type router struct {
	sws   []*model.Node
	own   [][2]uint16 // per switch: its LID range (0, 0: none)
	tabs  [][]byte    // per switch: its LFT (nil: not read)
	ports [][]rport   // per switch, per port 0..N: where the port leads
	state []uint8
	hops  []uint8 // per switch: hops to the LID, NoPath when broken
	out   []int   // per switch: the port the route leaves by
}

// rport is where a switch port leads.
type rport struct {
	linked bool
	lo, hi uint16 // the LID range of the port it reaches (0, 0: none)
	peer   int    // index of the switch it reaches, -1 for another node
}

func newRouter(f *model.Fabric, t *Tables, sws []*model.Node) *router {
	n := len(sws)
	r := &router{sws: sws, own: make([][2]uint16, n), tabs: make([][]byte, n), ports: make([][]rport, n),
		state: make([]uint8, n), hops: make([]uint8, n), out: make([]int, n)}
	idx := make(map[*model.Node]int, n)
	for i, sw := range sws {
		idx[sw] = i
	}
	lidRange := func(pp *model.PhysPort) (uint16, uint16) {
		b := pp.BaseLID()
		if b == 0 {
			return 0, 0
		}
		return b, uint16(min(uint32(b)+1<<pp.LMC()-1, 0xFFFF))
	}
	for i, sw := range sws {
		if z := sw.Port(0); z != nil {
			r.own[i][0], r.own[i][1] = lidRange(z)
		}
		r.tabs[i] = t.Table(sw)
		r.ports[i] = make([]rport, sw.NumPorts()+1)
		for p := 1; p <= sw.NumPorts(); p++ {
			pp := sw.Port(p)
			if pp == nil || pp.Remote == nil {
				continue
			}
			rp := rport{linked: true, peer: -1}
			rp.lo, rp.hi = lidRange(pp.Remote)
			if j, ok := idx[pp.Remote.Node]; ok {
				rp.peer = j
			}
			r.ports[i][p] = rp
		}
	}
	return r
}

const (
	rsUnknown = iota
	rsActive
	rsDone
)

// resolveAll follows lid's route from every switch.
func (r *router) resolveAll(lid uint16) {
	clear(r.state)
	for i := range r.sws {
		r.resolve(i, lid)
	}
}

// resolve returns the hops from switch i to lid and records the port the
// route leaves by: 0 hops through port 0 for its own LIDs, 1 when its
// LFT leads to the port owning lid, 1 + the next switch's hops when it
// leads to a switch; NoPath for a black hole, a down port, a loop, a
// table not read or a node that does not own lid.
func (r *router) resolve(i int, lid uint16) uint8 {
	switch r.state[i] {
	case rsDone:
		return r.hops[i]
	case rsActive:
		return model.NoPath // a loop
	}
	r.state[i] = rsActive
	v, port := model.NoPath, 0
	tab := r.tabs[i]
	switch {
	case r.own[i][0] != 0 && lid >= r.own[i][0] && lid <= r.own[i][1]:
		v = 0
	case tab == nil || int(lid) >= len(tab):
	default:
		out := int(tab[lid])
		if out == 0 || out >= len(r.ports[i]) || !r.ports[i][out].linked {
			break
		}
		rp := r.ports[i][out]
		switch {
		case rp.lo != 0 && lid >= rp.lo && lid <= rp.hi:
			v, port = 1, out
		case rp.peer >= 0:
			if w := r.resolve(rp.peer, lid); w < model.NoPath-1 {
				v, port = w+1, out
			}
		}
	}
	r.state[i], r.hops[i], r.out[i] = rsDone, v, port
	return v
}

// NueHops returns the hop tables OpenSM's nue engine leaves (default
// options: one virtual layer, nue_include_switches off) for the
// forwarding tables t. It replays nue over f (see nuereplay.go); when the
// replay programs the tables t holds, the tables are the routed hop
// counts with the count nue records in place of each, which differs from
// the route's length where nue's search backtracked or fell back to its
// escape paths, and for switch LIDs. Otherwise (t is not nue's routing,
// or nue was run with other options) they are derived from t alone
// (nueTableHops).
func NueHops(f *model.Fabric, t *Tables) *model.HopTables {
	h, _ := nueHops(f, t)
	return h
}

// nueHops is NueHops, and whether the replay gave the tables.
func nueHops(f *model.Fabric, t *Tables) (*model.HopTables, bool) {
	if h := nueReplayHops(f, t); h != nil {
		return h, true
	}
	return nueTableHops(f, t), false
}

// nueTableHops returns the hop tables nue leaves if t holds its routes
// and its search never reached an impasse: the routed hop counts for CA
// and router LIDs (as RoutedHops), and for the LIDs of other switches, at
// the port the route leaves by, the count nue's last search left in its
// per-switch hop field. nue routes switch LIDs with a spanning tree that
// does not update that field, so every switch holds its hop count to the
// last CA LID nue routed: the highest LID of the CA port that comes last
// in OpenSM's port map (by byte-reversed port GUID), 0 when the switch
// has no route to it.
func nueTableHops(f *model.Fabric, t *Tables) *model.HopTables {
	last := lastNueLID(f)
	sws := model.NewHopTables(f).Switches()
	stale := make([]uint8, len(sws))
	if last != 0 {
		r := newRouter(f, t, sws)
		r.resolveAll(last)
		for i, v := range r.hops {
			if v != model.NoPath {
				stale[i] = v
			}
		}
	}
	return routedTables(f, t, func(i int, lid uint16, v uint8) uint8 {
		p := f.PortByLID(lid)
		if p == nil || !p.Node.IsSwitch() || p.Node == sws[i] {
			return v
		}
		return stale[i]
	})
}

// lastNueLID is the last LID nue routes with its CA search: the highest
// LID of the last CA port (not router) in OpenSM's port map order.
func lastNueLID(f *model.Fabric) uint16 {
	var best *model.Port
	var bestKey uint64
	for _, n := range f.CAs() {
		for _, pp := range n.Ports {
			if pp == nil {
				continue
			}
			p := f.PortByGUID(pp.GUID)
			if p == nil || p.Phys != pp || p.BaseLID() == 0 {
				continue
			}
			if k := bits.ReverseBytes64(p.GUID); best == nil || k > bestKey {
				best, bestKey = p, k
			}
		}
	}
	if best == nil {
		return 0
	}
	_, hi := best.LIDRange()
	return hi
}
