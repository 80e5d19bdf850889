package discover

import (
	"context"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// shortestPaths gives every node of a discovery that started at
// cfg.From (not the local node) the shortest directed route from the
// local port over the links found, as a discovery from the local node
// gives them: without it a node found from the start node keeps the
// route through the start node (the local node itself "0,1,37" instead
// of "0"). The nodes on the From route before the start node are told by
// their NodeInfo (one SMP each); from those that were discovered, a
// breadth-first search leaving only switches (and the local node by the
// route's first port) gives the routes. A route is replaced only by a
// shorter one; a NodeInfo that fails stops the walk and is never a
// failed SMP of the result.
func (e *engine) shortestPaths(ctx context.Context) {
	from := e.cfg.From
	if from.Len() == 0 {
		return
	}
	// The nodes on the From route (told by their NodeInfo: the route's
	// own nodes were not all discovered, or were reached otherwise) that
	// were discovered: sources of the search at their distance from the
	// local port.
	dist := make(map[*model.Node]int, len(e.fab.Nodes))
	path := make(map[*model.Node]smp.DRPath, len(e.fab.Nodes))
	levels := make([][]*model.Node, from.Len()+1)
	var buf [smp.DataSize]byte
	var at smp.DRPath
	for hop := 0; hop < int(from.Len()); hop++ {
		if hop > 0 {
			at, _ = at.Extend(from.Port(hop))
		}
		if err := e.q.Get(ctx, at, smp.AttrNodeInfo, 0, buf[:]); err != nil {
			e.q.forget(at, smp.AttrNodeInfo, 0)
			break
		}
		var ni smp.NodeInfo
		if ni.UnmarshalBinary(buf[:]) != nil {
			break
		}
		if n := e.fab.NodeByGUID(ni.NodeGUID); n != nil {
			if _, seen := dist[n]; !seen {
				dist[n], path[n] = hop, at
				levels[hop] = append(levels[hop], n)
			}
		}
	}
	for d := 0; d < len(levels); d++ {
		for _, n := range levels[d] {
			if dist[n] != d || path[n].Len() >= smp.MaxHops {
				continue // reached shorter since
			}
			if !n.IsSwitch() && path[n].Len() > 0 {
				continue // DR does not pass through a CA or router
			}
			for _, pp := range n.Ports {
				if pp == nil || pp.Remote == nil || pp.Num == 0 {
					continue
				}
				if !n.IsSwitch() && pp.Num != from.Port(1) {
					continue // a local CA is left by its own port only
				}
				m := pp.Remote.Node
				if old, seen := dist[m]; seen && old <= d+1 {
					continue
				}
				dist[m] = d + 1
				path[m], _ = path[n].Extend(pp.Num)
				if d+1 >= len(levels) {
					levels = append(levels, nil)
				}
				levels[d+1] = append(levels[d+1], m)
			}
		}
	}
	for _, n := range e.fab.Nodes {
		if p, ok := path[n]; ok && p.Len() < n.Path.Len() {
			n.Path = p
		}
	}
}
