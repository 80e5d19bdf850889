package routing

import "github.com/ibfabric/ibdiag/pkg/model"

// ReplayNue exposes the nue replay to the tests: per switch and LID, the
// port nue programs and the hop count it records.
func ReplayNue(f *model.Fabric) (lft, hops map[*model.Node]map[uint16]uint8, err error) {
	s, err := replayNue(f)
	if err != nil {
		return nil, nil, err
	}
	lft, hops = map[*model.Node]map[uint16]uint8{}, map[*model.Node]map[uint16]uint8{}
	for _, n := range s.nodes {
		lft[n.sw], hops[n.sw] = map[uint16]uint8{}, map[uint16]uint8{}
		for l, p := range n.lft {
			if p != nueUnset {
				lft[n.sw][uint16(l)], hops[n.sw][uint16(l)] = p, n.rec[l]
			}
		}
	}
	return lft, hops, nil
}
