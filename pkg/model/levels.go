package model

import "github.com/ibfabric/ibdiag/pkg/smp"

// Levels returns each node's level in a tree-like fabric: CAs and routers
// (the hosts) are level 0, leaf switches (those linked to a CA) level 1,
// and every other switch 1 + its hop distance to the nearest leaf, so a
// 3-level fat tree's spines are level 3 whatever order the sweep met
// them in. A switch no leaf can reach (a fabric without hosts, or an
// island of switches) is level 1.
func Levels(f *Fabric) map[*Node]int {
	lv := make(map[*Node]int, len(f.Nodes))
	var queue []*Node
	for _, n := range f.Nodes {
		if !n.IsSwitch() {
			lv[n] = 0
			continue
		}
		for _, p := range n.Ports {
			if p != nil && p.Remote != nil && p.Remote.Node.Type() == smp.NodeCA {
				lv[n] = 1
				queue = append(queue, n)
				break
			}
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, p := range n.Ports {
			if p == nil || p.Remote == nil {
				continue
			}
			m := p.Remote.Node
			if _, seen := lv[m]; seen || !m.IsSwitch() {
				continue
			}
			lv[m] = lv[n] + 1
			queue = append(queue, m)
		}
	}
	for _, n := range f.Nodes {
		if _, ok := lv[n]; !ok {
			lv[n] = 1
		}
	}
	return lv
}
