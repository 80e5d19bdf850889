package discover

import (
	"sync"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// sharing learns, within one level of probes, which probes cannot lead to
// a node that another parent reaches. Sibling switches of a fat tree
// reach one node by the same port number, so the engine keeps two probes
// of sibling parents leaving by one port number apart (ParallelApart,
// with the keys of keys); but on a leaf's host ports that rule only caps
// the SMPs in flight at the number of host ports, for nothing: a node
// with a single port has a single link, so one probe alone reaches it.
//
// Probes are put in classes by the port they leave by and the port their
// parent was entered by (switches of one role in a regular fabric are
// entered by the same port, and a leaf's host port 3 and a core switch's
// port 3 lead to different kinds of node). A class whose first
// sharingEvidence answers all came from single-port nodes (a CA or
// router port, not a switch) is released from the rule; a class with any
// other answer is held to it for the rest of the level. A wrong guess
// (a dual-ported node behind a class of single-ported ones) costs a
// dropped probe and its retry, never a different result: the answers are
// taken in canonical order whatever the timing.
type sharing struct {
	freed   atomic.Pointer[map[uint16]bool] // the released classes, replaced (not changed) under mu
	mu      sync.Mutex
	classes map[uint16]int // answers from single-port nodes; -1: another node answered
}

// sharingEvidence is the number of answers from single-port nodes that
// releases a class.
const sharingEvidence = 2

func probeClassOf(entry, num uint8) uint16 { return uint16(entry)<<8 | uint16(num) }

// released reports whether the class of probes leaving by port num of a
// parent entered by port entry has been released from the rule.
func (s *sharing) released(entry, num uint8) bool {
	r := s.freed.Load()
	return r != nil && (*r)[probeClassOf(entry, num)]
}

// keys are the two keys of a probe through port pp (parallelApart holds
// them unless the probe's class is released when the probe is
// considered). Siblings, the parents that reach one node by the same
// port number, are either reached from the same node (the core switches
// of one group above a pod) or by the same port number of different
// nodes (the aggregation switches of one pod, each reached from a core of
// its own group): the first key is the port number with the parent's
// parent (its path less the last hop), the second the port number with
// the port the parent was reached by.
func (s *sharing) keys(pp *model.PhysPort) (int, int) {
	path := pp.Node.Path
	h := uint64(14695981039346656037) // FNV-1a of the parent's parent's path
	for i := 0; i < int(path.Len()); i++ {
		h = (h ^ uint64(path.Port(i))) * 1099511628211
	}
	k1 := int(h>>10)<<8 | int(pp.Num) // bit 62 clear: apart from k2
	k2 := 1<<62 | int(path.Last())<<8 | int(pp.Num)
	return k1, k2
}

// note records a NodeInfo answer (info) to a probe leaving by port num of
// a parent entered by port entry.
func (s *sharing) note(entry, num uint8, info []byte) {
	single := info[2] != smp.NodeSwitch && info[3] == 1 // NodeInfo's NodeType and NumPorts: not a switch, one port
	k := probeClassOf(entry, num)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.classes == nil {
		s.classes = make(map[uint16]int)
	}
	switch n := s.classes[k]; {
	case n < 0:
	case single:
		s.classes[k] = n + 1
		if n+1 == sharingEvidence {
			s.release(k, true)
		}
	default:
		if n >= sharingEvidence {
			s.release(k, false)
		}
		s.classes[k] = -1
	}
}

// release publishes a new set of released classes with class k in or
// out (under mu).
func (s *sharing) release(k uint16, in bool) {
	r := map[uint16]bool{}
	if old := s.freed.Load(); old != nil {
		for c := range *old {
			r[c] = true
		}
	}
	if in {
		r[k] = true
	} else {
		delete(r, k)
	}
	s.freed.Store(&r)
}
