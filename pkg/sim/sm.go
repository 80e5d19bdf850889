package sim

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/ibfabric/ibdiag/pkg/routing/minhop"
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
//     (Options.OpenSMLIDs: in OpenSM's order instead, the SM's port
//     first, as OpenSM numbers them on ibsim.)
//   - sets MasterSMLID (the SM port's LID) and the GID prefix fe80:: on
//     every reachable port, and brings every reachable linked port to
//     Active.
//   - programs on every reachable switch the LFT OpenSM's minhop engine
//     programs (minhop.LFTs): a switch's own LID goes to port 0, a
//     CA/router LID to the port it hangs on, every other LID to a port on
//     a shortest switch-to-switch path, among equal ports the one with the
//     fewest CA/router LIDs routed through it so far (lowest port number
//     on ties), the ports taken in OpenSM's order (the switches with the
//     most CAs first), not in LID order: the routes do not depend on the
//     LIDs. LinearFDBTop = highest LID; PortStateChange is cleared.
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
	openSM := f.opt.OpenSMLIDs && need <= MaxUnicastLID
	for n := range f.nodes {
		if !reach[n] || openSM {
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
	if openSM {
		f.assignOpenSMLIDs(reach, sm, taken, func(n int, pp *port) bool { return needsLID(n, pp) })
	} else if need <= MaxUnicastLID {
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

// assignOpenSMLIDs numbers the reachable ports needing a LID as OpenSM's
// first sweep does (osm_lid_mgr.c, LMC 0, no guid2lid file): the SM's
// port first, then its port table's order (port GUIDs compared as
// little-endian numbers), each port keeping the LID it has unless a port
// before it kept that LID, the others taking the lowest LIDs no port had.
func (f *Fabric) assignOpenSMLIDs(reach []bool, sm int32, taken []bool, needsLID func(n int, pp *port) bool) {
	guid := func(i int32) uint64 {
		pp := &f.ports[i]
		n := &f.nodes[pp.node]
		if n.sw >= 0 {
			return n.guid
		}
		return n.guid + uint64(pp.num)
	}
	smPort := f.nodes[sm].base
	var order []int32
	had := make([]bool, MaxUnicastLID+1) // LIDs some port has: not free
	for n := range f.nodes {
		if !reach[n] {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			if pp := &f.ports[i]; needsLID(n, pp) {
				order = append(order, i)
				if pp.lid <= MaxUnicastLID {
					had[pp.lid] = true
				}
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		if order[a] == smPort || order[b] == smPort {
			return order[a] == smPort && order[b] != smPort
		}
		return bits.ReverseBytes64(guid(order[a])) < bits.ReverseBytes64(guid(order[b]))
	})
	free := 1
	for _, i := range order {
		pp := &f.ports[i]
		pp.lmc = 0
		if pp.lid != 0 && pp.lid <= MaxUnicastLID && !taken[pp.lid] {
			taken[pp.lid] = true
			continue
		}
		for had[free] || taken[free] {
			free++
		}
		pp.lid = uint16(free)
		taken[free] = true
	}
}

// programLFTs programs on every reachable switch the LFT OpenSM's minhop
// engine would (minhop.LFTs) with the LIDs owner holds.
func (f *Fabric) programLFTs(reach []bool, owner []int32, maxLID uint16) error {
	// The reachable nodes, with the LIDs owned and the active links.
	idx := make([]int32, len(f.nodes))
	var nodes []int32
	for n := range f.nodes {
		idx[n] = -1
		if reach[n] {
			idx[n] = int32(len(nodes))
			nodes = append(nodes, int32(n))
		}
	}
	active := func(pp *port) bool {
		return pp.remote >= 0 && pp.linkValid() && f.ports[pp.remote].linkValid()
	}
	g := &minhop.Graph{Nodes: make([]minhop.Node, len(nodes))}
	for i, n := range nodes {
		nd := &f.nodes[n]
		mn := &g.Nodes[i]
		mn.GUID, mn.SysGUID, mn.Switch = nd.guid, nd.sysguid, nd.sw >= 0
		lo, hi := f.nodePorts(n)
		first := 0
		if !mn.Switch {
			first = 1
		}
		mn.Ports = make([]minhop.Port, first+int(hi-lo))
		for j := lo; j < hi; j++ {
			pp := &f.ports[j]
			mp := &mn.Ports[pp.num]
			mp.Peer = -1
			if pp.lid != 0 && int(pp.lid) < len(owner) && owner[pp.lid] == j {
				mp.LID = pp.lid
			}
			if pp.num > 0 && active(pp) {
				rp := &f.ports[pp.remote]
				if r := idx[rp.node]; r >= 0 {
					mp.Peer, mp.PeerPort = r, rp.num
				}
			}
		}
		if !mn.Switch {
			mn.Ports[0].Peer = -1
		}
	}
	lfts, err := minhop.LFTs(g)
	if err != nil {
		return fmt.Errorf("sim: RunSM: %w", err)
	}
	for i, n := range nodes {
		nd := &f.nodes[n]
		if nd.sw < 0 {
			continue
		}
		sw := &f.sws[nd.sw]
		sw.lft = sw.lft[:0]
		sw.growLFT(int(maxLID) + 1)
		copy(sw.lft, lfts[i])
		for j := len(lfts[i]); j < len(sw.lft); j++ {
			sw.lft[j] = 0xff
		}
		sw.top = maxLID
		sw.portChange = false
	}
	return nil
}
