package routing

import "github.com/ibfabric/ibdiag/pkg/model"

// RoutedHops returns the hop tables of the routes the forwarding tables t
// give ("as routed"): for every switch with a table and every LID a port
// owns (every LID of an LMC range), the number of links the route from
// the switch crosses to reach the LID's port, stored at the port the
// switch's LFT forwards the LID to, and in column 0; a switch's own LIDs
// have 0 at port 0. A LID whose route from a switch breaks (black hole,
// down port, loop, a switch without a table on the way, a CA that does
// not own it) has no entry for that switch.
//
// These are exactly the tables OpenSM's dfsssp, sssp and nue engines
// leave behind: they record, for each destination LID, the hop count of
// the Dijkstra tree they program into the LFTs at the tree's port
// (osm_ucast_dfsssp.c update_lft, osm_ucast_nue.c).
func RoutedHops(f *model.Fabric, t *Tables) *model.HopTables {
	h := model.NewHopTables(f)
	sws := h.Switches()
	idx := make(map[*model.Node]int, len(sws))
	for i, n := range sws {
		idx[n] = i
	}
	const (
		unknown = iota
		active
		done
	)
	state := make([]uint8, len(sws))
	hops := make([]uint8, len(sws))
	maxLID := h.MaxLID()
	var resolve func(i int, lid uint16) uint8
	resolve = func(i int, lid uint16) uint8 {
		switch state[i] {
		case done:
			return hops[i]
		case active:
			return model.NoPath // a loop
		}
		state[i] = active
		v, port := routedStep(f, t, sws[i], lid, idx, func(j int) uint8 { return resolve(j, lid) })
		state[i], hops[i] = done, v
		if v != model.NoPath {
			_ = h.SetHops(sws[i], lid, port, v)
		}
		return v
	}
	for l := uint32(1); l <= uint32(maxLID); l++ {
		lid := uint16(l)
		if f.PortByLID(lid) == nil {
			continue
		}
		clear(state)
		for i := range sws {
			resolve(i, lid)
		}
	}
	return h
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
