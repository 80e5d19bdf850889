package model

import (
	"fmt"
	"math/bits"
	"slices"
)

// HopTables holds the min-hop tables OpenSM's unicast manager builds: one
// LIDMatrix per switch, with a row for every switch base LID. It is built
// by ComputeHops and is safe for concurrent reads afterwards.
type HopTables struct {
	f        *Fabric
	switches []*Node // OpenSM switch map order
	pos      map[*Node]int
	mats     []LIDMatrix // parallel to switches
	maxLID   uint16
	passes   int
	// index maps a switch LID to its row+1 in every matrix while the
	// matrices share one row layout (nil otherwise).
	index []uint32
}

// SortOpenSMOrder sorts switches in the order OpenSM iterates its switch
// map: by NodeGUID as stored in network byte order and compared as a
// native little-endian integer, i.e. by the byte-reversed GUID.
func SortOpenSMOrder(nodes []*Node) {
	slices.SortStableFunc(nodes, func(a, b *Node) int {
		x, y := bits.ReverseBytes64(a.GUID()), bits.ReverseBytes64(b.GUID())
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}

// hopLink is one switch-to-switch link used by the relaxation.
type hopLink struct {
	port  int    // local port number
	peer  int    // index of the neighbour switch
	seen  uint32 // neighbour's version when last folded in, 0 = never
	least []byte // neighbour's least-hops vector (column 0, by row)
}

// ComputeHops builds the min-hop tables of f as OpenSM's unicast manager
// does (osm_ucast_mgr):
//
//  1. Every switch with a unicast base LID (and, when its SwitchInfo was
//     read, a non-zero LinearFDBCap) gets a matrix with a row for each
//     switch LID, all NoPath.
//  2. Seed: a switch's own LID has 0 hops in column 0; for each port
//     1..N whose peer is another such switch, that switch's LID has 1 hop
//     through the port (every port weighs 1).
//  3. Relaxation passes over the switches in OpenSM map order (see
//     SortOpenSMOrder), at most #switches−1 of them, stopping after a pass
//     that changes nothing: for each port leading to another switch over
//     a healthy link (both ends Healthy), every switch LID whose least hop
//     count at the neighbour plus 1 beats the port's entry takes that
//     value. Updates are in place, so later switches in a pass see them.
//
// CA and router LIDs get no rows; LeastHopsTo and HopsBetween derive them.
func ComputeHops(f *Fabric) *HopTables {
	h := NewSwitchHopTables(f)
	h.minHop()
	return h
}

// hopSwitches returns the switches OpenSM keeps hop tables for, in
// OpenSM map order: every switch with a unicast base LID and, when its
// SwitchInfo was read, a non-zero LinearFDBCap.
func hopSwitches(f *Fabric) []*Node {
	var out []*Node
	seen := make(map[*Node]bool)
	for _, n := range f.Nodes {
		if !n.IsSwitch() || seen[n] {
			continue
		}
		if n.HasSwitchInfo && n.SwitchInfo.LinearFDBCap == 0 {
			continue
		}
		lid := n.SMALID()
		if lid == 0 || lid > 0xBFFF {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	SortOpenSMOrder(out)
	return out
}

// NewSwitchHopTables returns hop tables for the switches ComputeHops
// keeps tables for, in OpenSM map order, each with a row for every switch
// base LID and every entry NoPath (osm_switch_prepare_path_rebuild and
// osm_switch_clear_hops): the tables ComputeHops starts from, for engines
// that fill them their own way (the matrices' Set).
func NewSwitchHopTables(f *Fabric) *HopTables {
	h := &HopTables{f: f, pos: make(map[*Node]int)}
	h.maxLID = f.MaxLID()
	h.switches = hopSwitches(f)
	for _, n := range h.switches {
		if lid := n.SMALID(); lid > h.maxLID {
			h.maxLID = lid
		}
	}

	// Shared row index: one row per distinct switch LID, by ascending LID.
	lids := make([]uint16, 0, len(h.switches))
	for i, n := range h.switches {
		h.pos[n] = i
		lids = append(lids, n.SMALID())
	}
	slices.Sort(lids)
	lids = slices.Compact(lids)
	index := make([]uint32, int(h.maxLID)+1)
	for r, l := range lids {
		index[l] = uint32(r + 1)
	}
	h.index = index
	nrows := len(lids)

	// One backing array for every matrix.
	total := 0
	for _, n := range h.switches {
		total += nrows * (n.NumPorts() + 1)
	}
	data := make([]byte, total)
	for i := range data {
		data[i] = NoPath
	}
	h.mats = make([]LIDMatrix, len(h.switches))
	off := 0
	for i, n := range h.switches {
		w := n.NumPorts() + 1
		h.mats[i] = LIDMatrix{
			width:  w,
			index:  index,
			lids:   lids,
			data:   data[off : off+nrows*w : off+nrows*w],
			shared: true,
		}
		off += nrows * w
	}
	return h
}

// minHop fills tables fresh from NewSwitchHopTables as
// osm_ucast_mgr_build_lid_matrices does.
func (h *HopTables) minHop() {
	index := h.index
	nrows := 0
	if len(h.mats) > 0 {
		nrows = h.mats[0].NumRows()
	}
	least := make([]byte, nrows*len(h.switches))
	for i := range least {
		least[i] = NoPath
	}
	leasts := make([][]byte, len(h.switches))
	for i := range h.switches {
		leasts[i] = least[i*nrows : (i+1)*nrows : (i+1)*nrows]
	}

	// Seed and collect the links the relaxation walks.
	links := make([][]hopLink, len(h.switches))
	for i, n := range h.switches {
		m := &h.mats[i]
		r := int(index[n.SMALID()] - 1)
		m.data[r*m.width] = 0
		leasts[i][r] = 0
		for p := 1; p < len(n.Ports) && p < m.width; p++ {
			pp := n.Ports[p]
			if pp == nil || pp.Remote == nil {
				continue
			}
			rn := pp.Remote.Node
			j, ok := h.pos[rn]
			if !ok || rn == n {
				continue
			}
			rr := int(index[rn.SMALID()] - 1)
			m.data[rr*m.width+p] = 1
			if m.data[rr*m.width] > 1 {
				m.data[rr*m.width] = 1
				leasts[i][rr] = 1
			}
			if pp.Healthy && pp.Remote.Healthy {
				links[i] = append(links[i], hopLink{port: p, peer: j, least: leasts[j]})
			}
		}
	}

	// Relaxation. version[j] counts changes of switch j's least vector;
	// a link whose neighbour did not change since it was last folded in
	// cannot lower anything and is skipped.
	version := make([]uint32, len(h.switches))
	for i := range version {
		version[i] = 1
	}
	active := make([]hopLink, 0, 64)
	for pass := 0; pass < len(h.switches)-1; pass++ {
		changed := false
		for i := range h.switches {
			active = active[:0]
			for k := range links[i] {
				l := &links[i][k]
				if l.seen == version[l.peer] {
					continue
				}
				l.seen = version[l.peer]
				active = append(active, *l)
			}
			if len(active) == 0 {
				continue
			}
			m := &h.mats[i]
			ch, lower := relaxRows(m.data, m.width, leasts[i], active)
			if ch {
				changed = true
			}
			if lower {
				version[i]++
			}
		}
		h.passes++
		if !changed {
			break
		}
	}
}

// relaxRows folds the neighbours' least-hops vectors into a switch's
// matrix row by row; it reports whether any entry changed and whether
// column 0 changed. Column 0 and the switch's least vector stay equal.
func relaxRows(data []byte, width int, least []byte, active []hopLink) (changed, lower bool) {
	for r := range least {
		row := data[r*width : r*width+width]
		best := row[0]
		for k := range active {
			v := active[k].least[r]
			if v >= NoPath-1 {
				continue
			}
			v++
			p := active[k].port
			if v < row[p] {
				row[p] = v
				changed = true
				if v < best {
					best = v
				}
			}
		}
		if best < row[0] {
			row[0] = best
			least[r] = best
			lower = true
		}
	}
	return changed, lower
}

// Switches returns the switches that have tables, in OpenSM map order.
func (h *HopTables) Switches() []*Node { return h.switches }

// Matrix returns the LID matrix of switch sw, or nil if it has none.
func (h *HopTables) Matrix(sw *Node) *LIDMatrix {
	i, ok := h.pos[sw]
	if !ok {
		return nil
	}
	return &h.mats[i]
}

// MaxLID returns the largest LID of the subnet when the tables were built.
func (h *HopTables) MaxLID() uint16 { return h.maxLID }

// ClearHops sets every entry of every table to NoPath, keeping the rows
// (osm_switch_clear_hops), as an engine does before its own search.
func (h *HopTables) ClearHops() {
	for i := range h.mats {
		h.mats[i].Reset()
	}
}

// Passes returns the number of relaxation passes run (the last one
// changed nothing unless the pass limit was reached).
func (h *HopTables) Passes() int { return h.passes }

// LeastHopsTo returns the least hop count from switch sw to lid, NoPath
// when there is none or sw has no table:
//   - a switch LID (base or LMC range): the switch's matrix, 0 for sw's own;
//   - a CA or router port X whose peer is switch T: 1 if T is sw, else the
//     least hops from sw to T's LID plus 1; NoPath when X has no switch
//     peer or T has no table.
func (h *HopTables) LeastHopsTo(sw *Node, lid uint16) uint8 {
	m := h.Matrix(sw)
	if m == nil {
		return NoPath
	}
	p := h.f.PortByLID(lid)
	if p == nil {
		return m.LeastHops(lid)
	}
	t, extra := h.attach(p)
	if t == nil {
		return NoPath
	}
	return addHops(h.between(sw, t), extra)
}

// HopsBetween returns the number of links on a shortest path between two
// logical ports: 0 for the same port; 1 for a CA/router port and the
// switch it hangs on, or two ports linked directly; in general the hops
// between the switches they belong to (a switch port) or hang on (CA and
// router ports, +1 each). NoPath when either port has no switch with a
// table or the switches are not connected.
func (h *HopTables) HopsBetween(a, b *Port) uint8 {
	if a == nil || b == nil {
		return NoPath
	}
	if a == b {
		return 0
	}
	if a.Phys != nil && b.Phys != nil && a.Phys.Remote == b.Phys {
		return 1
	}
	ta, ea := h.attach(a)
	tb, eb := h.attach(b)
	if ta == nil || tb == nil {
		return NoPath
	}
	return addHops(addHops(h.between(ta, tb), ea), eb)
}

// attach returns the switch a logical port belongs to or hangs on, and
// the hops from the port to it.
func (h *HopTables) attach(p *Port) (*Node, uint8) {
	if p.Node != nil && p.Node.IsSwitch() {
		if _, ok := h.pos[p.Node]; ok {
			return p.Node, 0
		}
		return nil, 0
	}
	if p.Phys == nil || p.Phys.Remote == nil {
		return nil, 0
	}
	t := p.Phys.Remote.Node
	if !t.IsSwitch() {
		return nil, 0
	}
	if _, ok := h.pos[t]; !ok {
		return nil, 0
	}
	return t, 1
}

// between returns the least hops from switch a to switch b (both with
// tables).
func (h *HopTables) between(a, b *Node) uint8 {
	if a == b {
		return 0
	}
	return h.mats[h.pos[a]].LeastHops(b.SMALID())
}

func addHops(h, n uint8) uint8 {
	if h == NoPath || int(h)+int(n) >= int(NoPath) {
		return NoPath
	}
	return h + n
}

// NewHopTables returns hop tables without rows for the switches OpenSM
// keeps tables for (see ComputeHops), in OpenSM map order, indexing LIDs
// up to the fabric's highest. SetHops fills them.
func NewHopTables(f *Fabric) *HopTables {
	h := &HopTables{f: f, pos: make(map[*Node]int)}
	h.maxLID = f.MaxLID()
	h.switches = hopSwitches(f)
	h.mats = make([]LIDMatrix, len(h.switches))
	for i, n := range h.switches {
		h.pos[n] = i
		if lid := n.SMALID(); lid > h.maxLID {
			h.maxLID = lid
		}
	}
	for i, n := range h.switches {
		h.mats[i].Init(n.NumPorts())
		h.mats[i].SetMinLIDSize(h.maxLID)
	}
	return h
}

// SetHops stores hops for (lid, port) in switch sw's table and lowers
// column 0 when hops is smaller (osm_switch_set_hops). It fails for a
// switch without a table, LID 0, a LID above MaxLID or a port out of
// range.
func (h *HopTables) SetHops(sw *Node, lid uint16, port int, hops uint8) error {
	i, ok := h.pos[sw]
	if !ok {
		return fmt.Errorf("hop tables: switch 0x%016x has no table", sw.GUID())
	}
	if lid == 0 || lid > h.maxLID {
		return fmt.Errorf("hop tables: LID %d outside 1..%d", lid, h.maxLID)
	}
	return h.mats[i].Set(lid, port, hops)
}
