// Package minhop computes the linear forwarding tables OpenSM's minhop
// routing engine programs, from a subnet's nodes, links and LIDs.
package minhop

import (
	"cmp"
	"errors"
	"math/bits"
	"slices"
)

// Graph is a subnet as OpenSM's minhop engine sees it when it
// programs the LFTs: the nodes, their links and the LIDs of their ports.
type Graph struct {
	Nodes []Node
	// LMC is the subnet's LMC (opensm -l): every end port's LIDs from
	// its base LID to base+2^LMC-1 are routed, and LMC > 0 turns on
	// OpenSM's choice of ports leading to systems and nodes the port's
	// other LIDs do not use.
	LMC uint8
}

// Node is a node of a Graph.
type Node struct {
	GUID    uint64 // node GUID
	SysGUID uint64 // system image GUID
	Switch  bool
	// Ports by port number: a switch's from its port 0, a CA's or
	// router's from port 1 (Ports[0] is then unused).
	Ports []Port
}

// Port is a port of a Node.
type Port struct {
	// LID is the port's base LID (a switch's on port 0 only), 0 for none;
	// LMC its LMC.
	LID uint16
	LMC uint8
	// Peer is the index of the node at the other end of the port's
	// link (a link OpenSM found and routes over), -1 when there is none;
	// PeerPort is the port there.
	Peer     int32
	PeerPort uint8
}

// ErrSize is LFTs' error for a subnet with more switches
// than its hop table holds.
var ErrSize = errors.New("minhop: too many switches for the min-hop table")

// MaxSwitches is the most switches LFTs routes (its hop
// table has a byte per pair of switches).
const MaxSwitches = 16384

// NoRoute is the LFT entry for a LID without a route.
const NoRoute = 0xff

// LFTs returns the linear forwarding tables OpenSM's minhop
// engine (opensm -R minhop, OpenSM 3.3's default) programs on a subnet
// on its first sweep: entry per LID, indexed by node (nil for a CA or
// router), each (maxLID/64+1)·64 long where maxLID is the subnet's
// highest LID; a LID without a route is NoRoute.
//
// As osm_ucast_mgr.c and osm_switch.c do: a switch's own LIDs go to port
// 0, an end port's LIDs on a switch to the port it hangs on, any other
// LID to a port on a shortest switch-to-switch path, the one with the
// fewest end-port LIDs routed through it so far (switch LIDs are not
// counted), the lowest port on a tie. LIDs are taken as OpenSM takes
// them: the end ports of the switch with the most end ports first (ties
// by node GUID as OpenSM's switch table orders them, byte-reversed),
// each switch's in port order, then the switches' LIDs; with LMC > 0,
// every port's first LIDs, then every port's second, and so on, the
// search for a LID's port starting after the port its previous LID took,
// and preferring a port leading to a system, then a node, that the
// port's other LIDs do not go to yet.
func LFTs(g *Graph) ([][]byte, error) {
	var sws []int32 // node index per switch number
	swNum := make([]int32, len(g.Nodes))
	maxLID := 0
	for n := range g.Nodes {
		nd := &g.Nodes[n]
		swNum[n] = -1
		if nd.Switch {
			swNum[n] = int32(len(sws))
			sws = append(sws, int32(n))
		}
		for p := range nd.Ports {
			if pp := &nd.Ports[p]; pp.LID != 0 && (p == 0) == nd.Switch {
				maxLID = max(maxLID, int(pp.LID)+(1<<pp.LMC)-1)
			}
		}
	}
	out := make([][]byte, len(g.Nodes))
	S := len(sws)
	if S == 0 {
		return out, nil
	}
	if S > MaxSwitches {
		return nil, ErrSize
	}
	dist, adj, adjPort, adjTo := minHopDistances(g, sws, swNum)

	// The end ports in OpenSM's port order list (its port_order_list
	// without the switches' port 0 and the ports hanging off no switch,
	// which change no count): switches by their number of end-port links,
	// most first, the tie kept in switch table order (node GUID as a
	// little-endian number), each switch's end ports in port order.
	byLoad := slices.Clone(sws)
	endLinks := make([]int, len(g.Nodes))
	for _, n := range sws {
		for p := 1; p < len(g.Nodes[n].Ports); p++ {
			if r := g.Nodes[n].Ports[p].Peer; r >= 0 && !g.Nodes[r].Switch {
				endLinks[n]++
			}
		}
	}
	slices.SortStableFunc(byLoad, func(a, b int32) int {
		return cmp.Compare(bits.ReverseBytes64(g.Nodes[a].GUID), bits.ReverseBytes64(g.Nodes[b].GUID))
	})
	slices.SortStableFunc(byLoad, func(a, b int32) int { return endLinks[b] - endLinks[a] })
	var order []endport
	for _, n := range byLoad {
		for p := 1; p < len(g.Nodes[n].Ports); p++ {
			pp := &g.Nodes[n].Ports[p]
			if pp.Peer < 0 || g.Nodes[pp.Peer].Switch {
				continue
			}
			order = append(order, endport{pp.Peer, pp.PeerPort})
		}
	}
	size := (maxLID/64 + 1) * 64
	r := &minHop{g: g, dist: dist, S: S, swNum: swNum}
	var eps []routedEnd
	if g.LMC == 0 {
		eps = routedEnds(g, order, swNum)
	}
	for s, n := range sws {
		lft := make([]byte, size)
		fillNoRoute(lft)
		out[n] = lft
		r.s, r.node, r.lft = s, n, lft
		r.adjPort, r.adjTo = adjPort[adj[s]:adj[s+1]], adjTo[adj[s]:adj[s+1]]
		clear(r.load[:])
		if g.LMC == 0 {
			r.routeLMC0(eps, sws)
			continue
		}
		r.priv = map[endport][]remoteUse{}
		for off := 0; off < 1<<g.LMC; off++ {
			for _, ep := range order {
				pp := &g.Nodes[ep.node].Ports[ep.port]
				if pp.LID == 0 || off >= 1<<pp.LMC {
					continue
				}
				lid := int(pp.LID) + off
				start := 1
				if off > 0 {
					start = int(lft[lid-1]) + 1
				}
				port := r.recommend(ep.node, ep.port, start)
				lft[lid] = port
				if port == NoRoute {
					continue
				}
				r.load[port]++
				if port > 0 {
					rem := g.Nodes[n].Ports[port].Peer
					uses := r.priv[ep]
					found := false
					for i := range uses {
						if uses[i].node == rem {
							uses[i].fwd++
							found = true
							break
						}
					}
					if !found {
						r.priv[ep] = append(uses, remoteUse{rem, 1})
					}
				}
			}
			for _, d := range sws {
				pp := &g.Nodes[d].Ports[0]
				if pp.LID == 0 || off >= 1<<pp.LMC {
					continue
				}
				lid := int(pp.LID) + off
				start := 1
				if off > 0 {
					start = int(lft[lid-1]) + 1
				}
				lft[lid] = r.recommend(d, 0, start)
			}
		}
	}
	return out, nil
}

// fillNoRoute sets every entry of lft to NoRoute, doubling the filled
// prefix with copy (one bulk write per step instead of one per entry).
func fillNoRoute(lft []byte) {
	if len(lft) == 0 {
		return
	}
	lft[0] = NoRoute
	for i := 1; i < len(lft); i *= 2 {
		copy(lft[i:], lft[:i])
	}
}

// routedEnd is an end port of the order list as routeLMC0 needs it on
// every switch: its LID, the number of the switch it hangs off and the
// port there, and whether that switch has a LID (without one only the
// switch itself routes the end port, as target says).
type routedEnd struct {
	lid   uint16
	port  uint8
	swLID bool
	sw    int32
}

// routedEnds resolves the order list once for all switches (the part of
// target that does not depend on the switch being routed), leaving out
// the end ports no switch routes: without a LID or a link to a switch.
func routedEnds(g *Graph, order []endport, swNum []int32) []routedEnd {
	eps := make([]routedEnd, 0, len(order))
	for _, ep := range order {
		pp := &g.Nodes[ep.node].Ports[ep.port]
		if pp.LID == 0 || pp.Peer < 0 || !g.Nodes[pp.Peer].Switch {
			continue
		}
		eps = append(eps, routedEnd{lid: pp.LID, port: pp.PeerPort, swLID: g.Nodes[pp.Peer].Ports[0].LID != 0, sw: swNum[pp.Peer]})
	}
	return eps
}

// remoteUse is one node an end port's LIDs are routed to from the
// switch being routed, and how many of them (OpenSM's struct
// osm_remote_node).
type remoteUse struct {
	node int32
	fwd  uint32
}

// minHop is the state of LFTs on one switch.
type minHop struct {
	g       *Graph
	dist    []uint8
	S       int
	swNum   []int32
	s       int   // switch number
	node    int32 // its node index
	lft     []byte
	adjPort []uint8 // its ports to other switches, in port order
	adjTo   []int32 // and the switch numbers there
	load    [256]uint32
	priv    map[endport][]remoteUse
	// scratch of routeLMC0, kept from switch to switch
	ccnt  []uint8
	clist []uint8
	setOf []int32
	index map[string]int32
}

// endport is a port of a CA or router (or a switch's port 0), by node
// index and port number.
type endport struct {
	node int32
	port uint8
}

// target returns the switch number a LID of port p of node n is routed
// to and the hops to it, or ok false when the switch has no route
// (OpenSM's NO_PATH); direct is the port when the switch itself has the
// LID or the end port hangs off it.
func (r *minHop) target(n int32, p uint8) (d int, least uint8, direct uint8, isDirect, ok bool) {
	nd := &r.g.Nodes[n]
	if nd.Switch {
		if n == r.node {
			return 0, 0, 0, true, true
		}
		if nd.Ports[0].LID == 0 {
			return 0, 0, 0, false, false
		}
		d = int(r.swNum[n])
	} else {
		pp := &nd.Ports[p]
		if pp.Peer < 0 || !r.g.Nodes[pp.Peer].Switch {
			return 0, 0, 0, false, false
		}
		if pp.Peer == r.node {
			return 0, 0, pp.PeerPort, true, true
		}
		if r.g.Nodes[pp.Peer].Ports[0].LID == 0 {
			return 0, 0, 0, false, false
		}
		d = int(r.swNum[pp.Peer])
	}
	least = r.dist[r.s*r.S+d]
	return d, least, 0, false, least != 0xff
}

// recommend is osm_switch_recommend_path for a LID of port p of node n
// with the search starting at port start, for LMC > 0 (routing_for_lmc).
func (r *minHop) recommend(n int32, p uint8, start int) byte {
	d, least, direct, isDirect, ok := r.target(n, p)
	if !ok {
		return NoRoute
	}
	if isDirect {
		return direct
	}
	uses := r.priv[endport{n, p}]
	find := func(match func(u *Node) bool) *remoteUse {
		for i := range uses {
			if match(&r.g.Nodes[uses[i].node]) {
				return &uses[i]
			}
		}
		return nil
	}
	sw := &r.g.Nodes[r.node]
	numPorts := len(sw.Ports)
	const none = ^uint32(0)
	leastPaths, leastOtherSys, leastOtherNode, leastFwd := none, none, none, none
	var best, bestOtherSys, bestOtherNode uint8
	found := false
	for i := start; i < start+numPorts; i++ {
		pn := i % numPorts
		if pn == 0 || !r.onShortest(uint8(pn), d, least) {
			continue
		}
		cc := r.load[pn]
		rem := &r.g.Nodes[sw.Ports[pn].Peer]
		rg := find(func(u *Node) bool { return u.SysGUID == rem.SysGUID })
		if rg == nil {
			if cc < leastOtherSys {
				leastOtherSys, bestOtherSys, leastFwd = cc, uint8(pn), 0
			}
		} else {
			rg = find(func(u *Node) bool { return u.GUID == rem.GUID })
			if rg == nil && cc < leastOtherNode {
				leastOtherNode, bestOtherNode, leastFwd = cc, uint8(pn), 0
			}
		}
		if cc < leastPaths {
			found, best, leastPaths = true, uint8(pn), cc
			if rg != nil && rg.fwd < leastFwd {
				leastFwd = rg.fwd
			}
		} else if rg != nil && cc == leastPaths && rg.fwd < leastFwd {
			leastFwd, best = rg.fwd, uint8(pn)
		}
	}
	if !found {
		return NoRoute
	}
	if best != 0 {
		if bestOtherSys != 0 {
			best = bestOtherSys
		} else if bestOtherNode != 0 {
			best = bestOtherNode
		}
	}
	return best
}

// onShortest reports whether port pn of the switch leads to a switch
// one hop nearer to switch d, which is least hops away.
func (r *minHop) onShortest(pn uint8, d int, least uint8) bool {
	for k, p := range r.adjPort {
		if p == pn {
			return r.dist[int(r.adjTo[k])*r.S+d]+1 == least
		}
	}
	return false
}

// routeLMC0 routes the switch's LFT for LMC 0: the candidates toward
// each destination switch are the ports to the neighbours one hop
// nearer, in port order, kept as sets shared by the destinations with
// the same candidates. A LID goes out of the least-loaded candidate,
// the first in port order on a tie. Loads only grow, so a set remembers
// its last choice (at index bi, with load bl): while that port's load
// is still bl it is still the choice, and after it is counted the next
// choice is the first later port still at bl (the earlier ones are
// above bl), or, when there is none, a new search.
func (r *minHop) routeLMC0(eps []routedEnd, sws []int32) {
	type cset struct {
		ports []uint8
		bi    int    // index of the remembered choice, -1: none
		bl    uint32 // its load then
	}
	S := r.S
	srow := r.dist[r.s*S : (r.s+1)*S]
	deg := len(r.adjPort)
	if r.ccnt == nil {
		r.ccnt, r.setOf, r.index = make([]uint8, S), make([]int32, S), map[string]int32{}
	}
	ccnt, setOf, index := r.ccnt, r.setOf, r.index
	clear(ccnt)
	clear(index)
	if cap(r.clist) < S*deg {
		r.clist = make([]uint8, S*deg)
	}
	clist := r.clist[:S*deg]
	for k, t := range r.adjTo {
		trow := r.dist[int(t)*S : int(t+1)*S]
		p := r.adjPort[k]
		for d, h := range trow {
			if h+1 == srow[d] {
				clist[d*deg+int(ccnt[d])] = p
				ccnt[d]++
			}
		}
	}
	var sets []cset
	for d := 0; d < S; d++ {
		setOf[d] = -1
		if d == r.s || srow[d] == 0xff || ccnt[d] == 0 {
			continue
		}
		c := clist[d*deg : d*deg+int(ccnt[d])]
		if id, ok := index[string(c)]; ok {
			setOf[d] = id
			continue
		}
		id := int32(len(sets))
		index[string(c)] = id
		sets = append(sets, cset{ports: c, bi: -1})
		setOf[d] = id
	}
	choose := func(d int, count bool) byte {
		id := setOf[d]
		if id < 0 {
			return NoRoute
		}
		cs := &sets[id]
		if cs.bi < 0 || r.load[cs.ports[cs.bi]] != cs.bl {
			cs.bi, cs.bl = 0, r.load[cs.ports[0]]
			for j, p := range cs.ports {
				if r.load[p] < cs.bl {
					cs.bi, cs.bl = j, r.load[p]
				}
			}
		}
		best := cs.ports[cs.bi]
		if !count {
			return best
		}
		next := -1
		for j := cs.bi + 1; j < len(cs.ports); j++ {
			if r.load[cs.ports[j]] == cs.bl {
				next = j
				break
			}
		}
		cs.bi = next
		r.load[best]++
		return best
	}
	// The end ports as target sees them: hanging off this switch
	// (direct), or off switch d, routed when d has a LID and a path
	// (setOf[d] < 0 when it has none). This is choose(d, true) inlined,
	// with the loads and the state of the set in use (its ports, bi, bl)
	// in local variables, written back when another set is used: the
	// same choices with far fewer memory accesses, which matters under
	// the race detector (it instruments every one but those of local
	// variables). A switch's end ports are together in the order list,
	// so the set changes seldom.
	load := r.load
	lft := r.lft
	cur := int32(-1)
	var ports [256]uint8
	np, bi, bl := 0, -1, uint32(0)
	for _, e := range eps {
		d := int(e.sw)
		if d == r.s {
			lft[e.lid] = e.port
			load[e.port]++
			continue
		}
		if !e.swLID {
			continue
		}
		id := setOf[d]
		if id < 0 {
			continue
		}
		if id != cur {
			if cur >= 0 {
				sets[cur].bi, sets[cur].bl = bi, bl
			}
			cur = id
			cs := &sets[id]
			np = copy(ports[:], cs.ports)
			bi, bl = cs.bi, cs.bl
		}
		if bi < 0 || load[ports[bi]] != bl {
			bi, bl = 0, load[ports[0]]
			for j := 1; j < np; j++ {
				if load[ports[j]] < bl {
					bi, bl = j, load[ports[j]]
				}
			}
		}
		best := ports[bi]
		next := -1
		for j := bi + 1; j < np; j++ {
			if load[ports[j]] == bl {
				next = j
				break
			}
		}
		bi = next
		load[best]++
		lft[e.lid] = best
	}
	if cur >= 0 {
		sets[cur].bi, sets[cur].bl = bi, bl
	}
	r.load = load
	for _, n := range sws {
		lid := r.g.Nodes[n].Ports[0].LID
		if lid == 0 {
			continue
		}
		d, _, direct, isDirect, ok := r.target(n, 0)
		switch {
		case !ok:
		case isDirect:
			r.lft[lid] = direct
		default:
			r.lft[lid] = choose(d, false)
		}
	}
}

// minHopDistances returns the hop counts between switches (dist[a*S+b],
// 0xff for none) over the links between switches, and the switch graph:
// switch s's ports to other switches are adjPort[adj[s]:adj[s+1]] in port
// order, leading to the switches adjTo.
func minHopDistances(g *Graph, sws, swNum []int32) (dist []uint8, adj []int32, adjPort []uint8, adjTo []int32) {
	S := len(sws)
	adj = make([]int32, S+1)
	for s := 0; s < S; s++ {
		adj[s] = int32(len(adjTo))
		nd := &g.Nodes[sws[s]]
		for p := 1; p < len(nd.Ports); p++ {
			pp := &nd.Ports[p]
			if pp.Peer < 0 || pp.Peer == sws[s] {
				continue
			}
			if t := swNum[pp.Peer]; t >= 0 {
				adjPort = append(adjPort, uint8(p))
				adjTo = append(adjTo, t)
			}
		}
	}
	adj[S] = int32(len(adjTo))
	dist = make([]uint8, S*S)
	for i := range dist {
		dist[i] = 0xff
	}
	// Breadth-first searches from 64 switches at a time, one bit per
	// search: a switch is reached at level L by the searches that reached
	// one of its neighbours at level L-1 and not it yet.
	visited := make([]uint64, S)
	frontier := make([]uint64, S)
	next := make([]uint64, S)
	for b0 := 0; b0 < S; b0 += 64 {
		clear(visited)
		clear(frontier)
		for i := 0; i < 64 && b0+i < S; i++ {
			src := b0 + i
			visited[src] |= 1 << i
			frontier[src] |= 1 << i
			dist[src*S+src] = 0
		}
		for level := 1; ; level++ {
			reached := false
			for v := 0; v < S; v++ {
				var m uint64
				for _, u := range adjTo[adj[v]:adj[v+1]] {
					m |= frontier[u]
				}
				m &^= visited[v]
				next[v] = m
				if m == 0 {
					continue
				}
				reached = true
				visited[v] |= m
				for ; m != 0; m &= m - 1 {
					i := bits.TrailingZeros64(m)
					dist[(b0+i)*S+v] = uint8(level)
				}
			}
			frontier, next = next, frontier
			if !reached || level == 0xfe {
				break
			}
		}
	}
	return dist, adj, adjPort, adjTo
}
