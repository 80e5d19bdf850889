package routing

import "github.com/ibfabric/ibdiag/pkg/model"

// Up/down and down/up hop tables, as OpenSM's updn and dnup routing
// engines build them (osm_ucast_updn.c, osm_ucast_dnup.c): a breadth-first
// search from every switch's LID that never takes a forbidden turn, over
// ranks given to the switches by a second breadth-first search.

// udDir is the direction of a step between two switches.
type udDir uint8

const (
	dirUp udDir = iota
	dirDown
	dirEqual
)

// udNode is a switch's state during the searches.
type udNode struct {
	rank    uint32
	id      uint64
	dir     udDir
	visited bool
}

const unranked = 0xFFFFFFFF

// ComputeUpDn builds the hop tables OpenSM's updn engine leaves (with
// its default options: no root GUID file, connect_roots off): the
// min-hop tables first, from which the roots are found (switches whose
// least-hop histogram over the CAs and routers has exactly one bar above
// 90 % and one above 5 % of them); without roots updn gives up and
// OpenSM keeps the min-hop tables (ok is false). Otherwise the switches
// are ranked by distance from the roots, the tables are cleared, and the
// up/down search runs from every switch in OpenSM order.
func ComputeUpDn(f *model.Fabric) (h *model.HopTables, ok bool) {
	h = model.ComputeHops(f)
	t := newUDTables(h)
	nodes := make([]udNode, len(t.sws))
	for i, n := range t.sws {
		nodes[i] = udNode{rank: unranked, id: n.GUID()}
	}
	roots := 0
	for i := range t.updnRoots(f, h.MaxLID()) {
		nodes[i].rank = 0
		roots++
	}
	if roots == 0 {
		return h, false
	}
	links := t.switchLinks()
	udRank(nodes, links)
	h.ClearHops()
	var queue []int
	for i := range t.sws {
		queue = t.upDownSearch(i, nodes, links, false, queue)
	}
	return h, true
}

// ComputeDnUp builds the hop tables OpenSM's dnup engine leaves (default
// options): switches with a CA or router neighbour are rank 0, the rest
// ranked by distance from them, and the down/up search runs from every
// switch in OpenSM order. With no such switch dnup gives up and OpenSM
// falls back to min-hop (ok is false, h holds the min-hop tables).
func ComputeDnUp(f *model.Fabric) (h *model.HopTables, ok bool) {
	h = model.NewSwitchHopTables(f)
	t := newUDTables(h)
	nodes := make([]udNode, len(t.sws))
	leaves := 0
	for i, n := range t.sws {
		nodes[i] = udNode{rank: unranked}
		for p := 0; p <= n.NumPorts(); p++ {
			if pp := n.Port(p); pp != nil && pp.Remote != nil && !pp.Remote.Node.IsSwitch() {
				nodes[i].rank = 0
				leaves++
				break
			}
		}
	}
	if leaves == 0 {
		return model.ComputeHops(f), false
	}
	links := t.switchLinks()
	udRank(nodes, links)
	var queue []int
	for i := range t.sws {
		queue = t.upDownSearch(i, nodes, links, true, queue)
	}
	return h, true
}

// udTables is the searches' view of hop tables: the switches with tables
// in OpenSM map order, their matrices and their indices.
type udTables struct {
	sws  []*model.Node
	mats []*model.LIDMatrix // parallel to sws
	pos  map[*model.Node]int
}

func newUDTables(h *model.HopTables) *udTables {
	t := &udTables{sws: h.Switches()}
	t.mats = make([]*model.LIDMatrix, len(t.sws))
	t.pos = make(map[*model.Node]int, len(t.sws))
	for i, n := range t.sws {
		t.mats[i] = h.Matrix(n)
		t.pos[n] = i
	}
	return t
}

// updnRoots returns the switches updn_find_root_nodes_by_min_hop ranks
// as roots, by index, from min-hop tables indexing LIDs up to maxLID.
func (t *udTables) updnRoots(f *model.Fabric, maxLID uint16) map[int]bool {
	casPerSw := make(map[uint16]int)
	cas := 0
	for _, n := range f.Nodes {
		if n.IsSwitch() {
			continue
		}
		for _, pp := range n.Ports {
			if pp == nil || pp.Remote == nil || !pp.Remote.Node.IsSwitch() {
				continue
			}
			if lp := f.PortByGUID(pp.GUID); lp == nil || lp.Phys != pp {
				continue // not a port OpenSM's port table holds
			}
			casPerSw[pp.Remote.Node.SMALID()]++
			cas++
		}
	}
	thd1, thd2 := float64(cas)*0.9, float64(cas)*0.05
	roots := make(map[int]bool)
	for i, m := range t.mats {
		var hist [64]int
		for lid, c := range casPerSw {
			if lid == 0 || lid > maxLID {
				continue
			}
			if v := m.LeastHops(lid); v < 64 {
				hist[v] += c
			}
		}
		over1, over2 := 0, 0
		for _, v := range hist {
			if float64(v) > thd1 {
				over1++
			}
			if float64(v) > thd2 {
				over2++
			}
		}
		if over1 == 1 && over2 == 1 {
			roots[i] = true
		}
	}
	return roots
}

// swLink is a link from a switch with tables to another (or itself).
type swLink struct {
	peer       int // index of the remote switch
	remotePort int
}

// switchLinks lists, for each switch with tables, its links to switches
// with tables in port order (ports 1..N), as osm_node_get_remote_node
// sees them.
func (t *udTables) switchLinks() [][]swLink {
	out := make([][]swLink, len(t.sws))
	for i, n := range t.sws {
		for p := 1; p <= n.NumPorts(); p++ {
			pp := n.Port(p)
			if pp == nil || pp.Remote == nil {
				continue
			}
			if r, ok := t.pos[pp.Remote.Node]; ok {
				out[i] = append(out[i], swLink{peer: r, remotePort: int(pp.Remote.Num)})
			}
		}
	}
	return out
}

// udRank gives every switch reachable from a rank-0 switch its distance
// from the nearest one (updn_subn_rank, dnup_subn_rank).
func udRank(nodes []udNode, links [][]swLink) {
	var queue []int
	for i := range nodes {
		if nodes[i].rank == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, l := range links[u] {
			r := l.peer
			if nodes[r].rank > nodes[u].rank+1 {
				nodes[r].rank = nodes[u].rank + 1
				queue = append(queue, r)
			}
		}
	}
}

// updnDir is updn_get_dir: the direction of a step from cur to rem.
func updnDir(cur, rem *udNode) udDir {
	switch {
	case cur.rank == 0 && rem.rank == 0:
		return dirUp
	case cur.rank < rem.rank:
		return dirDown
	case cur.rank > rem.rank:
		return dirUp
	case cur.id > rem.id:
		return dirUp
	}
	return dirDown
}

// dnupDir is dnup_get_dir.
func dnupDir(cur, rem *udNode) udDir {
	switch {
	case cur.rank == 0 && rem.rank == 0:
		return dirEqual
	case cur.rank < rem.rank:
		return dirDown
	case cur.rank > rem.rank:
		return dirUp
	}
	return dirEqual
}

// upDownSearch is updn_bfs_by_node (dnup false) or dnup_bfs_by_node
// (dnup true) from switch start: its LID gets 0 hops at port 0, then
// each switch taken from the queue offers its least hop count + 1 to
// every neighbour switch over a legal turn (updn: never down then up;
// dnup: never up then down); a neighbour port whose entry gets lower is
// set, and the neighbour queued with the step's direction unless it is
// already queued. queue is scratch space, returned for reuse.
func (t *udTables) upDownSearch(start int, nodes []udNode, links [][]swLink, dnup bool, queue []int) []int {
	lid := t.sws[start].SMALID()
	_ = t.mats[start].Set(lid, 0, 0) // port 0 is in every matrix
	nodes[start].dir = dirUp
	if dnup {
		nodes[start].dir = dirDown
	}
	queue = append(queue[:0], start)
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		nodes[u].visited = false
		cur := nodes[u].dir
		least := t.mats[u].LeastHops(lid)
		for _, l := range links[u] {
			r := l.peer
			var next udDir
			if dnup {
				next = dnupDir(&nodes[u], &nodes[r])
				if cur == dirUp && next == dirDown {
					continue
				}
			} else {
				next = updnDir(&nodes[u], &nodes[r])
				if cur == dirDown && next == dirUp {
					continue
				}
			}
			mr := t.mats[r]
			if l.remotePort > mr.NumPorts() {
				continue // OpenSM refuses a port out of range
			}
			if int(least)+1 < int(mr.Get(lid, l.remotePort)) {
				_ = mr.Set(lid, l.remotePort, least+1) // lowers column 0 too
				if !nodes[r].visited {
					nodes[r].dir = next
					nodes[r].visited = true
					queue = append(queue, r)
				}
			}
		}
	}
	return queue
}
