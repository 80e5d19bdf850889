package routing

import (
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing/minhop"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// MinHopGraphOf returns the minhop.Graph of a discovered fabric (its
// nodes in f.Nodes order, with the LIDs and links discovered; the LMC is
// the highest of its ports').
func MinHopGraphOf(f *model.Fabric) *minhop.Graph {
	g := &minhop.Graph{Nodes: make([]minhop.Node, len(f.Nodes))}
	index := make(map[*model.Node]int32, len(f.Nodes))
	for i, n := range f.Nodes {
		index[n] = int32(i)
	}
	for i, n := range f.Nodes {
		nd := &g.Nodes[i]
		nd.GUID, nd.SysGUID = n.Info.NodeGUID, n.Info.SystemImageGUID
		nd.Switch = n.Info.NodeType == smp.NodeSwitch
		nd.Ports = make([]minhop.Port, len(n.Ports))
		for p, pp := range n.Ports {
			mp := &nd.Ports[p]
			mp.Peer = -1
			if pp == nil {
				continue
			}
			if pp.HasInfo && (p == 0) == nd.Switch {
				mp.LID, mp.LMC = pp.Info.LID, pp.Info.LMC
				g.LMC = max(g.LMC, pp.Info.LMC)
			}
			if pp.Remote != nil && p > 0 {
				if r, ok := index[pp.Remote.Node]; ok {
					mp.Peer, mp.PeerPort = r, pp.Remote.Num
				}
			}
		}
	}
	return g
}

// MinHopTables returns the forwarding tables OpenSM's minhop engine programs
// on the discovered fabric f with the LIDs its ports have (see
// minhop.LFTs).
func MinHopTables(f *model.Fabric) (*Tables, error) {
	lfts, err := minhop.LFTs(MinHopGraphOf(f))
	if err != nil {
		return nil, err
	}
	t := NewTables()
	for i, n := range f.Nodes {
		if lfts[i] != nil {
			t.Set(n, lfts[i])
		}
	}
	return t, nil
}
