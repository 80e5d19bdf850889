package routing

import "github.com/ibfabric/ibdiag/pkg/model"

// ReplayNue exposes the nue replay to the tests: per switch and LID, the
// port nue programs and the hop count it records.
func ReplayNue(f *model.Fabric) (lft, hops map[*model.Node]map[uint16]uint8, err error) {
	s, err := replayNue(f)
	if err != nil {
		return nil, nil, err
	}
	return s.lft, s.hops, nil
}
