package sim

import (
	"encoding/binary"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// OpenSMSMKey is OpenSM's default SM_Key: an SA request carrying it is
// trusted, and the SA lists each group member's MCMemberRecord.
const OpenSMSMKey uint64 = 1

// programBroadcast makes every CA port RunSM configured (a LID, an
// Active link) a full member of the IPoIB broadcast group, as OpenSM's
// IPoIB clients would join it, and programs the group's MLID (0xC000)
// in the switches' MFTs: a breadth-first tree of the switches from the
// first member's switch, pruned to the branches that lead to members;
// each switch forwards to its member CA ports and its tree links.
// Called by RunSM under f.mu.
func (f *Fabric) programBroadcast(reach []bool) {
	f.bcast = f.bcast[:0]
	members := map[int32][]uint8{} // switch node -> its member CA ports
	var first int32 = -1
	for n := range f.nodes {
		nd := &f.nodes[n]
		if !reach[n] || nd.typ != smp.NodeCA {
			continue
		}
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			pp := &f.ports[i]
			if pp.lid == 0 || pp.state != 4 || pp.remote < 0 {
				continue
			}
			f.bcast = append(f.bcast, i)
			rp := &f.ports[pp.remote]
			if f.nodes[rp.node].sw >= 0 {
				if first < 0 {
					first = rp.node
				}
				members[rp.node] = append(members[rp.node], rp.num)
			}
		}
	}
	masks := map[int32][]uint8{}
	if first >= 0 {
		// Breadth-first over Active switch-to-switch links.
		type via struct {
			parent   int32
			out, in  uint8 // the parent's port, the child's port
			explored bool
		}
		tree := map[int32]*via{first: {parent: -1}}
		order := []int32{first}
		for k := 0; k < len(order); k++ {
			s := order[k]
			lo, hi := f.nodePorts(s)
			for i := lo + 1; i < hi; i++ {
				pp := &f.ports[i]
				if pp.remote < 0 || pp.state != 4 {
					continue
				}
				rp := &f.ports[pp.remote]
				if rp.state != 4 || f.nodes[rp.node].sw < 0 || tree[rp.node] != nil {
					continue
				}
				tree[rp.node] = &via{parent: s, out: pp.num, in: rp.num}
				order = append(order, rp.node)
			}
		}
		// Keep the paths from each member switch up to the root.
		for s, ps := range members {
			masks[s] = append(masks[s], ps...)
			for v := tree[s]; v != nil && v.parent >= 0 && !v.explored; v = tree[v.parent] {
				v.explored = true
				masks[s] = append(masks[s], v.in)
				masks[v.parent] = append(masks[v.parent], v.out)
				s = v.parent
			}
		}
	}
	last := uint32(f.opt.MulticastFDBCap) / 32
	for n := range f.nodes {
		nd := &f.nodes[n]
		if nd.sw < 0 || last == 0 {
			continue
		}
		sw := &f.sws[nd.sw]
		ps := masks[int32(n)]
		if sw.mft == nil && len(ps) == 0 {
			continue
		}
		if sw.mft == nil {
			sw.mft = make([]byte, int(sw.numPortMsk)*64) // block 0: see doMFT
		}
		// MLID 0xC000: block 0, entry 0 of each position.
		for pos := 0; pos < int(sw.numPortMsk); pos++ {
			binary.BigEndian.PutUint16(sw.mft[pos*64:], 0)
		}
		for _, p := range ps {
			off := int(p/16) * 64
			binary.BigEndian.PutUint16(sw.mft[off:], binary.BigEndian.Uint16(sw.mft[off:])|1<<(p%16))
		}
	}
}

// saGroups answers an MCMemberRecord query: the broadcast group, one
// record per member (with the member's PortGID and full membership) to a
// request carrying OpenSM's SM_Key, else one record without a PortGID,
// as OpenSM answers a requester that is not trusted.
func (f *Fabric) saGroups(tmpl []byte, mask, smKey uint64) []byte {
	var want sa.MCMemberRecord
	want.UnmarshalBinary(tmpl)
	g := broadcastGroup
	if mask&sa.MCRMGID != 0 && want.MGID != g.MGID || mask&sa.MCRMLID != 0 && want.MLID != g.MLID {
		return nil
	}
	var out []byte
	b := make([]byte, 56)
	if smKey != OpenSMSMKey || len(f.bcast) == 0 {
		g.MarshalTo(b)
		return b
	}
	for _, i := range f.bcast {
		pp := &f.ports[i]
		g.PortGID = f.portGID(&f.nodes[pp.node], pp)
		g.JoinState = 1
		if mask&sa.MCRPortGID != 0 && want.PortGID != g.PortGID {
			continue
		}
		clear(b)
		g.MarshalTo(b)
		out = append(out, b...)
	}
	return out
}
