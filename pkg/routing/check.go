package routing

import (
	"slices"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Kinds of Finding.
const (
	// KindBlackHole: a switch's entry for the LID is 0xFF, a port number
	// beyond its ports, or 0 (itself) for a LID it does not own.
	KindBlackHole = "black-hole"
	// KindDownPort: a switch routes the LID to a port without a link.
	KindDownPort = "down-port"
	// KindLoop: the route comes back to a switch it already crossed.
	KindLoop = "loop"
	// KindNoTable: a switch on the route has no forwarding table read.
	KindNoTable = "no-table"
	// KindTransitCA: a switch routes the LID to a CA or router that does
	// not own it.
	KindTransitCA = "transit-ca"
	// KindNotActive: a switch routes the LID to a port whose link is not
	// Active at one end or the other (see PortActive: it carries no
	// data); Err is the *PortStateError naming the port.
	KindNotActive = "not-active"
	// KindLonger: the route works but has more hops than the minimum.
	KindLonger = "longer-than-min-hop"
	// KindUnrouted: a switch has no route (0xFF) for a LID its routing
	// engine's rule leaves unrouted on purpose (up/down routing between
	// two spines): information, not a problem (see CheckResult.Excuse).
	KindUnrouted = "unrouted-by-engine"
)

// Finding is one routing problem found by Check. Dest is nil for a LID
// no discovered port owns that a forwarding table still routes (a port
// that is gone): wherever such a route ends, it delivers nothing. A broken route (every
// kind but KindLonger) is reported once per place where it breaks: all
// the source switches whose route to DLID breaks at the same switch share
// one Finding, counted in Routes. A KindLonger Finding is one source
// switch and one LID.
type Finding struct {
	Kind string
	// DLID is the destination LID and Dest the logical port owning it.
	DLID uint16
	Dest *model.Port
	// At is the switch where the route breaks (black hole, down port,
	// transit CA: the switch holding the bad entry; no table: the switch
	// without a table; loop: the first switch of Cycle; longer: the
	// source switch).
	At *model.Node
	// Port is At's forwarding table entry for DLID (black hole, down
	// port, transit CA, loop).
	Port uint8
	// Cycle lists the switches of a loop in forwarding order.
	Cycle []*model.Node
	// Routes is the number of source switches whose route meets this
	// problem.
	Routes int
	// Hops and MinHops are the route's length and the least hop count
	// (KindLonger).
	Hops, MinHops int
	// Err is the matching route error (ErrBlackHole, ErrDownPort, ErrLoop,
	// ErrNoTable, ErrTransitCA, a *PortStateError for KindNotActive), nil
	// for KindLonger.
	Err error
}

// CheckResult is what Check found.
type CheckResult struct {
	Switches int // source switches
	LIDs     int // destination LIDs (every LID owned by a port)
	Routes   int // routes followed (Switches × LIDs)
	Broken   int // routes that do not reach their LID
	Longer   int // routes that reach it with more hops than the minimum
	// Unowned counts the LIDs no discovered port owns (1..0xBFFF) that
	// forwarding tables still route somewhere, UnownedRoutes the routes
	// to them followed (from the switches whose entry is a port): each
	// ends in a Finding, counted in Broken too, unless it leaves by a
	// LinkUp port to a part of the fabric not discovered.
	Unowned, UnownedRoutes int
	// Unrouted counts the routes that end at a KindUnrouted entry (not
	// in Broken).
	Unrouted int
	// Findings in order of DLID, then of discovery order of At.
	Findings []Finding
}

// Clean reports whether nothing but KindUnrouted was found.
func (r *CheckResult) Clean() bool { return len(r.Findings) == r.Count(KindUnrouted) }

// Excuse turns the black holes that are no route at all (entry 0xFF) to
// a LID a port owns, at a switch from which unrouted says the engine's
// rule has no route to that LID, into KindUnrouted findings: their routes
// leave Broken for Unrouted.
func (r *CheckResult) Excuse(unrouted func(at *model.Node, dlid uint16) bool) {
	for i := range r.Findings {
		fd := &r.Findings[i]
		if fd.Kind != KindBlackHole || fd.Port != NoRoute || fd.Dest == nil || !unrouted(fd.At, fd.DLID) {
			continue
		}
		fd.Kind, fd.Err = KindUnrouted, nil
		r.Broken -= fd.Routes
		r.Unrouted += fd.Routes
	}
}

// Count returns the number of findings of a kind.
func (r *CheckResult) Count(kind string) int {
	n := 0
	for i := range r.Findings {
		if r.Findings[i].Kind == kind {
			n++
		}
	}
	return n
}

// route states during Check (per switch, per destination LID)
const (
	stUnknown int32 = iota
	stActive        // on the walk being resolved
	stDone
)

// checkNode is a switch as Check sees it.
type checkNode struct {
	n     *model.Node
	tab   []byte
	lo    uint16 // own LID range (0 when the switch has no LID)
	hi    uint16
	mat   *model.LIDMatrix
	order int // discovery order, for sorting findings
	// next is, for each port, the switch (index) a route leaving by it
	// reaches when nothing is wrong on the way (a link to a switch of
	// the check, both ends Active), else -1: step then judges the port.
	next []int32
}

// Check follows, through the forwarding tables t, the route from every
// switch of f to every LID owned by a port of f (1..MaxLID), and reports
// black holes, routes to ports without a link, loops, switches without a
// table, routes through a CA, routes over a link that is not Active, and
// (when h is not nil) routes longer than
// the least hop count of h. Routes are resolved once per switch and LID
// (a route shares the outcome of the switch it goes to), so the cost is
// O(switches × LIDs).
func Check(f *model.Fabric, t *Tables, h *model.HopTables) *CheckResult {
	sws := f.Switches()
	nodes := make([]checkNode, len(sws))
	idx := make(map[*model.Node]int32, len(sws))
	for i, n := range sws {
		cn := checkNode{n: n, tab: t.Table(n), order: n.Index}
		if z := n.Port(0); z != nil {
			if b := z.BaseLID(); b != 0 {
				cn.lo = b
				cn.hi = uint16(min(uint32(b)+1<<z.LMC()-1, 0xFFFF))
			}
		}
		if h != nil {
			cn.mat = h.Matrix(n)
		}
		nodes[i] = cn
		idx[n] = int32(i)
	}
	for i := range nodes {
		n := nodes[i].n
		next := make([]int32, n.NumPorts()+1)
		for p := range next {
			next[p] = -1
			pp := n.Port(p)
			if p == 0 || pp == nil || pp.Remote == nil || !PortActive(pp) || !PortActive(pp.Remote) || !pp.Remote.Node.IsSwitch() {
				continue
			}
			if j, ok := idx[pp.Remote.Node]; ok {
				next[p] = j
			}
		}
		nodes[i].next = next
	}
	res := &CheckResult{Switches: len(nodes)}

	state := make([]int32, len(nodes))
	hops := make([]int32, len(nodes))   // hops to the LID when reached
	fail := make([]int32, len(nodes))   // finding index+1 when broken, else 0
	onWalk := make([]int32, len(nodes)) // position on the current walk
	walk := make([]int32, 0, 64)
	maxLID := f.MaxLID()
	for lid := uint32(1); lid <= uint32(maxLID); lid++ {
		dlid := uint16(lid)
		dest := f.PortByLID(dlid)
		if dest == nil {
			continue
		}
		res.LIDs++
		clear(state)
		first := len(res.Findings)
		// where the destination hangs, for the least hop counts
		var attachLID uint16
		attachExtra := -1
		if h != nil {
			attachLID, attachExtra = attachPoint(dest, idx, nodes)
		}
		for s := range nodes {
			if state[s] != stDone {
				walk = walk[:0]
				cur := int32(s)
				// Walk forward until the outcome is known.
				for {
					if state[cur] == stDone {
						break
					}
					if state[cur] == stActive {
						// a loop: the cycle is walk[onWalk[cur]:]
						cyc := walk[onWalk[cur]:]
						fd := Finding{Kind: KindLoop, DLID: dlid, Dest: dest, Err: ErrLoop}
						for _, c := range cyc {
							fd.Cycle = append(fd.Cycle, nodes[c].n)
						}
						fd.At = nodes[cur].n
						fd.Port = portFor(nodes[cur].tab, dlid)
						res.Findings = append(res.Findings, fd)
						k := int32(len(res.Findings))
						for _, c := range cyc {
							state[c] = stDone
							fail[c] = k
						}
						break
					}
					state[cur] = stActive
					onWalk[cur] = int32(len(walk))
					walk = append(walk, cur)
					next, done := step(&nodes[cur], dlid, idx, res, dest)
					if done {
						state[cur] = stDone
						if next < 0 {
							fail[cur] = int32(len(res.Findings))
							hops[cur] = 0
						} else {
							fail[cur] = 0
							hops[cur] = next // hops to the destination
						}
						break
					}
					cur = next
				}
				// Propagate back along the walk.
				for i := len(walk) - 1; i >= 0; i-- {
					c := walk[i]
					if state[c] == stDone {
						continue
					}
					n := cur
					if i+1 < len(walk) {
						n = walk[i+1]
					}
					state[c] = stDone
					fail[c] = fail[n]
					hops[c] = hops[n] + 1
				}
			}
			res.Routes++
			if k := fail[s]; k != 0 {
				res.Broken++
				res.Findings[k-1].Routes++
				continue
			}
			if h == nil || attachExtra < 0 || nodes[s].mat == nil {
				continue
			}
			// An engine matrix with a row for the LID itself (a CA LID
			// of nue, dfsssp or sssp: the hops of the route it
			// programmed) is compared with that row; the min-hop
			// matrices have rows for switch LIDs only.
			l, extra := nodes[s].mat.LeastHops(attachLID), attachExtra
			if attachExtra > 0 && nodes[s].mat.Row(dlid) != nil {
				l, extra = nodes[s].mat.LeastHops(dlid), 0
			}
			if l == model.NoPath {
				continue
			}
			least := int(l) + extra
			if int(hops[s]) > least {
				res.Longer++
				res.Findings = append(res.Findings, Finding{Kind: KindLonger, DLID: dlid, Dest: dest,
					At: nodes[s].n, Port: portFor(nodes[s].tab, dlid), Routes: 1, Hops: int(hops[s]), MinHops: least})
			}
		}
		// Findings of one LID in discovery order of the switch.
		slices.SortStableFunc(res.Findings[first:], func(a, b Finding) int {
			return a.At.Index - b.At.Index
		})
	}
	checkUnowned(f, nodes, idx, res)
	return res
}

// checkUnowned follows, from every switch whose entry is a port, the
// routes to the LIDs no discovered port owns: they deliver nothing
// wherever they end (a port without a link, a 0xFF entry, a CA, a loop).
// A route that leaves by a LinkUp port to a node not discovered is not
// judged; one that reaches a switch without a table neither.
func checkUnowned(f *model.Fabric, nodes []checkNode, idx map[*model.Node]int32, res *CheckResult) {
	top := 0
	for i := range nodes {
		top = max(top, len(nodes[i].tab)-1)
	}
	top = min(top, 0xBFFF)
	seen := make([]int32, len(nodes)) // position+1 on the current walk
	var walk []int32
	for lid := 1; lid <= top; lid++ {
		dlid := uint16(lid)
		if f.PortByLID(dlid) != nil {
			continue
		}
		first := len(res.Findings)
		type place struct {
			at   int32 // the switch (a loop: its cycle's least)
			kind string
		}
		at := map[place]int{} // where routes break -> finding index
		found := func(kind string, err error, cur int32, port uint8, cycle []int32) {
			key := place{cur, kind}
			if kind == KindLoop {
				key.at = slices.Min(cycle) // one finding per cycle
			}
			if k, ok := at[key]; ok {
				res.Findings[k].Routes++
				return
			}
			fd := Finding{Kind: kind, DLID: dlid, At: nodes[cur].n, Port: port, Routes: 1, Err: err}
			for _, c := range cycle {
				fd.Cycle = append(fd.Cycle, nodes[c].n)
			}
			at[key] = len(res.Findings)
			res.Findings = append(res.Findings, fd)
		}
		routed := false
		for s := range nodes {
			if e := portFor(nodes[s].tab, dlid); nodes[s].tab == nil || e == NoRoute {
				continue
			}
			routed = true
			res.UnownedRoutes++
			walk = walk[:0]
			for cur := int32(s); ; {
				if seen[cur] != 0 {
					cyc := walk[seen[cur]-1:]
					found(KindLoop, ErrLoop, cur, portFor(nodes[cur].tab, dlid), cyc)
					res.Broken++
					break
				}
				seen[cur] = int32(len(walk)) + 1
				walk = append(walk, cur)
				cn := &nodes[cur]
				if cn.tab == nil {
					break // not judged
				}
				out := portFor(cn.tab, dlid)
				if out == NoRoute || out == 0 || int(out) > cn.n.NumPorts() {
					found(KindBlackHole, ErrBlackHole, cur, out, nil)
					res.Broken++
					break
				}
				pp := cn.n.Port(int(out))
				if pp == nil || pp.Remote == nil {
					if pp != nil && pp.HasInfo && pp.Info.PortPhysicalState == smp.PhysLinkUp {
						break // leads where the discovery did not go
					}
					found(KindDownPort, ErrDownPort, cur, out, nil)
					res.Broken++
					break
				}
				r := pp.Remote
				if !r.Node.IsSwitch() {
					found(KindTransitCA, ErrTransitCA, cur, out, nil)
					res.Broken++
					break
				}
				j, ok := idx[r.Node]
				if !ok {
					break
				}
				cur = j
			}
			for _, c := range walk {
				seen[c] = 0
			}
		}
		if routed {
			res.Unowned++
		}
		slices.SortStableFunc(res.Findings[first:], func(a, b Finding) int {
			return a.At.Index - b.At.Index
		})
	}
}

// step takes one step of a route at switch cn towards dlid. It returns
// done=true with the hop count to the destination (>= 0) or -1 after
// recording a finding; otherwise the index of the next switch.
func step(cn *checkNode, dlid uint16, idx map[*model.Node]int32, res *CheckResult, dest *model.Port) (int32, bool) {
	if cn.lo != 0 && dlid >= cn.lo && dlid <= cn.hi {
		return 0, true
	}
	broken := func(kind string, err error, port uint8) (int32, bool) {
		res.Findings = append(res.Findings, Finding{Kind: kind, DLID: dlid, Dest: dest, At: cn.n, Port: port, Err: err})
		return -1, true
	}
	if cn.tab == nil {
		return broken(KindNoTable, ErrNoTable, NoRoute)
	}
	out := portFor(cn.tab, dlid)
	if out == NoRoute || out == 0 || int(out) > cn.n.NumPorts() {
		return broken(KindBlackHole, ErrBlackHole, out)
	}
	if int(out) < len(cn.next) && cn.next[out] >= 0 {
		return cn.next[out], false // to a switch, over an Active link
	}
	pp := cn.n.Port(int(out))
	if pp == nil || pp.Remote == nil {
		return broken(KindDownPort, ErrDownPort, out)
	}
	r := pp.Remote
	for _, end := range [2]*model.PhysPort{pp, r} {
		if !PortActive(end) {
			return broken(KindNotActive, &PortStateError{Port: end}, out)
		}
	}
	if !r.Node.IsSwitch() {
		if owns(r, dlid) {
			return 1, true
		}
		return broken(KindTransitCA, ErrTransitCA, out)
	}
	j, ok := idx[r.Node]
	if !ok {
		return broken(KindNoTable, ErrNoTable, out)
	}
	return j, false
}

// attachPoint returns the LID of the switch dest belongs to or hangs on
// and the hops from dest to it (0 or 1), or -1 when there is none.
func attachPoint(dest *model.Port, idx map[*model.Node]int32, nodes []checkNode) (uint16, int) {
	if dest.Node != nil && dest.Node.IsSwitch() {
		if i, ok := idx[dest.Node]; ok && nodes[i].lo != 0 {
			return nodes[i].lo, 0
		}
		return 0, -1
	}
	if dest.Phys == nil || dest.Phys.Remote == nil || !dest.Phys.Remote.Node.IsSwitch() {
		return 0, -1
	}
	i, ok := idx[dest.Phys.Remote.Node]
	if !ok || nodes[i].lo == 0 {
		return 0, -1
	}
	return nodes[i].lo, 1
}

func portFor(tab []byte, lid uint16) uint8 {
	if int(lid) >= len(tab) {
		return NoRoute
	}
	return tab[lid]
}
