package health

import (
	"context"
	"fmt"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// creditLoops: a cycle in the channel dependency graph of the unicast
// routes as the switches' forwarding tables program them. A channel is a
// switch's output port with a link to another switch; a route that
// leaves switch A by channel a and then switch B by channel b makes b a
// dependency of a. The routes are those of the data traffic: from every
// CA port to every LID of every CA port. Every VL is taken as one (the
// SL2VL tables are not read): a cycle found is a credit loop on a fabric
// that sends all traffic on one VL.
func (c *checker) creditLoops(ctx context.Context, cr *CheckResult) ([]Finding, error) {
	if err := c.readTables(ctx); err != nil {
		return nil, err
	}
	if !c.tablesStatus(cr) {
		return nil, nil
	}
	g := c.dependencies()
	cycle := g.cycle()
	if cycle == nil {
		return nil, nil
	}
	var hops []string
	for _, ch := range cycle {
		hops = append(hops, fmt.Sprintf("%q[%d]", c.name(ch.Node), ch.Num))
	}
	hops = append(hops, hops[0])
	var ev []string
	for i, ch := range cycle {
		next := cycle[(i+1)%len(cycle)]
		ev = append(ev, fmt.Sprintf("%q port %d -> %q port %d: LID %d", c.name(ch.Node), ch.Num, c.name(next.Node), next.Num, g.why[edge{g.id[ch], g.id[next]}]))
	}
	return []Finding{{Kind: KindCreditLoop, Severity: Critical, Place: c.portPlace(cycle[0]),
		Message:  fmt.Sprintf("credit loop of %d channels: %s", len(cycle), strings.Join(hops, " -> ")),
		Evidence: ev}}, nil
}

type edge struct{ from, to int }

// cdg is a channel dependency graph.
type cdg struct {
	ch  []*model.PhysPort
	id  map[*model.PhysPort]int
	out [][]int
	why map[edge]uint16 // a destination LID whose routes make the dependency
}

func (g *cdg) channel(p *model.PhysPort) int {
	if i, ok := g.id[p]; ok {
		return i
	}
	g.id[p] = len(g.ch)
	g.ch = append(g.ch, p)
	g.out = append(g.out, nil)
	return len(g.ch) - 1
}

// dependencies builds the graph: for each CA destination LID, the routes
// from every CA's switch, followed through the tables; a switch already
// passed for that LID has its dependencies in the graph already.
func (c *checker) dependencies() *cdg {
	g := &cdg{id: map[*model.PhysPort]int{}, why: map[edge]uint16{}}
	var entries []*model.Node // the switches the CAs are attached to
	var dests []uint16
	for _, n := range c.f.Nodes {
		if n.IsSwitch() {
			continue
		}
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo {
				continue
			}
			if r := pp.Remote; r != nil && r.Node.IsSwitch() {
				entries = append(entries, r.Node)
			}
			if lo := pp.BaseLID(); lo != 0 {
				for l := uint32(lo); l < uint32(lo)+1<<pp.LMC() && l <= 0xBFFF; l++ {
					dests = append(dests, uint16(l))
				}
			}
		}
	}
	for _, dlid := range dests {
		seen := map[*model.Node]bool{}
		for _, sw := range entries {
			prev := -1
			for sw != nil && !seen[sw] {
				seen[sw] = true
				port := c.tabs.Port(sw, dlid)
				if port == 0 || int(port) > sw.NumPorts() {
					break
				}
				out := sw.Port(int(port))
				if out == nil || out.Remote == nil || !out.Remote.Node.IsSwitch() {
					break
				}
				ch := g.channel(out)
				if prev >= 0 {
					e := edge{prev, ch}
					if _, ok := g.why[e]; !ok {
						g.why[e] = dlid
						g.out[prev] = append(g.out[prev], ch)
					}
				}
				prev = ch
				sw = out.Remote.Node
			}
			// the dependency into a switch already passed
			if sw != nil && prev >= 0 && seen[sw] {
				port := c.tabs.Port(sw, dlid)
				if port != 0 && int(port) <= sw.NumPorts() {
					if out := sw.Port(int(port)); out != nil && out.Remote != nil && out.Remote.Node.IsSwitch() {
						ch := g.channel(out)
						e := edge{prev, ch}
						if _, ok := g.why[e]; !ok {
							g.why[e] = dlid
							g.out[prev] = append(g.out[prev], ch)
						}
					}
				}
			}
		}
	}
	return g
}

// cycle returns one cycle of g (the channels in dependency order), nil
// when g is acyclic. Iterative depth-first search.
func (g *cdg) cycle() []*model.PhysPort {
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
				w := g.out[v][next[v]]
				next[v]++
				switch color[w] {
				case white:
					color[w], parent[w] = grey, v
					stack = append(stack, w)
				case grey:
					// w .. v is on the stack: the cycle
					var cyc []*model.PhysPort
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
