package health

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// creditLoops: a cycle in the channel dependency graph of the unicast
// routes as the switches' forwarding tables program them. A channel is a
// switch's output port with a link to another switch (on one VL); a
// route that leaves switch A by channel a and then switch B by channel b
// makes b a dependency of a. The routes are those of the data traffic:
// from every CA port to every LID of every CA port.
//
// First every route is taken to use one VL. Without a cycle there, there
// is none on any VL. With one, and an SA to ask (Input.SA), each route's
// SL comes from the SA's PathRecord and its VL at every hop from the
// switches' SLtoVLMappingTables, and the graph is built again on (port,
// VL) channels: a cycle there is a credit loop; none means the VLs break
// every loop of the single-VL graph (as LASH's and DFSSSP's do).
func (c *checker) creditLoops(ctx context.Context, cr *CheckResult) ([]Finding, error) {
	if err := c.readTables(ctx); err != nil {
		return nil, err
	}
	if !c.tablesStatus(cr) {
		return nil, nil
	}
	// first without the route that makes each dependency (most fabrics
	// have no loop, and keeping them is most of the graph's memory),
	// then, for a loop found, again with them for the finding: the same
	// graph and the same loop
	g := newCDG()
	g.noWhy = true
	c.singleVL(g)
	if g.cycle() == nil {
		return nil, nil
	}
	g = newCDG()
	c.singleVL(g)
	cycle := g.cycle()
	if c.in.SA == nil && c.in.NewSA != nil && c.in.SAWhy == "" {
		lid, err := c.localSMLID()
		if err == nil {
			c.in.SA, err = c.in.NewSA(lid)
		}
		if err != nil {
			c.in.SAWhy = err.Error()
		}
	}
	if c.in.SA == nil {
		why := c.in.SAWhy
		if why == "" {
			why = "no SA to ask"
		}
		f := c.loopFinding(g, cycle, "")
		f.Evidence = append(f.Evidence, "every route taken to use one VL: the SLs could not be asked ("+why+")")
		return []Finding{f}, nil
	}
	v := newCDG()
	incomplete, err := c.perVL(ctx, v)
	if err != nil {
		return nil, err
	}
	cr.Where = append(cr.Where, incomplete...)
	if vc := v.cycle(); vc != nil {
		return []Finding{c.loopFinding(v, vc, " on its VLs")}, nil
	}
	f := c.loopFinding(g, cycle, "")
	f.Severity, f.Kind = Info, KindCreditLoopVL
	f.Message = "the routes' VLs break every credit loop of the forwarding tables, e.g. " + strings.TrimPrefix(f.Message, "credit loop of ")
	return []Finding{f}, nil
}

// localSMLID is the master SM's LID the local port's PortInfo names, as
// discovery read it (sa.MasterSMLID without reading it again).
func (c *checker) localSMLID() (uint16, error) {
	n := c.f.From
	if n == nil {
		return 0, fmt.Errorf("%w (no local node discovered)", sa.ErrNoSM)
	}
	pp := n.Port(int(c.f.FromPort))
	if pp == nil || !pp.HasInfo {
		return 0, fmt.Errorf("%w (the local port's PortInfo was not read)", sa.ErrNoSM)
	}
	if pp.Info.MasterSMLID == 0 {
		return 0, sa.ErrNoSM
	}
	if pp.Info.PortState != smp.PortStateActive {
		return 0, fmt.Errorf("%w (the local port is not Active: state %d)", sa.ErrNoSM, pp.Info.PortState)
	}
	return pp.Info.MasterSMLID, nil
}

// KindCreditLoopVL: a cycle of the single-VL dependency graph that the
// routes' SLs and the SLtoVL tables break (information).
const KindCreditLoopVL = "credit-loop-broken-by-vls"

func (c *checker) loopFinding(g *cdg, cycle []chanKey, where string) Finding {
	var hops []string
	for _, ch := range cycle {
		hops = append(hops, c.chanText(ch))
	}
	hops = append(hops, hops[0])
	var ev []string
	for i, ch := range cycle {
		next := cycle[(i+1)%len(cycle)]
		ev = append(ev, fmt.Sprintf("%s -> %s: %s", c.chanText(ch), c.chanText(next), g.reason(g.id[ch], g.id[next])))
	}
	return Finding{Kind: KindCreditLoop, Severity: Critical, Place: c.portPlace(cycle[0].pp),
		Message:  fmt.Sprintf("credit loop of %d channels%s: %s", len(cycle), where, strings.Join(hops, " -> ")),
		Evidence: ev}
}

func (c *checker) chanText(ch chanKey) string {
	s := fmt.Sprintf("%q[%d]", c.name(ch.pp.Node), ch.pp.Num)
	if ch.vl >= 0 {
		s += fmt.Sprintf(" VL%d", ch.vl)
	}
	return s
}

// chanKey is a channel: an output port, on one VL (-1: every VL).
type chanKey struct {
	pp *model.PhysPort
	vl int
}

// cdg is a channel dependency graph. Every edge goes from a channel (an
// output port of switch A, whose link leads to switch B) to a channel of
// B: an edge is known by its source and the target's (port, VL).
type cdg struct {
	ch  []chanKey
	id  map[chanKey]int
	out [][]int32
	// why says, for each edge out[v][i], the route that makes it: the
	// DLID (a single-VL graph) or an index into text (text != nil).
	why  [][]uint32
	text []string
	// noWhy leaves why out (reason then says nothing)
	noWhy bool
	// has marks, for each channel, the (VL+1)*256+port of the channels
	// out already holds.
	has [][]uint64
}

func newCDG() *cdg { return &cdg{id: map[chanKey]int{}} }

func (g *cdg) channel(k chanKey) int {
	if i, ok := g.id[k]; ok {
		return i
	}
	g.id[k] = len(g.ch)
	g.ch = append(g.ch, k)
	g.out = append(g.out, nil)
	if !g.noWhy {
		g.why = append(g.why, nil)
	}
	g.has = append(g.has, nil)
	return len(g.ch) - 1
}

// edge adds the edge from -> to unless it is there; it reports whether
// it added it.
func (g *cdg) edge(from, to int) bool {
	k := g.ch[to]
	bit := (k.vl+1)*256 + int(k.pp.Num)
	w := bit / 64
	h := g.has[from]
	if w >= len(h) {
		h = append(h, make([]uint64, w+1-len(h))...)
		g.has[from] = h
	}
	if h[w]&(1<<(bit%64)) != 0 {
		return false
	}
	h[w] |= 1 << (bit % 64)
	g.out[from] = append(g.out[from], int32(to))
	return true
}

// addDLID adds from -> to, made by the routes to dlid (a single-VL graph).
func (g *cdg) addDLID(from, to int, dlid uint16) {
	if g.edge(from, to) && !g.noWhy {
		g.why[from] = append(g.why[from], uint32(dlid))
	}
}

// addText adds from -> to, made by the route why says.
func (g *cdg) addText(from, to int, why func() string) {
	if g.edge(from, to) {
		g.why[from] = append(g.why[from], uint32(len(g.text)))
		g.text = append(g.text, why())
	}
}

// reason is the route that makes the edge from -> to.
func (g *cdg) reason(from, to int) string {
	if g.noWhy {
		return "?"
	}
	for i, w := range g.out[from] {
		if int(w) != to {
			continue
		}
		if g.text != nil {
			return g.text[g.why[from][i]]
		}
		return fmt.Sprintf("routes to LID %d", g.why[from][i])
	}
	return "?"
}

// caPorts lists the CA ports with a link to a switch (the sources) and
// every LID of every CA port (the destinations).
func (c *checker) caPorts() (srcs []*model.PhysPort, dests []uint16) {
	for _, n := range c.f.Nodes {
		if n.IsSwitch() {
			continue
		}
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo {
				continue
			}
			if r := pp.Remote; r != nil && r.Node.IsSwitch() {
				srcs = append(srcs, pp)
			}
			if lo := pp.BaseLID(); lo != 0 {
				for l := uint32(lo); l < uint32(lo)+1<<pp.LMC() && l <= 0xBFFF; l++ {
					dests = append(dests, uint16(l))
				}
			}
		}
	}
	return srcs, dests
}

// singleVL builds the graph of every route on one VL: for each
// destination LID, the routes from every switch a CA port is linked to,
// followed through the tables; a switch already passed for that LID has
// its dependencies in the graph already. It works on switch indices, so
// that a step of a route is two slice reads: on the 64,656-node tree that
// is 49,151 LIDs by about 4,000 steps.
func (c *checker) singleVL(g *cdg) {
	srcs, dests := c.caPorts()
	sws := c.f.Switches()
	idx := make(map[*model.Node]int32, len(sws))
	for i, sw := range sws {
		idx[sw] = int32(i)
	}
	type swTab struct {
		tab  []byte  // LID -> egress port
		peer []int32 // port -> the switch its link leads to (-1: none)
		ch   []int32 // port -> its channel in g (-1: none yet)
	}
	st := make([]swTab, len(sws))
	for i, sw := range sws {
		n := sw.NumPorts()
		t := swTab{tab: c.tabs.Table(sw), peer: make([]int32, n+1), ch: make([]int32, n+1)}
		for p := 0; p <= n; p++ {
			t.peer[p], t.ch[p] = -1, -1
			if pp := sw.Port(p); pp != nil && pp.Remote != nil && pp.Remote.Node.IsSwitch() {
				if j, ok := idx[pp.Remote.Node]; ok {
					t.peer[p] = j
				}
			}
		}
		st[i] = t
	}
	// the switches the routes start at, each once, in srcs order
	var from []int32
	isSrc := make([]bool, len(sws))
	for _, src := range srcs {
		if i, ok := idx[src.Remote.Node]; ok && !isSrc[i] {
			isSrc[i] = true
			from = append(from, i)
		}
	}
	passed := make([]uint32, len(sws)) // the last destination (index+1) a switch was passed for
	for k, dlid := range dests {
		mark := uint32(k + 1)
		for _, sw := range from {
			prev := int32(-1)
			for {
				t := &st[sw]
				if int(dlid) >= len(t.tab) {
					break
				}
				port := t.tab[dlid]
				if port == 0 || int(port) >= len(t.peer) || t.peer[port] < 0 {
					break // the route leaves the switches here (to a CA, nowhere)
				}
				ch := t.ch[port]
				if ch < 0 {
					ch = int32(g.channel(chanKey{sws[sw].Port(int(port)), -1}))
					t.ch[port] = ch
				}
				if prev >= 0 {
					g.addDLID(int(prev), int(ch), dlid)
				}
				if passed[sw] == mark {
					break // its dependencies onwards are in the graph
				}
				passed[sw] = mark
				prev = ch
				sw = t.peer[port]
			}
		}
	}
}

// perVL builds the graph on (port, VL) channels: every CA-to-CA route
// with the SL of the SA's PathRecord and the VL of each switch's
// SLtoVLMappingTable for its input and output port. It returns what it
// could not look at.
func (c *checker) perVL(ctx context.Context, g *cdg) ([]string, error) {
	srcs, dests := c.caPorts()
	type sl2vlKey struct {
		sw      *model.Node
		in, out uint8
	}
	tables := map[sl2vlKey]*smp.SLtoVLMappingTable{}
	var where []string
	failed := map[string]bool{}
	note := func(s string) {
		if !failed[s] {
			failed[s] = true
			where = append(where, s)
		}
	}
	for _, src := range srcs {
		slid := src.BaseLID()
		if slid == 0 {
			continue
		}
		for _, dlid := range dests {
			if err := ctx.Err(); err != nil {
				return where, err
			}
			if dlid >= slid && dlid < slid+uint16(1)<<src.LMC() {
				continue // to itself
			}
			pr, err := pathav.QueryPathRecord(ctx, c.in.SA, slid, dlid)
			if err != nil {
				if errors.Is(err, sa.ErrNoRecords) {
					continue // the SA knows no path: the route check says why
				}
				if ctx.Err() != nil {
					return where, ctx.Err()
				}
				note(fmt.Sprintf("PathRecord LID %d -> LID %d: %v", slid, dlid, err))
				continue
			}
			c.rep.MADs++
			sl := pr.SL
			sw, in := src.Remote.Node, src.Remote.Num
			prev := -1
			for hops := 0; sw != nil && hops < 64; hops++ {
				port := c.tabs.Port(sw, dlid)
				if port == 0 || int(port) > sw.NumPorts() {
					break
				}
				out := sw.Port(int(port))
				if out == nil || out.Remote == nil {
					break
				}
				k := sl2vlKey{sw, in, port}
				t, ok := tables[k]
				if !ok {
					var buf [smp.DataSize]byte
					if err := c.in.Querier.Get(ctx, sw.Path, smp.AttrSLtoVLMappingTable, smp.SL2VLModifier(in, port), buf[:]); err != nil {
						if ctx.Err() != nil {
							return where, ctx.Err()
						}
						note(fmt.Sprintf("SLtoVLMappingTable of switch %q ports %d to %d: %v", c.name(sw), in, port, err))
					} else {
						t = new(smp.SLtoVLMappingTable)
						t.UnmarshalBinary(buf[:])
					}
					tables[k] = t
				}
				if t == nil || !out.Remote.Node.IsSwitch() {
					break
				}
				vl := t[sl]
				if vl == smp.VLDrop {
					break
				}
				ch := g.channel(chanKey{out, int(vl)})
				if prev >= 0 {
					g.addText(prev, ch, func() string { return fmt.Sprintf("route LID %d -> LID %d on SL %d", slid, dlid, sl) })
				}
				prev = ch
				sw, in = out.Remote.Node, out.Remote.Num
			}
		}
	}
	return where, nil
}

// cycle returns one cycle of g (the channels in dependency order), nil
// when g is acyclic. Iterative depth-first search.
func (g *cdg) cycle() []chanKey {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.ch))
	parent := make([]int, len(g.ch))
	next := make([]int, len(g.ch))
	for s := range g.ch {
		if color[s] != white {
			continue
		}
		stack := []int{s}
		color[s], parent[s] = grey, -1
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			if next[v] < len(g.out[v]) {
				w := int(g.out[v][next[v]])
				next[v]++
				switch color[w] {
				case white:
					color[w], parent[w] = grey, v
					stack = append(stack, w)
				case grey:
					// w .. v is on the stack: the cycle
					var cyc []chanKey
					for u := v; u != w; u = parent[u] {
						cyc = append(cyc, g.ch[u])
					}
					cyc = append(cyc, g.ch[w])
					for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
						cyc[i], cyc[j] = cyc[j], cyc[i]
					}
					return cyc
				}
				continue
			}
			color[v] = black
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}
