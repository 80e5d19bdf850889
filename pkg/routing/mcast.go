package routing

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Kinds of MCastFinding.
const (
	// MCastNoTable: a switch's MFT block holding the group's MLID could
	// not be read; the group is checked without it.
	MCastNoTable = "mcast-no-table"
	// MCastNoTree: no switch forwards the group, yet it has members.
	MCastNoTree = "mcast-no-tree"
	// MCastMissing: a member port the tree does not reach (its switch's
	// entry lacks the port to it).
	MCastMissing = "mcast-missing-member"
	// MCastNonMember: a switch forwards the group to a CA or router port
	// (or to its own port 0) that is not a member.
	MCastNonMember = "mcast-non-member"
	// MCastDownPort: a switch forwards the group to a port without a link
	// or whose link is not Active.
	MCastDownPort = "mcast-down-port"
	// MCastOneWay: a switch forwards the group to a switch whose entry
	// lacks the port back (or is empty): the link is not a tree edge.
	MCastOneWay = "mcast-one-way"
	// MCastLoop: the tree's links close a circle (packets are copied
	// around it).
	MCastLoop = "mcast-loop"
	// MCastSplit: the switches forwarding the group form more than one
	// tree (members in one never hear the others).
	MCastSplit = "mcast-split"
	// MCastMTU: a tree link's MTU is below the group's.
	MCastMTU = "mcast-mtu"
	// MCastRate: a tree link's rate is below the group's.
	MCastRate = "mcast-rate"
)

// MCastGroup is a multicast group to check: its MLID, the MTU and rate
// codes every hop must carry (as in its MCMemberRecord) and its member
// ports' GUIDs.
type MCastGroup struct {
	MGID      [16]byte
	MLID      uint16
	MTU, Rate uint8
	// Members are the member ports' PortGUIDs. With MembersKnown false
	// (the SA listed none, as OpenSM does for a requester without its
	// SM_Key) the members are taken as the CA and router ports the tree
	// reaches, and MCastMissing and MCastNonMember cannot be found.
	Members      []uint64
	MembersKnown bool
}

// MFTs holds the switches' multicast forwarding table entries read for
// some MLIDs.
type MFTs struct {
	ports  map[*model.Node]map[uint16][]uint8
	failed map[*model.Node]map[uint16]error
	// Read is the number of MFT blocks read (SMPs answered).
	Read int
}

// Ports returns the ports switch sw forwards mlid to (ascending) and
// whether the entry was read.
func (m *MFTs) Ports(sw *model.Node, mlid uint16) ([]uint8, bool) {
	if _, bad := m.failed[sw][mlid]; bad {
		return nil, false
	}
	return m.ports[sw][mlid], true
}

// Programmed reports whether any switch forwards mlid to any port.
func (m *MFTs) Programmed(mlid uint16) bool {
	for _, e := range m.ports {
		if len(e[mlid]) > 0 {
			return true
		}
	}
	return false
}

// MFTReader reads one MulticastForwardingTable block position of a
// switch (SubnGet, attribute 0x1B).
type MFTReader func(ctx context.Context, sw *model.Node, block uint16, position uint8) (smp.MulticastForwardingTable, error)

// ReadMFTs reads, from every switch of f, the MFT blocks holding mlids
// (every port position). A block that cannot be read is recorded as
// failed for its MLIDs; only the context's error is returned.
func ReadMFTs(ctx context.Context, f *model.Fabric, mlids []uint16, read MFTReader) (*MFTs, error) {
	m := &MFTs{ports: map[*model.Node]map[uint16][]uint8{}, failed: map[*model.Node]map[uint16]error{}}
	blocks := map[uint16][]uint16{}
	var order []uint16
	for _, mlid := range mlids {
		b, _, ok := smp.MFTBlock(mlid)
		if !ok {
			continue
		}
		if _, seen := blocks[b]; !seen {
			order = append(order, b)
		}
		if !slices.Contains(blocks[b], mlid) {
			blocks[b] = append(blocks[b], mlid)
		}
	}
	for _, sw := range f.Switches() {
		m.ports[sw] = map[uint16][]uint8{}
		nports := sw.NumPorts()
		for _, b := range order {
			var tabs [16]smp.MulticastForwardingTable
			var err error
			// A block beyond the switch's MulticastFDBCap holds nothing.
			if int(b)*smp.MFTBlockSize >= int(sw.SwitchInfo.MulticastFDBCap) {
				continue
			}
			for pos := 0; pos <= nports/smp.MFTPortsPerMask && err == nil; pos++ {
				tabs[pos], err = read(ctx, sw, b, uint8(pos))
				if err == nil {
					m.Read++
				}
			}
			if ctx.Err() != nil {
				return m, ctx.Err()
			}
			for _, mlid := range blocks[b] {
				if err != nil {
					if m.failed[sw] == nil {
						m.failed[sw] = map[uint16]error{}
					}
					m.failed[sw][mlid] = err
					continue
				}
				_, i, _ := smp.MFTBlock(mlid)
				var ps []uint8
				for p := 0; p <= nports; p++ {
					if tabs[p/smp.MFTPortsPerMask][i]&(1<<(p%smp.MFTPortsPerMask)) != 0 {
						ps = append(ps, uint8(p))
					}
				}
				m.ports[sw][mlid] = ps
			}
		}
	}
	return m, nil
}

// MCastFinding is one problem of a group's multicast tree.
type MCastFinding struct {
	Kind  string
	Group *MCastGroup
	// At is the switch concerned (the one holding the entry, the
	// member's switch; the first of Cycle for a loop); nil for
	// MCastNoTree and MCastSplit.
	At *model.Node
	// Port is At's port concerned (0 when none).
	Port uint8
	// Member is the member port concerned (MCastMissing) or the port
	// forwarded to (MCastNonMember), if any.
	Member *model.PhysPort
	// Cycle lists the switches of a loop in order (MCastLoop); Parts the
	// number of separate trees (MCastSplit).
	Cycle []*model.Node
	Parts int
	// Have is the link's MTU or rate code (MCastMTU, MCastRate).
	Have uint8
	// Err is the read error (MCastNoTable).
	Err error
}

// MCastGroupResult is what CheckMCast found for one group.
type MCastGroupResult struct {
	Group *MCastGroup
	// Switches is the number of switches forwarding the group, Links the
	// switch-to-switch tree links, Members the member ports (known or
	// taken from the tree), Reached those the tree reaches.
	Switches, Links, Members, Reached int
	// Unknown counts the members no discovered port has.
	Unknown  int
	Findings []MCastFinding
}

// MCastResult is what CheckMCast found.
type MCastResult struct {
	Groups []MCastGroupResult
	// Checked is the number of groups with a tree or members to check.
	Checked int
}

// Clean reports whether no group has a finding.
func (r *MCastResult) Clean() bool { return r.Count("") == 0 }

// Count returns the number of findings of a kind ("" for all).
func (r *MCastResult) Count(kind string) int {
	n := 0
	for i := range r.Groups {
		for j := range r.Groups[i].Findings {
			if kind == "" || r.Groups[i].Findings[j].Kind == kind {
				n++
			}
		}
	}
	return n
}

// LinkMTU is the MTU a link carries: the lower NeighborMTU of its ends.
func LinkMTU(a, b *model.PhysPort) uint8 {
	m := a.Info.NeighborMTU
	if b != nil && b.HasInfo && b.Info.NeighborMTU < m {
		m = b.Info.NeighborMTU
	}
	return m
}

// LinkRate is the rate code a link carries: the lower of its ends'.
func LinkRate(a, b *model.PhysPort) uint8 {
	r := model.PortRate(a)
	if b != nil && b.HasInfo {
		r = smp.MinRate(r, model.PortRate(b))
	}
	return r
}

// CheckMCast checks each group's multicast tree in mfts: the switches'
// entries for its MLID must form one tree (each switch-to-switch link in
// the entries of both its ends, no circle, one piece) that reaches every
// member port and no other CA or router port, over Active links whose
// MTU and rate are at least the group's.
func CheckMCast(f *model.Fabric, groups []MCastGroup, mfts *MFTs) *MCastResult {
	res := &MCastResult{}
	for gi := range groups {
		g := &groups[gi]
		gr := checkGroup(f, g, mfts)
		if gr.Switches > 0 || gr.Members > 0 {
			res.Checked++
		}
		res.Groups = append(res.Groups, gr)
	}
	return res
}

func checkGroup(f *model.Fabric, g *MCastGroup, mfts *MFTs) MCastGroupResult {
	gr := MCastGroupResult{Group: g}
	add := func(fd MCastFinding) {
		fd.Group = g
		gr.Findings = append(gr.Findings, fd)
	}
	// Member ports (physical: a CA's port, a switch's port 0).
	members := map[*model.PhysPort]bool{}
	for _, guid := range g.Members {
		p := f.PortByGUID(guid)
		if p == nil || p.Phys == nil {
			gr.Unknown++
			continue
		}
		members[p.Phys] = true
	}
	sws := f.Switches()
	on := map[*model.Node][]uint8{}
	for _, sw := range sws {
		ps, ok := mfts.Ports(sw, g.MLID)
		if !ok {
			add(MCastFinding{Kind: MCastNoTable, At: sw, Err: mfts.failed[sw][g.MLID]})
			continue
		}
		if len(ps) > 0 {
			on[sw] = ps
		}
	}
	gr.Switches = len(on)
	if !g.MembersKnown {
		// The members are the end ports the tree reaches.
		for _, sw := range sws {
			for _, p := range on[sw] {
				pp := sw.Port(int(p))
				switch {
				case p == 0:
					if z := sw.Port(0); z != nil {
						members[z] = true
					}
				case pp != nil && pp.Remote != nil && !pp.Remote.Node.IsSwitch():
					members[pp.Remote] = true
				}
			}
		}
	}
	gr.Members = len(members)
	if len(on) == 0 {
		if len(members) > 0 {
			add(MCastFinding{Kind: MCastNoTree})
		}
		return gr
	}
	// Union-find over the switches and member ports the tree joins.
	parent := map[*model.Node]*model.Node{}
	var find func(n *model.Node) *model.Node
	find = func(n *model.Node) *model.Node {
		p, ok := parent[n]
		if !ok || p == n {
			parent[n] = n
			return n
		}
		r := find(p)
		parent[n] = r
		return r
	}
	// adj is the tree accepted so far (switch to switch), for the path
	// of a loop.
	adj := map[*model.Node][]*model.Node{}
	reached := map[*model.PhysPort]bool{}
	checkLink := func(at *model.Node, pp *model.PhysPort) {
		if mtu := LinkMTU(pp, pp.Remote); g.MTU != 0 && mtu < g.MTU {
			add(MCastFinding{Kind: MCastMTU, At: at, Port: pp.Num, Have: mtu})
		}
		if rate := LinkRate(pp, pp.Remote); g.Rate != 0 && smp.CompareRates(g.Rate, rate) > 0 {
			add(MCastFinding{Kind: MCastRate, At: at, Port: pp.Num, Have: rate})
		}
	}
	for _, sw := range sws {
		ps, ok := on[sw]
		if !ok {
			continue
		}
		find(sw)
		for _, p := range ps {
			if p == 0 {
				z := sw.Port(0)
				if z != nil && members[z] {
					reached[z] = true
				} else {
					add(MCastFinding{Kind: MCastNonMember, At: sw, Port: 0, Member: z})
				}
				continue
			}
			pp := sw.Port(int(p))
			if pp == nil || pp.Remote == nil {
				add(MCastFinding{Kind: MCastDownPort, At: sw, Port: p})
				continue
			}
			if !PortActive(pp) || !PortActive(pp.Remote) {
				add(MCastFinding{Kind: MCastDownPort, At: sw, Port: p, Err: &PortStateError{Port: pp}})
				continue
			}
			r := pp.Remote
			if !r.Node.IsSwitch() {
				if !members[r] {
					add(MCastFinding{Kind: MCastNonMember, At: sw, Port: p, Member: r})
					continue
				}
				reached[r] = true
				checkLink(sw, pp)
				continue
			}
			back, ok := on[r.Node]
			if !ok || !slices.Contains(back, r.Num) {
				add(MCastFinding{Kind: MCastOneWay, At: sw, Port: p})
				continue
			}
			// Each two-way link is seen from both ends: take it once.
			if sw.GUID() > r.Node.GUID() || (sw == r.Node && p > r.Num) {
				continue
			}
			gr.Links++
			checkLink(sw, pp)
			a, b := find(sw), find(r.Node)
			if a == b {
				cycle := treePath(adj, sw, r.Node)
				add(MCastFinding{Kind: MCastLoop, At: sw, Port: p, Cycle: cycle})
				continue
			}
			parent[a] = b
			adj[sw] = append(adj[sw], r.Node)
			adj[r.Node] = append(adj[r.Node], sw)
		}
	}
	gr.Reached = len(reached)
	// Members the tree misses, in discovery order.
	for _, n := range f.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !members[pp] || reached[pp] {
				continue
			}
			fd := MCastFinding{Kind: MCastMissing, Member: pp}
			switch {
			case n.IsSwitch():
				fd.At = n
			case pp.Remote != nil && pp.Remote.Node.IsSwitch():
				fd.At, fd.Port = pp.Remote.Node, pp.Remote.Num
			}
			add(fd)
		}
	}
	roots := map[*model.Node]bool{}
	for sw := range on {
		roots[find(sw)] = true
	}
	if len(roots) > 1 {
		add(MCastFinding{Kind: MCastSplit, Parts: len(roots)})
	}
	return gr
}

// treePath returns the switches on the tree path from a to b (a first),
// or just a and b when the tree holds none.
func treePath(adj map[*model.Node][]*model.Node, a, b *model.Node) []*model.Node {
	prev := map[*model.Node]*model.Node{a: nil}
	queue := []*model.Node{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == b {
			var path []*model.Node
			for x := b; x != nil; x = prev[x] {
				path = append(path, x)
			}
			slices.Reverse(path)
			return path
		}
		for _, m := range adj[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	if a == b {
		return []*model.Node{a}
	}
	return []*model.Node{a, b}
}

// String is a finding's kind and where (for tests and logs).
func (fd *MCastFinding) String() string {
	at := ""
	if fd.At != nil {
		at = fmt.Sprintf(" at %q port %d", fd.At.Description(), fd.Port)
	}
	return fmt.Sprintf("%s mlid 0x%04x%s", fd.Kind, fd.Group.MLID, at)
}
