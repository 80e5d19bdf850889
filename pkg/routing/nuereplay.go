package routing

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// A replay of OpenSM 3.3.23's nue routing engine (opensm/osm_ucast_nue.c)
// with its default options (nue_max_num_vls 1, nue_include_switches
// FALSE, no METIS), ported step for step: the network and complete
// channel dependency graph (cCDG) in nue's orders, the escape paths from
// the convex hull's most central switch, the modified Dijkstra on the
// cCDG with its colours, local backtracking, shortcuts and the fallback
// to the escape paths, the link weights, and the hop field every switch
// holds when nue writes it into the hop tables. Where nue's search
// reaches an impasse that field is not the length of the route nue
// programs, and the forwarding tables alone cannot tell it; the replay
// gives it, and is trusted only when its forwarding tables are the ones
// read from the switches.

const (
	nueInfinity = 0x7FFFFFFF // nue's INFINITY

	nueBlocked    = 0
	nueUnused     = 1
	nueEscapePath = 2

	nueWhite = 0
	nueBlack = 2

	nueUnset = 0xFF // no port or count (nue writes neither as 255)
)

// nueChannel is nue's channel_t: a link's two ends (LIDs, ports).
type nueChannel struct {
	llid  uint16
	lport uint8
	rlid  uint16
	rport uint8
}

// key orders channels as nue's compare_two_channel_id does: on the LIDs
// as stored, in network byte order.
func (c nueChannel) key() uint64 {
	return uint64(bits.ReverseBytes16(c.llid))<<48 | uint64(c.lport)<<32 | uint64(bits.ReverseBytes16(c.rlid))<<16 | uint64(c.rport)
}

func (c nueChannel) inverted() nueChannel {
	return nueChannel{c.rlid, c.rport, c.llid, c.lport}
}

type nueLink struct {
	ch     nueChannel
	to     *nueNode
	cn     *nueCNode
	weight uint64
}

type nueNode struct {
	lid          uint16
	sw           *model.Node
	lft, rec     []uint8 // by LID: the port nue programs and the count it records (nueUnset: none)
	numTerminals uint8
	links        []*nueLink

	used      *nueLink
	hops      uint8
	distance  uint64
	heapIndex int

	escape     *nueLink
	stack      []*nueLink
	foundAfter int32

	inHull, processed bool
	betw, delta       float64
	sigma             uint64
	ps                []*nueNode
	adjTermsInHull    uint8
	hasAdjDest        bool
}

func (n *nueNode) setHeapIndex(i int) { n.heapIndex = i }

type nueEdge struct {
	to    *nueCNode
	color int
	wet   bool
}

type nueCNode struct {
	ch        nueChannel
	edges     []nueEdge
	link      *nueLink
	distance  uint64
	heapIndex int
	color     int
	wet       bool
	status    uint8
	nextEdge  int
	pre       *nueCNode
}

func (c *nueCNode) setHeapIndex(i int) { c.heapIndex = i }

// nueReplay holds the replay's state and its results.
type nueReplay struct {
	f      *model.Fabric
	nodes  []*nueNode  // sorted by LID as nue sorts them
	byLID  []*nueNode  // by LID
	cnodes []*nueCNode // sorted by channel key
	byCh   map[nueChannel]*nueCNode
	real   []int // colour i's real colour (color_t.real_col)

	byNode map[*model.Node]*nueNode

	steps int         // bound on the work, against a bug looping forever
	black []*nueCNode // the cycle search's BLACK nodes, to whiten
	heap  *dHeap      // the searches' heap of channels
}

func (s *nueReplay) tick() error {
	s.steps--
	if s.steps < 0 {
		return errNueReplay
	}
	return nil
}

func (s *nueReplay) node(lid uint16) (*nueNode, error) {
	if n := s.byLID[lid]; n != nil {
		return n, nil
	}
	return nil, errNueReplay
}

func (s *nueReplay) cnode(ch nueChannel) (*nueCNode, error) {
	if c := s.byCh[ch]; c != nil {
		return c, nil
	}
	return nil, errNueReplay
}

// edgeBetween is get_ccdg_edge_betw_nodes.
func edgeBetween(a, b *nueCNode) *nueEdge {
	for i := range a.edges {
		if a.edges[i].to == b {
			return &a.edges[i]
		}
	}
	return nil
}

func (s *nueReplay) nodeColor(c *nueCNode) int { return s.real[c.color] }
func (s *nueReplay) edgeColor(e *nueEdge) int  { return s.real[e.color] }

func (s *nueReplay) edgeColorBetween(a, b *nueCNode) (int, error) {
	e := edgeBetween(a, b)
	if e == nil {
		return 0, errNueReplay
	}
	return s.edgeColor(e), nil
}

// paint sets the colour field p to c.
func (s *nueReplay) paint(p *int, c int) { *p = c }

// wetten marks a node or edge wet (painted in this search).
func (s *nueReplay) wetten(wet *bool) { *wet = true }

// redirect makes colour c's real colour to (color_t.real_col).
func (s *nueReplay) redirect(c, to int) { s.real[c] = to }

func resetEdgeColor(e *nueEdge) {
	if e.wet {
		e.color, e.wet = nueUnused, false
	}
}

// nuePort is a destination of nue's: a CA port or a switch's port 0.
type nuePort struct {
	p        *model.Port
	isSwitch bool
	swLID    uint16 // get_switch_lid: its switch's LID
	exit     uint8  // for a CA: the switch port it hangs on
}

// replayNue runs nue's routing over f as OpenSM 3.3.23 would, or returns
// an error where the replay cannot follow it (or nue would fail).
func replayNue(f *model.Fabric) (s *nueReplay, err error) {
	// A state the port does not expect (where nue itself would assert or
	// crash) must not take ibhops down: the caller falls back.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, errNueReplay
		}
	}()
	s = &nueReplay{f: f, byLID: make([]*nueNode, 1<<16), byCh: map[nueChannel]*nueCNode{},
		byNode: map[*model.Node]*nueNode{}}

	// get_base_lids_and_number_of_lids: the port map (by port GUID as
	// stored, byte-reversed), CA and switch ports.
	var ports []nuePort
	var totalLIDs uint64
	for _, n := range f.Nodes {
		switch {
		case n.IsSwitch():
			pp := n.Port(0)
			if pp == nil {
				return nil, errNueReplay
			}
			p := f.PortByGUID(pp.GUID)
			if p == nil || p.Phys != pp || p.BaseLID() == 0 {
				return nil, errNueReplay
			}
			ports = append(ports, nuePort{p: p, isSwitch: true, swLID: p.BaseLID()})
		case n.Type() == smp.NodeCA:
			for _, pp := range n.Ports {
				if pp == nil || pp.Remote == nil {
					continue
				}
				p := f.PortByGUID(pp.GUID)
				if p == nil || p.Phys != pp || p.BaseLID() == 0 {
					return nil, errNueReplay
				}
				r := pp.Remote
				if !r.Node.IsSwitch() || r.Node.Port(0) == nil {
					return nil, errNueReplay
				}
				ports = append(ports, nuePort{p: p, swLID: r.Node.Port(0).BaseLID(), exit: r.Num})
			}
		}
	}
	sort.Slice(ports, func(i, j int) bool {
		return bits.ReverseBytes64(ports[i].p.GUID) < bits.ReverseBytes64(ports[j].p.GUID)
	})
	byLID := map[uint16]nuePort{}
	for _, p := range ports {
		totalLIDs += 1 << p.p.LMC()
		lo, hi := p.p.LIDRange()
		for l := uint32(lo); l <= uint32(hi); l++ {
			byLID[uint16(l)] = p
		}
	}
	initWeight := totalLIDs * totalLIDs

	// nue_discover_network
	links := 0
	for _, sw := range f.Switches() {
		z := sw.Port(0)
		if z == nil || z.BaseLID() == 0 {
			return nil, errNueReplay
		}
		n := &nueNode{lid: z.BaseLID(), sw: sw, numTerminals: uint8(1) << z.LMC()}
		for p := 0; p <= sw.NumPorts(); p++ {
			pp := sw.Port(p)
			if pp == nil || pp.Remote == nil || pp.Remote.Node == sw {
				continue
			}
			r := pp.Remote
			if !r.Node.IsSwitch() {
				n.numTerminals += uint8(1) << r.LMC()
				continue
			}
			rz := r.Node.Port(0)
			if rz == nil {
				return nil, errNueReplay
			}
			n.links = append(n.links, &nueLink{ch: nueChannel{n.lid, uint8(p), rz.BaseLID(), r.Num}, weight: initWeight})
		}
		links += len(n.links)
		if s.byLID[n.lid] != nil {
			return nil, errNueReplay
		}
		s.byLID[n.lid] = n
		s.byNode[sw] = n
		s.nodes = append(s.nodes, n)
	}
	if len(s.nodes) == 0 {
		return nil, errNueReplay
	}
	sort.Slice(s.nodes, func(i, j int) bool {
		return bits.ReverseBytes16(s.nodes[i].lid) < bits.ReverseBytes16(s.nodes[j].lid)
	})
	for _, n := range s.nodes {
		for _, l := range n.links {
			if l.to, err = s.node(l.ch.rlid); err != nil {
				return nil, err
			}
		}
	}
	// build_complete_cdg
	for _, n := range s.nodes {
		fake := &nueCNode{ch: nueChannel{n.lid, 0, n.lid, 0}}
		for _, l := range n.links {
			fake.edges = append(fake.edges, nueEdge{to: &nueCNode{ch: l.ch}})
		}
		s.cnodes = append(s.cnodes, fake)
		for _, l := range n.links {
			c := &nueCNode{ch: l.ch, link: l}
			for _, m := range l.to.links {
				if l.ch.llid == m.ch.rlid && l.ch.lport == m.ch.rport {
					continue
				}
				c.edges = append(c.edges, nueEdge{to: &nueCNode{ch: m.ch}})
			}
			s.cnodes = append(s.cnodes, c)
		}
	}
	slices.SortStableFunc(s.cnodes, func(a, b *nueCNode) int {
		ka, kb := a.ch.key(), b.ch.key()
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	for _, c := range s.cnodes {
		if s.byCh[c.ch] != nil {
			return nil, errNueReplay // parallel channels nue cannot tell apart
		}
		s.byCh[c.ch] = c
	}
	for _, c := range s.cnodes {
		for i := range c.edges {
			if c.edges[i].to, err = s.cnode(c.edges[i].to.ch); err != nil {
				return nil, err
			}
		}
		if c.link != nil {
			c.link.cn = c
		}
	}
	// The work OpenSM would do, many times over: a bound for a bug.
	s.steps = 64 * (len(s.cnodes) + 1) * (len(s.cnodes) + 1) * (len(ports) + 1) * 4

	// nue_do_ucast_routing: init_linear_forwarding_tables
	for _, n := range s.nodes {
		n.lft = make([]uint8, int(f.MaxLID())+1)
		n.rec = make([]uint8, len(n.lft))
		for l := range n.lft {
			n.lft[l], n.rec[l] = nueUnset, nueUnset
		}
		z := n.sw.Port(0)
		for l := uint32(z.BaseLID()); l < uint32(z.BaseLID())+1<<z.LMC() && l < uint32(len(n.lft)); l++ {
			n.lft[l], n.rec[l] = 0, 0
		}
	}
	// distribute_lids_semi_randomly with one layer: the CA base LIDs in
	// port map order.
	var dests []nuePort
	maxLMC := uint8(0)
	for _, p := range ports {
		if p.p.LMC() > maxLMC {
			maxLMC = p.p.LMC()
		}
		if !p.isSwitch {
			dests = append(dests, p)
		}
	}
	if len(dests) == 0 {
		return nil, errNueReplay // nue skips the layer ("no desti"): not replayed
	}
	ncolors := max(len(dests), 1)<<maxLMC + 3
	s.real = make([]int, ncolors)
	for i := range s.real {
		s.real[i] = i
	}
	for _, c := range s.cnodes {
		c.color, c.wet = nueUnused, false
		for i := range c.edges {
			c.edges[i].color, c.edges[i].wet = nueUnused, false
		}
	}
	if err := s.markEscapePaths(dests); err != nil {
		return nil, err
	}
	color := nueEscapePath + 1
	for _, d := range dests {
		lo, hi := d.p.LIDRange()
		for l := uint32(lo); l <= uint32(hi); l++ {
			if color >= len(s.real) {
				return nil, errNueReplay
			}
			if err := s.route(d, uint16(l), color); err != nil {
				return nil, err
			}
			color++
			s.updateLFT(d, uint16(l))
			if err := s.updateWeights(d.swLID); err != nil {
				return nil, err
			}
		}
	}
	// Switch LIDs: a spanning tree each, which leaves the hop fields.
	for _, n := range s.nodes {
		d := byLID[n.lid]
		if d.p == nil {
			return nil, errNueReplay
		}
		lo, hi := d.p.LIDRange()
		for l := uint32(lo); l <= uint32(hi); l++ {
			if err := s.spanningTree(n); err != nil {
				return nil, err
			}
			if err := s.useEscapePaths(n.lid); err != nil {
				return nil, err
			}
			s.updateLFT(d, uint16(l))
			if err := s.updateWeights(uint16(l)); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// updateLFT is update_linear_forwarding_tables.
func (s *nueReplay) updateLFT(d nuePort, dlid uint16) {
	for _, n := range s.nodes {
		var exit uint8
		if n.used == nil {
			if d.isSwitch {
				continue
			}
			exit = d.exit
		} else {
			exit = n.used.ch.rport
		}
		if int(dlid) < len(n.lft) {
			n.lft[dlid], n.rec[dlid] = exit, n.hops
		}
	}
}

// updateWeights is update_network_link_weights.
func (s *nueReplay) updateWeights(desti uint16) error {
	for _, n := range s.nodes {
		if n.lid == desti {
			continue
		}
		add := uint64(n.numTerminals)
		cur := n.lid
		for {
			nn, err := s.node(cur)
			if err != nil || nn.used == nil {
				return errNueReplay
			}
			if err := s.tick(); err != nil {
				return err
			}
			nn.used.weight += add
			cur = nn.used.ch.llid
			if cur == desti {
				break
			}
		}
	}
	return nil
}

// spanningTree is calculate_spanning_tree_in_network: Dijkstra over the
// link weights from root, the tree in the nodes' escape fields.
func (s *nueReplay) spanningTree(root *nueNode) error {
	h := newDHeap(4, len(s.nodes))
	for _, n := range s.nodes {
		n.distance = nueInfinity
		n.escape = nil
		if err := h.insert(nueInfinity, n); err != nil {
			return err
		}
	}
	root.distance = 0
	if err := h.modifyKey(0, root.heapIndex); err != nil {
		return err
	}
	for it := h.extractRoot(); it != nil; it = h.extractRoot() {
		cur := it.(*nueNode)
		for _, l := range cur.links {
			adj := l.to
			nd := cur.distance + l.weight
			if nd < adj.distance {
				adj.escape = l
				adj.distance = nd
				if err := h.modifyKey(nd, adj.heapIndex); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// convexSubnetwork is calculate_convex_subnetwork.
func (s *nueReplay) convexSubnetwork(dests []nuePort) error {
	for _, n := range s.nodes {
		n.inHull, n.hasAdjDest = false, false
	}
	for _, d := range dests {
		n, err := s.node(d.swLID)
		if err != nil {
			return err
		}
		n.inHull, n.hasAdjDest = true, true
	}
	fifo := make([]*nueNode, 0, len(s.nodes))
	for _, n1 := range s.nodes {
		if !n1.inHull {
			continue
		}
		for _, n := range s.nodes {
			n.distance, n.processed = nueInfinity, false
		}
		n1.distance, n1.processed = 0, true
		fifo = append(fifo[:0], n1)
		for q := 0; q < len(fifo); q++ {
			u := fifo[q]
			for _, l := range u.links {
				if v := l.to; v.distance == nueInfinity {
					v.distance = u.distance + 1
					fifo = append(fifo, v)
				}
			}
		}
		for _, n2 := range s.nodes {
			if !n2.inHull || n2.processed {
				continue
			}
			n2.processed = true
			fifo = append(fifo[:0], n2)
			for q := 0; q < len(fifo); q++ {
				v := fifo[q]
				for _, l := range v.links {
					u := l.to
					if u.processed {
						continue
					}
					if u.distance+1 == v.distance {
						u.inHull, u.processed = true, true
						fifo = append(fifo, u)
					}
				}
			}
		}
	}
	return nil
}

// centralNode is get_central_node_wrt_subnetwork (Brandes' betweenness
// centrality as nue modifies it).
func (s *nueReplay) centralNode(dests []nuePort) (*nueNode, error) {
	for _, n := range s.nodes {
		n.betw = 0
		n.adjTermsInHull = 0
		n.ps = n.ps[:0]
	}
	for _, d := range dests {
		if d.swLID != d.p.BaseLID() {
			n, err := s.node(d.swLID)
			if err != nil {
				return nil, err
			}
			n.adjTermsInHull++
		}
	}
	fifo := make([]*nueNode, 0, len(s.nodes))
	var lifo []*nueNode
	upd := uint8(0) // kept from one node to the next, as in nue
	for _, src := range s.nodes {
		if !src.inHull {
			continue
		}
		for _, n := range s.nodes {
			n.ps = n.ps[:0]
			n.sigma = 0
			n.distance = nueInfinity
		}
		src.sigma, src.distance = 1, 0
		lifo = lifo[:0]
		fifo = append(fifo[:0], src)
		for q := 0; q < len(fifo); q++ {
			u := fifo[q]
			lifo = append(lifo, u)
			for _, l := range u.links {
				v := l.to
				if !v.inHull {
					continue
				}
				if v.distance == nueInfinity {
					v.distance = u.distance + 1
					fifo = append(fifo, v)
				}
				if v.distance == u.distance+1 {
					v.sigma += u.sigma
					if len(v.ps) >= len(v.links) {
						return nil, errNueReplay
					}
					v.ps = append(v.ps, u)
				}
			}
		}
		for j := 0; j < int(src.adjTermsInHull)+1; j++ {
			for _, n := range s.nodes {
				n.delta = 0
			}
			for k := len(lifo) - 1; k >= 0; k-- {
				v := lifo[k]
				switch {
				case src != v:
					upd = v.adjTermsInHull
				case j == 0:
					upd = v.adjTermsInHull
				case v.adjTermsInHull > 0:
					upd = v.adjTermsInHull - 1
				}
				for range upd {
					v.delta += (1.0 * float64(v.sigma)) / float64(v.sigma)
				}
				for _, u := range v.ps {
					u.delta += (1.0 * float64(u.sigma)) / float64(v.sigma) * (1 + v.delta)
				}
				if j > 0 || src != v {
					v.betw += v.delta
				}
			}
		}
	}
	var central *nueNode
	best := -1.0
	for _, n := range s.nodes {
		if n.inHull && best < n.betw {
			central, best = n, n.betw
		}
	}
	if central == nil {
		return nil, errNueReplay
	}
	return central, nil
}

func (s *nueReplay) escapeEdge(a, b *nueCNode) error {
	e := edgeBetween(a, b)
	if e == nil {
		return errNueReplay
	}
	s.paint(&e.color, nueEscapePath)
	return nil
}

// markEscapePaths is mark_escape_paths.
func (s *nueReplay) markEscapePaths(dests []nuePort) error {
	if err := s.convexSubnetwork(dests); err != nil {
		return err
	}
	central, err := s.centralNode(dests)
	if err != nil {
		return err
	}
	if err := s.spanningTree(central); err != nil {
		return err
	}
	undiscovered := 0
	for _, n := range s.nodes {
		if n.escape == nil {
			undiscovered++
		}
	}
	if undiscovered > 1 {
		return errNueReplay
	}
	var into []*nueLink
	for _, n1 := range s.nodes {
		cur := n1.escape
		for cur != nil {
			if err := s.tick(); err != nil {
				return err
			}
			n2, err := s.node(cur.ch.llid)
			if err != nil {
				return err
			}
			cc := cur.cn
			s.paint(&cc.color, nueEscapePath)
			next := n2.escape
			if next == nil {
				if !slices.Contains(into, cur) && len(into) < len(central.links) {
					into = append(into, cur)
				}
				break
			}
			nc := next.cn
			s.paint(&nc.color, nueEscapePath)
			if err := s.escapeEdge(nc, cc); err != nil {
				return err
			}
			if n1.hasAdjDest {
				rc, err := s.cnode(cur.ch.inverted())
				if err != nil {
					return err
				}
				rn, err := s.cnode(next.ch.inverted())
				if err != nil {
					return err
				}
				s.paint(&rc.color, nueEscapePath)
				s.paint(&rn.color, nueEscapePath)
				if err := s.escapeEdge(rc, rn); err != nil {
					return err
				}
				for _, l := range n2.links {
					adj := l.to.escape
					if adj == nil {
						continue
					}
					if cur.ch.llid == adj.ch.llid && cur.ch.rlid != adj.ch.rlid {
						if err := s.escapeEdge(rc, adj.cn); err != nil {
							return err
						}
					}
				}
			}
			cur = next
		}
	}
	for _, a := range into {
		for _, b := range into {
			if a == b {
				continue
			}
			rb, err := s.cnode(b.ch.inverted())
			if err != nil {
				return err
			}
			s.paint(&a.cn.color, nueEscapePath)
			s.paint(&rb.color, nueEscapePath)
			if err := s.escapeEdge(rb, a.cn); err != nil {
				return err
			}
		}
	}
	return nil
}

// useEscapePaths is use_escape_paths_to_solve_impass: the escape tree,
// turned towards the destination's switch.
func (s *nueReplay) useEscapePaths(swLID uint16) error {
	for _, n := range s.nodes {
		n.used = n.escape
	}
	n1, err := s.node(swLID)
	if err != nil {
		return err
	}
	if n1.used == nil {
		return nil
	}
	cur := n1.used
	n1.used = nil
	for cur != nil {
		if err := s.tick(); err != nil {
			return err
		}
		n2, err := s.node(cur.ch.llid)
		if err != nil {
			return err
		}
		rev := cur.ch.inverted()
		var rl *nueLink
		for _, l := range n1.links {
			if l.ch == rev {
				rl = l
			}
		}
		if rl == nil {
			return errNueReplay
		}
		cur = n2.used
		n2.used = rl
		n1 = n2
	}
	return nil
}

// pathInSubgraph is found_path_between_ccdg_nodes_in_subgraph.
func (s *nueReplay) pathInSubgraph(source, target *nueCNode) (bool, error) {
	cur := source
	cur.nextEdge, cur.pre = 0, nil
	found := false
	var err error
	for !found && cur != nil {
		if err = s.tick(); err != nil {
			break
		}
		var next *nueCNode
		for j := cur.nextEdge; j < len(cur.edges); j++ {
			e := &cur.edges[j]
			if e.to.status == nueBlack || s.edgeColor(e) <= nueUnused {
				continue
			}
			if e.to == target {
				found = true
			} else {
				next = e.to
				cur.nextEdge = j + 1
			}
			break
		}
		if next != nil {
			next.nextEdge, next.pre = 0, cur
		} else {
			if cur.status != nueBlack {
				s.black = append(s.black, cur)
			}
			cur.status = nueBlack
			next = cur.pre
		}
		cur = next
	}
	for _, c := range s.black {
		c.status = nueWhite
	}
	s.black = s.black[:0]
	return found, err
}

// inducesCycle is using_edge_induces_cycle_in_ccdg.
func (s *nueReplay) inducesCycle(head *nueCNode, e *nueEdge, color int) (bool, error) {
	tail := e.to
	if s.edgeColor(e) > nueUnused {
		return false, nil
	}
	if color == s.nodeColor(tail) {
		found, err := s.pathInSubgraph(tail, head)
		if err != nil {
			return false, err
		}
		if found {
			e.color = nueBlocked
			return true, nil
		}
		s.paint(&e.color, head.color)
		s.wetten(&e.wet)
		return false, nil
	}
	if s.nodeColor(tail) == nueUnused {
		s.paint(&tail.color, head.color)
		s.wetten(&tail.wet)
	} else {
		s.redirect(tail.color, head.color)
	}
	// add_ccdg_edge_betw_nodes_to_colored_subccdg looks the edge up
	if f := edgeBetween(head, tail); f != nil {
		s.paint(&f.color, head.color)
		s.wetten(&f.wet)
	}
	return false, nil
}

func addToStack(n *nueNode, l *nueLink) {
	if !slices.Contains(n.stack, l) {
		n.stack = append(n.stack, l)
	}
}

type nueCandidate struct {
	link *nueLink  // from the unreachable node to its neighbour
	orig *nueCNode // a channel from the neighbour's stack
}

// backtrack is attempt_local_backtracking.
func (s *nueReplay) backtrack(source *nueNode, color int) (*nueCNode, error) {
	var newC *nueCNode
	var cands []nueCandidate
	var deps []*nueCNode
	for _, u := range s.nodes {
		if u.distance != nueInfinity {
			continue
		}
		cands = cands[:0]
		for _, l1 := range u.links {
			adj := l1.to
			if adj.distance == nueInfinity {
				continue
			}
			deps = deps[:0]
			for _, l2 := range adj.links {
				t := l2.to
				if t.used == nil {
					continue
				}
				if t.used.ch.llid == adj.lid {
					deps = append(deps, t.used.cn)
				}
			}
			for _, sl := range adj.stack {
				cn := sl.cn
				m := 0
				for ; m < len(deps); m++ {
					d := deps[m]
					if cn.ch.llid == d.ch.rlid && cn.ch.rlid == d.ch.llid {
						break
					}
					c, err := s.edgeColorBetween(cn, d)
					if err != nil {
						return nil, err
					}
					if c < nueEscapePath {
						break
					}
				}
				if m == len(deps) {
					cands = append(cands, nueCandidate{l1, cn})
				}
			}
		}
		if len(cands) == 0 {
			continue
		}
		// glibc's qsort is a merge sort: stable
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].orig.distance < cands[j].orig.distance })
		for _, cd := range cands {
			pre := cd.orig
			cn, err := s.cnode(cd.link.ch.inverted())
			if err != nil {
				return nil, err
			}
			c, err := s.edgeColorBetween(pre, cn)
			if err != nil {
				return nil, err
			}
			if c == nueBlocked {
				continue
			}
			nn, err := s.node(pre.ch.llid)
			if err != nil {
				return nil, err
			}
			if nn == source {
				continue
			}
			if nn.used == nil {
				return nil, errNueReplay
			}
			pp := nn.used.cn
			if pre.ch.llid == pp.ch.rlid && pre.ch.rlid == pp.ch.llid {
				continue
			}
			pe := edgeBetween(pp, pre)
			if pe == nil {
				return nil, errNueReplay
			}
			if s.edgeColor(pe) == nueBlocked {
				continue
			}
			wasWet := pe.wet
			if cyc, err := s.inducesCycle(pp, pe, color); err != nil {
				return nil, err
			} else if cyc {
				continue
			}
			ce := edgeBetween(pre, cn)
			if ce == nil {
				return nil, errNueReplay
			}
			if cyc, err := s.inducesCycle(pre, ce, color); err != nil {
				return nil, err
			} else if cyc {
				if !wasWet {
					resetEdgeColor(pe)
				}
				continue
			}
			cn.distance = pre.distance + cn.link.weight
			if newC == nil {
				u.used = cn.link
				u.distance = cn.distance
				cd.link.to.used = pre.link
				cd.link.to.distance = pre.distance
				newC = cn
			} else {
				addToStack(u, cn.link)
			}
		}
		if newC != nil {
			break
		}
	}
	return newC, nil
}

// shortcut is attempt_shortcut_discovery.
func (s *nueReplay) shortcut(pn *nueNode, pc *nueCNode, color int) (bool, error) {
	if pn.used == nil {
		return false, errNueReplay
	}
	old := pn.used.cn
	nn, err := s.node(old.ch.llid)
	if err != nil {
		return false, err
	}
	if nn.used == nil {
		return false, errNueReplay
	}
	preOld := nn.used.cn
	var deps []*nueEdge
	for _, l := range pn.links {
		t := l.to
		if t.used == nil {
			continue
		}
		if pn.lid == t.used.ch.llid {
			e := edgeBetween(pc, t.used.cn)
			if e == nil {
				return false, errNueReplay
			}
			deps = append(deps, e)
		}
	}
	wasWet := make([]bool, len(deps))
	for i, e := range deps {
		wasWet[i] = e.wet
	}
	valid, until := true, 0
	for i, e := range deps {
		if s.edgeColor(e) == nueBlocked {
			valid, until = false, i
			break
		}
		cyc, err := s.inducesCycle(pc, e, color)
		if err != nil {
			return false, err
		}
		if cyc {
			valid, until = false, i
			break
		}
	}
	if valid {
		e := edgeBetween(preOld, old)
		if e == nil {
			return false, errNueReplay
		}
		resetEdgeColor(e)
		for _, e := range deps {
			resetEdgeColor(e)
		}
	} else {
		for i := 0; i < until; i++ {
			if s.edgeColor(deps[i]) != nueBlocked && !wasWet[i] {
				resetEdgeColor(deps[i])
			}
		}
	}
	return valid, nil
}

// route is route_via_modified_dijkstra_on_ccdg for destination LID dlid
// of d, with colour color.
func (s *nueReplay) route(d nuePort, dlid uint16, color int) error {
	for _, n := range s.nodes {
		n.distance = nueInfinity
		n.used = nil
		n.stack = n.stack[:0]
		n.hops = 0
		n.foundAfter = -1
	}
	if s.heap == nil {
		s.heap = newDHeap(4, len(s.cnodes))
	}
	h := s.heap // empty: every search drains it
	source, err := s.node(d.swLID)
	if err != nil {
		return err
	}
	source.distance = 0
	if d.isSwitch {
		source.hops = 0
	} else {
		source.hops = 1
	}
	found := 1
	srcC, err := s.cnode(nueChannel{source.lid, 0, source.lid, 0})
	if err != nil {
		return err
	}
	// change_fake_ccdg_node_color
	if s.nodeColor(srcC) > nueUnused {
		s.redirect(srcC.color, color)
	} else {
		s.paint(&srcC.color, color)
	}
	srcC.distance = 0
	last := int32(0)
	cur := srcC
	for cur != nil {
		if err := s.tick(); err != nil {
			return err
		}
		ne := len(cur.edges)
		for j := 0; j < 2*ne; j++ {
			e := &cur.edges[j%ne]
			if j < ne {
				if s.edgeColor(e) < nueEscapePath {
					continue
				}
			} else if s.edgeColor(e) != nueUnused {
				continue
			}
			next := e.to
			nd := cur.distance + next.link.weight
			nn := next.link.to
			if nd < nn.distance {
				cyc, err := s.inducesCycle(cur, e, color)
				if err != nil {
					return err
				}
				if cyc {
					continue
				}
				if last != 0 && nn.used != nil && last != nn.foundAfter {
					ok, err := s.shortcut(nn, next, color)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
				} else {
					if nn.used != nil {
						it := h.delete(nn.used.cn.heapIndex)
						if it == nil {
							return errNueReplay
						}
						old := it.(*nueCNode)
						on, err := s.node(old.ch.llid)
						if err != nil {
							return err
						}
						if on.used != nil {
							e := edgeBetween(on.used.cn, old)
							if e == nil {
								return errNueReplay
							}
							resetEdgeColor(e)
						} else if on != source {
							return errNueReplay
						}
					} else {
						found++
						nn.foundAfter = last
					}
					next.distance = nd
					if err := h.insert(nd, next); err != nil {
						return err
					}
				}
				nn.distance = nd
				nn.used = next.link
				if srcC != cur {
					nn.hops = cur.link.to.hops + 1
				} else {
					nn.hops = source.hops + 1
				}
			} else if s.edgeColor(e) > nueUnused {
				if last != 0 && nn.used != nil {
					continue
				}
				next.distance = nd
				addToStack(nn, next.link)
			}
		}
		it := h.extractRoot()
		cur = nil
		if it != nil {
			cur = it.(*nueCNode)
		} else if found != len(s.nodes) {
			c, err := s.backtrack(source, color)
			if err != nil {
				return err
			}
			if c != nil {
				cur = c
				found++
				last++
			} else {
				if err := s.useEscapePaths(d.swLID); err != nil {
					return err
				}
				last = 0
			}
		}
	}
	return s.fixColors(source, srcC)
}

// fixColors is fix_ccdg_colors.
func (s *nueReplay) fixColors(source *nueNode, srcC *nueCNode) error {
	for _, n := range s.nodes {
		if n.used == nil {
			continue
		}
		c := n.used.cn
		nn, err := s.node(c.ch.llid)
		if err != nil {
			return err
		}
		c.wet = false
		pre := srcC
		if nn != source {
			if nn.used == nil {
				return errNueReplay
			}
			pre = nn.used.cn
		}
		e := edgeBetween(pre, c)
		if e == nil {
			return errNueReplay
		}
		e.wet = false
	}
	for _, c := range s.cnodes {
		if c.wet {
			c.color, c.wet = nueUnused, false
		}
		for i := range c.edges {
			e := &c.edges[i]
			resetEdgeColor(e)
			e.color = s.real[e.color]
		}
		c.color = s.real[c.color]
	}
	return nil
}

// matches reports whether the forwarding tables t hold, for every switch
// and LID the replay routed, the port nue chose.
func (s *nueReplay) matches(t *Tables) bool {
	for _, n := range s.nodes {
		tab := t.Table(n.sw)
		if tab == nil {
			return false
		}
		for lid, port := range n.lft {
			if port != nueUnset && (lid >= len(tab) || tab[lid] != port) {
				return false
			}
		}
	}
	return true
}

// nueReplayHops returns the hop tables of the routes t programs, with the
// counts nue's replay wrote (its hop fields) where it wrote one, or nil
// when the replay fails or its forwarding tables are not t's.
func nueReplayHops(f *model.Fabric, t *Tables) *model.HopTables {
	s, err := replayNue(f)
	if err != nil || !s.matches(t) {
		return nil
	}
	sws := model.NewHopTables(f).Switches()
	return routedTables(f, t, func(i int, lid uint16, v uint8) uint8 {
		if n := s.byNode[sws[i]]; n != nil && int(lid) < len(n.rec) && n.rec[lid] != nueUnset {
			return n.rec[lid]
		}
		return v
	})
}
