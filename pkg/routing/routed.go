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
			_ = h.SetHops(sw, lid, r.ports[i], v)
		}
	}
	return h
}

// router follows the routes of one LID from every switch at once,
// sharing each switch's outcome with the routes through it.
type router struct {
	f     *model.Fabric
	t     *Tables
	sws   []*model.Node
	idx   map[*model.Node]int
	state []uint8
	hops  []uint8 // per switch: hops to the LID, NoPath when broken
	ports []int   // per switch: the port the route leaves by
}

func newRouter(f *model.Fabric, t *Tables, sws []*model.Node) *router {
	r := &router{f: f, t: t, sws: sws, idx: make(map[*model.Node]int, len(sws)),
		state: make([]uint8, len(sws)), hops: make([]uint8, len(sws)), ports: make([]int, len(sws))}
	for i, n := range sws {
		r.idx[n] = i
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

func (r *router) resolve(i int, lid uint16) uint8 {
	switch r.state[i] {
	case rsDone:
		return r.hops[i]
	case rsActive:
		return model.NoPath // a loop
	}
	r.state[i] = rsActive
	v, port := routedStep(r.f, r.t, r.sws[i], lid, r.idx, func(j int) uint8 { return r.resolve(j, lid) })
	r.state[i], r.hops[i], r.ports[i] = rsDone, v, port
	return v
}

// NueHops returns the hop tables OpenSM's nue engine leaves (default
// options: one virtual layer, nue_include_switches off), from the
// forwarding tables t: the routed hop counts for CA and router LIDs (as
// RoutedHops), and for the LIDs of other switches, at the port the route
// leaves by, the count nue's last search left in its per-switch hop
// field. nue routes switch LIDs with a spanning tree that does not
// update that field, so every switch holds its hop count to the last CA
// LID nue routed: the highest LID of the CA port that comes last in
// OpenSM's port map (by byte-reversed port GUID), 0 when the switch has
// no route to it.
func NueHops(f *model.Fabric, t *Tables) *model.HopTables {
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

// routedStep is one switch's part of a route to lid: the hops from sw
// and the port they leave by (0 for sw's own LID); next resolves a
// neighbour switch by index.
func routedStep(f *model.Fabric, t *Tables, sw *model.Node, lid uint16, idx map[*model.Node]int, next func(int) uint8) (uint8, int) {
	if z := sw.Port(0); z != nil && owns(z, lid) {
		return 0, 0
	}
	if t.Table(sw) == nil {
		return model.NoPath, 0
	}
	out := t.Port(sw, lid)
	if out == NoRoute || out == 0 || int(out) > sw.NumPorts() {
		return model.NoPath, 0
	}
	pp := sw.Port(int(out))
	if pp == nil || pp.Remote == nil {
		return model.NoPath, 0
	}
	rem := pp.Remote
	if owns(rem, lid) {
		return 1, int(out)
	}
	if !rem.Node.IsSwitch() {
		return model.NoPath, 0
	}
	j, ok := idx[rem.Node]
	if !ok {
		return model.NoPath, 0
	}
	v := next(j)
	if v == model.NoPath || v >= model.NoPath-1 {
		return model.NoPath, 0
	}
	return v + 1, int(out)
}
