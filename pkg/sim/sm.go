package sim

import (
	"fmt"
	"math/bits"
)

// DefaultGIDPrefix is the subnet prefix RunSM programs (OpenSM's default).
const DefaultGIDPrefix = 0xfe80000000000000

// MaxUnicastLID is the highest unicast LID (0xBFFF): a subnet has at most
// 49,151 LIDs for its switches and CA/router ports.
const MaxUnicastLID = 0xBFFF

// LIDSpaceError is RunSM's report that the subnet has more ports needing a
// LID than there are unicast LIDs. The SM still ran: every other step
// (SM LID, GID prefix, Active links, LFTs) was done for the ports that got
// a LID, so callers may treat it as a warning. It matches ErrLIDSpace
// with errors.Is.
type LIDSpaceError struct {
	// Ports is the number of ports that needed a LID (one per switch,
	// one per linked CA/router port).
	Ports int
	// Unassigned is how many of them were left at LID 0.
	Unassigned int
}

func (e *LIDSpaceError) Error() string {
	return fmt.Sprintf("%v: %d of %d ports left without a LID (unicast LIDs are 1..%d)",
		ErrLIDSpace, e.Unassigned, e.Ports, MaxUnicastLID)
}

// Is reports whether target is ErrLIDSpace.
func (e *LIDSpaceError) Is(target error) bool { return target == ErrLIDSpace }

// RunSM is a minimal subnet manager, enough for LID-routed SMPs and tools
// that read LFTs without OpenSM. From the SM node (smNode, "" = the first
// node, attached like Attach) it finds every node reachable over LinkUp
// links and then:
//
//   - assigns LIDs: a switch gets one LID on port 0, a CA or router one
//     LID on each reachable linked port (LMC 0). A port keeps the LID it
//     has (from the net file's lid fields or a topology file's "lid N"),
//     as OpenSM keeps existing LIDs, unless an earlier port in file order
//     has it; the others get the lowest free LIDs in file order of the
//     nodes, so a file with no LIDs is numbered 1, 2, 3, ...
//   - sets MasterSMLID (the SM port's LID) and the GID prefix fe80:: on
//     every reachable port, and brings every reachable linked port to
//     Active.
//   - programs min-hop LFTs on every reachable switch: a switch's own LID
//     goes to port 0, a CA/router LID to the port it hangs on, every other
//     LID to a port on a shortest switch-to-switch path, choosing among
//     equal ports the one with the fewest LIDs routed so far (lowest port
//     number on ties) — one of the choices OpenSM's min-hop could make.
//     LinearFDBTop = highest LID; PortStateChange is cleared.
//   - joins every configured CA port to the IPoIB broadcast group and
//     programs its MFT entries (MLID 0xC000) on the switches of a tree
//     reaching them (see programBroadcast).
//
// When more ports need a LID than the 49,151 unicast LIDs, RunSM assigns
// them as an SM that runs out of LIDs: the LIDs ports have are kept, then
// every other switch (file order), then CA/router ports in file order
// until no LID is free. A port
// left over is left unconfigured, as OpenSM leaves a port it cannot give
// a LID ("ERR 0307: OPENSM RAN OUT OF LIDS"): its LID is 0 (any LID it
// had is cleared), its MasterSMLID and GID prefix are not touched, and
// its link is not brought up, so it and its peer stay in the state they
// were (Initialize after Load). Directed-route SMPs still reach it. RunSM
// then returns a *LIDSpaceError saying how many ports got no LID; every
// other step was done.
func (f *Fabric) RunSM(smNode string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nodes) == 0 {
		return ErrNoNode
	}
	sm := int32(0)
	if smNode != "" {
		var ok bool
		if sm, ok = f.lookup(smNode); !ok {
			return fmt.Errorf("%w: %q", ErrNoNode, smNode)
		}
	}
	// Reachability over LinkUp links (DR can cross any of them).
	reach := make([]bool, len(f.nodes))
	queue := []int32{sm}
	reach[sm] = true
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		lo, hi := f.nodePorts(n)
		for i := lo; i < hi; i++ {
			pp := &f.ports[i]
			if pp.remote < 0 || pp.phys != 5 || f.ports[pp.remote].phys != 5 {
				continue
			}
			if r := f.ports[pp.remote].node; !reach[r] {
				reach[r] = true
				queue = append(queue, r)
			}
		}
	}
	// needsLID: port 0 of a switch, a linked port of a CA or router.
	needsLID := func(n int, pp *port) bool {
		if f.nodes[n].sw >= 0 {
			return pp.num == 0
		}
		return pp.remote >= 0 && pp.phys == 5
	}
	need := 0
	for n := range f.nodes {
		if !reach[n] {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			if needsLID(n, &f.ports[i]) {
				need++
			}
		}
	}
	// LIDs the file gives are kept, as OpenSM keeps the LIDs ports already
	// have: a port needing a LID keeps a unicast LID no port before it in
	// file order took. The others get the lowest free LIDs in file order;
	// when they do not all fit, switches first.
	taken := make([]bool, MaxUnicastLID+1)
	keep := make([]bool, len(f.ports))
	kept := 0
	for n := range f.nodes {
		if !reach[n] {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			pp := &f.ports[i]
			if needsLID(n, pp) && pp.lid != 0 && pp.lid <= MaxUnicastLID && !taken[pp.lid] {
				taken[pp.lid], keep[i] = true, true
				pp.lmc = 0
				kept++
			}
		}
	}
	lid := uint32(1) // next LID to try
	left := MaxUnicastLID - kept
	assign := func(swPass int) {
		for n := range f.nodes {
			if !reach[n] || (swPass == 1 && f.nodes[n].sw < 0) || (swPass == 2 && f.nodes[n].sw >= 0) {
				continue
			}
			lo, hi := f.nodePorts(int32(n))
			for i := lo; i < hi; i++ {
				pp := &f.ports[i]
				if !needsLID(n, pp) || keep[i] {
					continue
				}
				if left == 0 {
					pp.lid, pp.lmc = 0, 0
					continue
				}
				for taken[lid] {
					lid++
				}
				taken[lid] = true
				pp.lid, pp.lmc = uint16(lid), 0
				left--
			}
		}
	}
	if need <= MaxUnicastLID {
		assign(0)
	} else {
		assign(1)
		assign(2)
	}
	// owner: LID -> port index, -1 for a LID nobody has
	maxLID := uint16(0)
	for l := MaxUnicastLID; l > 0; l-- {
		if taken[l] {
			maxLID = uint16(l)
			break
		}
	}
	owner := make([]int32, int(maxLID)+1)
	for l := range owner {
		owner[l] = -1
	}
	for n := range f.nodes {
		if !reach[n] {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			if pp := &f.ports[i]; needsLID(n, pp) && pp.lid != 0 {
				owner[pp.lid] = i
			}
		}
	}
	smlid := f.ports[f.nodes[sm].base].lid
	// configured: false for a port that needed a LID and got none, and
	// for the ports of a switch that got none.
	configured := func(i int32) bool {
		pp := &f.ports[i]
		n := &f.nodes[pp.node]
		if n.sw >= 0 {
			return f.ports[n.base].lid != 0
		}
		return pp.lid != 0 || !needsLID(int(pp.node), pp)
	}
	for n := range f.nodes {
		if !reach[n] {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			if !configured(i) {
				continue
			}
			pp := &f.ports[i]
			pp.smlid = smlid
			pp.prefix = DefaultGIDPrefix
			if pp.remote >= 0 && pp.phys == 5 && f.ports[pp.remote].phys == 5 && configured(pp.remote) {
				pp.state = 4
			}
		}
	}
	if err := f.programLFTs(reach, owner, maxLID); err != nil {
		return err
	}
	f.programBroadcast(reach)
	if need > MaxUnicastLID {
		return &LIDSpaceError{Ports: need, Unassigned: need - MaxUnicastLID}
	}
	return nil
}

func (f *Fabric) programLFTs(reach []bool, owner []int32, maxLID uint16) error {
	// Switch graph and hop distances (BFS from every switch).
	var sws []int32 // node index per switch number
	swNum := make([]int32, len(f.nodes))
	for n := range f.nodes {
		swNum[n] = -1
		if reach[n] && f.nodes[n].sw >= 0 {
			swNum[n] = int32(len(sws))
			sws = append(sws, int32(n))
		}
	}
	S := len(sws)
	if S == 0 {
		return nil
	}
	if S > 16384 {
		return fmt.Errorf("sim: RunSM: %d switches is too many for the min-hop table", S)
	}
	active := func(pp *port) bool {
		return pp.remote >= 0 && pp.linkValid() && f.ports[pp.remote].linkValid()
	}
	// The switch graph once: for switch s, its active ports to other
	// switches are adjPort[adj[s]:adj[s+1]], leading to switches adjTo.
	adj := make([]int32, S+1)
	var adjPort []uint8
	var adjTo []int32
	for s := 0; s < S; s++ {
		adj[s] = int32(len(adjTo))
		n := &f.nodes[sws[s]]
		for p := 1; p <= int(n.nports); p++ {
			pp := &f.ports[n.base+int32(p)]
			if !active(pp) {
				continue
			}
			if t := swNum[f.ports[pp.remote].node]; t >= 0 {
				adjPort = append(adjPort, uint8(p))
				adjTo = append(adjTo, t)
			}
		}
	}
	adj[S] = int32(len(adjTo))
	dist := make([]uint8, S*S)
	for i := range dist {
		dist[i] = 0xff
	}
	// Breadth-first searches from 64 switches at a time, one bit per
	// search: a switch is reached at level L by the searches that reached
	// one of its neighbours at level L-1 and not it yet.
	visited := make([]uint64, S)
	frontier := make([]uint64, S)
	next := make([]uint64, S)
	for b0 := 0; b0 < S; b0 += 64 {
		clear(visited)
		clear(frontier)
		for i := 0; i < 64 && b0+i < S; i++ {
			src := b0 + i
			visited[src] |= 1 << i
			frontier[src] |= 1 << i
			dist[src*S+src] = 0
		}
		for level := 1; ; level++ {
			reached := false
			for v := 0; v < S; v++ {
				var m uint64
				for _, u := range adjTo[adj[v]:adj[v+1]] {
					m |= frontier[u]
				}
				m &^= visited[v]
				next[v] = m
				if m == 0 {
					continue
				}
				reached = true
				visited[v] |= m
				for ; m != 0; m &= m - 1 {
					i := bits.TrailingZeros64(m)
					dist[(b0+i)*S+v] = uint8(level)
				}
			}
			frontier, next = next, frontier
			if !reached || level == 0xfe {
				break
			}
		}
	}
	// Where each LID terminates: the switch it is on or hangs off, and
	// the port of that switch.
	type dest struct {
		sw   int32 // switch number, -1 if none
		port uint8 // egress port on that switch
	}
	dests := make([]dest, len(owner))
	for l := 1; l < len(owner); l++ {
		if owner[l] < 0 {
			dests[l] = dest{-1, 0}
			continue
		}
		pp := &f.ports[owner[l]]
		if s := swNum[pp.node]; s >= 0 {
			dests[l] = dest{s, 0}
			continue
		}
		dests[l] = dest{-1, 0}
		if pp.remote >= 0 {
			rp := &f.ports[pp.remote]
			if s := swNum[rp.node]; s >= 0 {
				dests[l] = dest{s, rp.num}
			}
		}
	}
	// Per switch: the candidate ports toward each destination switch
	// (the neighbours one hop nearer, in port order), as sets shared by
	// the destinations with the same candidates. A LID goes out of the
	// least-loaded candidate, the first in port order on a tie. Loads
	// only grow, so a set remembers its last choice (at index bi, with
	// load bl): while that port's load is still bl it is still the
	// choice, and after it is taken the next choice is the first later
	// port still at bl (the earlier ones are above bl), or, when there is
	// none, a new search. The tables are those of a search per LID.
	type cset struct {
		ports []uint8
		bi    int    // index of the remembered choice, -1: none
		bl    uint32 // its load then
	}
	setOf := make([]int32, S)
	ccnt := make([]uint8, S) // candidates per destination
	var clist []uint8        // and the candidates, deg per destination
	var sets []cset
	index := map[string]int32{}
	cbuf := make([]uint8, 0, 1024)
	for s := 0; s < S; s++ {
		n := &f.nodes[sws[s]]
		sw := &f.sws[n.sw]
		sw.lft = sw.lft[:0]
		sw.growLFT(int(maxLID) + 1)
		var load [256]uint32 // LIDs routed out of each port
		clear(index)
		sets = sets[:0]
		cbuf = cbuf[:0]
		// candidates of every destination at once, neighbour by
		// neighbour in port order (rows read in sequence): d gets port p
		// when p's neighbour is one hop nearer to d (hop counts are
		// symmetric, so that is the neighbour's row)
		srow := dist[s*S : (s+1)*S]
		deg := int(adj[s+1] - adj[s])
		clear(ccnt)
		if need := S * deg; cap(clist) < need {
			clist = make([]uint8, need)
		}
		for k := adj[s]; k < adj[s+1]; k++ {
			trow := dist[int(adjTo[k])*S : int(adjTo[k]+1)*S]
			p := adjPort[k]
			for d, h := range trow {
				if h+1 == srow[d] {
					clist[d*deg+int(ccnt[d])] = p
					ccnt[d]++
				}
			}
		}
		for d := 0; d < S; d++ {
			setOf[d] = -1
			if d == s || srow[d] == 0xff || ccnt[d] == 0 {
				continue
			}
			c := clist[d*deg : d*deg+int(ccnt[d])]
			if id, ok := index[string(c)]; ok {
				setOf[d] = id
				continue
			}
			start := len(cbuf)
			cbuf = append(cbuf, c...)
			id := int32(len(sets))
			index[string(c)] = id
			// full slice expression: later appends never write into it
			sets = append(sets, cset{ports: cbuf[start:len(cbuf):len(cbuf)], bi: -1})
			setOf[d] = id
		}
		for l := 1; l <= int(maxLID); l++ {
			d := dests[l]
			if d.sw < 0 {
				continue
			}
			if int(d.sw) == s {
				sw.lft[l] = d.port
				continue
			}
			id := setOf[d.sw]
			if id < 0 {
				continue
			}
			cs := &sets[id]
			if cs.bi < 0 || load[cs.ports[cs.bi]] != cs.bl {
				cs.bi, cs.bl = 0, load[cs.ports[0]]
				for j, p := range cs.ports {
					if load[p] < cs.bl {
						cs.bi, cs.bl = j, load[p]
					}
				}
			}
			best := cs.ports[cs.bi]
			next := -1
			for j := cs.bi + 1; j < len(cs.ports); j++ {
				if load[cs.ports[j]] == cs.bl {
					next = j
					break
				}
			}
			cs.bi = next
			sw.lft[l] = best
			load[best]++
		}
		sw.top = maxLID
		sw.portChange = false
	}
	return nil
}
