package sim

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// The embedded SA. After RunSM, SA requests (class 0x03) sent LID-routed
// to the SM port's LID (every port's MasterSMLID) are answered from the
// fabric's current state, as OpenSM's SA answers them:
//
//   - SubnAdmGet and SubnAdmGetTable of NodeRecord (one per LID: a
//     switch's port 0, each CA or router port with a LID), PortInfoRecord
//     (every port of a switch under its LID, each CA or router port with
//     a LID) and PathRecord (every ordered pair of LIDs the forwarding
//     tables lead between, SL 0, P_Key 0xFFFF, reversible, MTU the least
//     MTUCap and rate the least port rate of the ports on the route (a
//     switch end counts with its port 0, as OpenSM counts it), each
//     with selector "exactly", PacketLifeTime 0x12 as OpenSM's default
//     subnet_timeout, hop limit 0, GIDs fe80::port GUID).
//   - MCMemberRecord: the one group OpenSM creates for its default
//     partition, the IPoIB broadcast group ff12:401b:ffff::ffff:ffff at
//     MLID 0xC000 (MTU 2048, 10 Gb/s, P_Key 0xFFFF, Q_Key 0x0B1B, as
//     OpenSM 3.3.23 answers on ibsim). RunSM makes every CA port it
//     configures a full member, as OpenSM's IPoIB clients would join it,
//     and programs the group's MFT entries (see programBroadcast). As
//     OpenSM, the SA lists one record per member only to a request
//     carrying its SM_Key (OpenSMSMKey, saquery --smkey 1); to any other,
//     one record with a zero PortGID.
//   - Components matched: NodeRecord LID, NodeGUID and PortGUID;
//     PortInfoRecord EndportLID and PortNum; PathRecord SLID, DLID, SGID
//     and DGID; MCMemberRecord MGID and MLID. Other component bits are
//     ignored.
//   - A Get matching no record is ERR_NO_RECORDS, more than one
//     ERR_TOO_MANY_RECORDS; any other attribute or method is
//     ERR_REQ_INVALID.
//   - A GetTable answer longer than one MAD is sent as an RMPP transfer
//     through Stream (window 1 until the client's first ACK opens it, as
//     the kernel's sender starts), waiting for the client's ACKs; through
//     Exchange only its first segment comes back.
//
// Left out: multicast beyond the broadcast group (no other group, no
// joins or leaves through the SA, no send-only or non members, no
// MTU or rate check of the members' links, MFT entries only for the
// MLID 0xC000), LMC above 0, QoS and SL assignment (every SL
// is 0), ServiceRecords, InformInfo, GUIDInfo and the other attributes,
// SM_Key checks beyond the member list, Set and Delete (joins and leaves: ERR_REQ_INVALID).

const saPLT = 0x12

// isSA reports whether an SA request to dlid from port src reaches the
// SA: an SM ran (the port knows its MasterSMLID) and dlid is that LID.
func (f *Fabric) isSA(src int32, dlid uint16) bool {
	sm := f.ports[src].smlid
	return sm != 0 && sm == dlid
}

// saAnswer computes the records of an SA request (under f.mu).
func (f *Fabric) saAnswer(req []byte) (attr uint16, stride int, recs []byte, status uint16) {
	var h sa.Header
	if err := h.UnmarshalBinary(req); err != nil || (h.Method != sa.MethodGet && h.Method != sa.MethodGetTable) {
		return h.AttrID, 0, nil, sa.StatusReqInvalid
	}
	tmpl := req[sa.DataOffset:sa.MADSize]
	mask := h.ComponentMask
	switch h.AttrID {
	case sa.AttrNodeRecord:
		stride = 112
		recs = f.saNodeRecords(tmpl, mask)
	case sa.AttrPortInfoRecord:
		stride = 72
		recs = f.saPortInfoRecords(tmpl, mask)
	case sa.AttrPathRecord:
		stride = sa.PathRecordSize
		recs = f.saPathRecords(tmpl, mask)
	case sa.AttrMCMemberRecord:
		stride = 56
		recs = f.saGroups(tmpl, mask, h.SMKey)
	default:
		return h.AttrID, 0, nil, sa.StatusReqInvalid
	}
	if h.Method == sa.MethodGet {
		switch n := len(recs) / stride; {
		case n == 0:
			return h.AttrID, stride, nil, sa.StatusNoRecords
		case n > 1:
			return h.AttrID, stride, nil, sa.StatusTooManyRecords
		}
	}
	return h.AttrID, stride, recs, 0
}

// lidPorts calls fn with every port that has a LID: a switch's port 0,
// a CA's or router's ports.
func (f *Fabric) lidPorts(fn func(n *node, p int32)) {
	for i := range f.nodes {
		n := &f.nodes[i]
		lo, hi := f.nodePorts(int32(i))
		for p := lo; p < hi; p++ {
			if f.ports[p].lid != 0 {
				fn(n, p)
			}
		}
	}
}

func (f *Fabric) saNodeRecords(tmpl []byte, mask uint64) []byte {
	var want sa.NodeRecord
	want.UnmarshalBinary(tmpl)
	var out []byte
	var b [112]byte
	f.lidPorts(func(n *node, p int32) {
		pp := &f.ports[p]
		clear(b[:])
		binary.BigEndian.PutUint16(b[:], pp.lid)
		f.renderNodeInfo(n, pp.num, b[4:68])
		clear(b[44:])
		copy(b[44:108], n.description())
		var r sa.NodeRecord
		r.UnmarshalBinary(b[:])
		if mask&sa.NRLID != 0 && r.LID != want.LID ||
			mask&sa.NRNodeGUID != 0 && r.NodeInfo.NodeGUID != want.NodeInfo.NodeGUID ||
			mask&sa.NRPortGUID != 0 && r.NodeInfo.PortGUID != want.NodeInfo.PortGUID {
			return
		}
		out = append(out, b[:]...)
	})
	return out
}

func (f *Fabric) saPortInfoRecords(tmpl []byte, mask uint64) []byte {
	var want sa.PortInfoRecord
	want.UnmarshalBinary(tmpl)
	var out []byte
	var b [72]byte
	for i := range f.nodes {
		n := &f.nodes[i]
		lo, hi := f.nodePorts(int32(i))
		lid := uint16(0)
		if n.sw >= 0 {
			lid = f.ports[lo].lid
		}
		for p := lo; p < hi; p++ {
			pp := &f.ports[p]
			l := lid
			if n.sw < 0 {
				l = pp.lid
			}
			if l == 0 || mask&sa.PIRLID != 0 && l != want.LID || mask&sa.PIRPortNum != 0 && pp.num != want.PortNum {
				continue
			}
			clear(b[:])
			binary.BigEndian.PutUint16(b[:], l)
			b[2] = pp.num
			f.renderPortInfo(pp, b[4:68])
			out = append(out, b[:]...)
		}
	}
	return out
}

func (f *Fabric) saPathRecords(tmpl []byte, mask uint64) []byte {
	var want sa.PathRecord
	want.UnmarshalBinary(tmpl)
	var out []byte
	var b [sa.PathRecordSize]byte
	f.lidPorts(func(sn *node, s int32) {
		sp := &f.ports[s]
		if mask&sa.PRSLID != 0 && sp.lid != want.SLID || mask&sa.PRSGID != 0 && f.portGID(sn, sp) != want.SGID {
			return
		}
		f.lidPorts(func(dn *node, d int32) {
			dp := &f.ports[d]
			if mask&sa.PRDLID != 0 && dp.lid != want.DLID || mask&sa.PRDGID != 0 && f.portGID(dn, dp) != want.DGID {
				return
			}
			mtu, rate, ok := f.saPathParms(s, dp.lid)
			if !ok {
				return
			}
			r := sa.PathRecord{
				DGID: f.portGID(dn, dp), SGID: f.portGID(sn, sp),
				DLID: dp.lid, SLID: sp.lid, Reversible: true, PKey: 0xFFFF,
				MTUSelector: sa.SelectorExactly, MTU: mtu,
				RateSelector: sa.SelectorExactly, Rate: rate,
				PacketLifeSelector: sa.SelectorExactly, PacketLife: saPLT,
			}
			if s == d {
				r.PacketLife = 0 // loopback, as OpenSM
			}
			r.MarshalTo(b[:])
			out = append(out, b[:]...)
		})
	})
	return out
}

// portGID is a port's GID: its GID prefix and port GUID.
func (f *Fabric) portGID(n *node, pp *port) sa.GID {
	var g sa.GID
	binary.BigEndian.PutUint64(g[:], pp.prefix)
	pg := n.guid
	if n.sw < 0 {
		pg += uint64(pp.num)
	}
	binary.BigEndian.PutUint64(g[8:], pg)
	return g
}

// portInfo decodes port p's PortInfo as the SMA renders it.
func (f *Fabric) portInfo(p int32) smp.PortInfo {
	var b [64]byte
	f.renderPortInfo(&f.ports[p], b[:])
	var pi smp.PortInfo
	pi.UnmarshalBinary(b[:])
	return pi
}

// saPathParms walks the LFTs from port s to lid and folds the MTUCap and
// rate of every port on the way, as OpenSM's pr_rcv_get_path_parms does.
// ok is false when the tables do not lead there.
func (f *Fabric) saPathParms(s int32, lid uint16) (mtu, rate uint8, ok bool) {
	mtu, rate = 5, smp.MaxRate
	fold := func(p int32) {
		pi := f.portInfo(p)
		caps := pi
		if n := &f.nodes[f.ports[p].node]; n.sw >= 0 {
			caps = f.portInfo(n.base)
		}
		mtu = min(mtu, pi.MTUCap)
		rate = smp.MinRate(rate, smp.PortRate(&pi, &caps))
	}
	p := s
	pp := &f.ports[p]
	for hop := 0; hop <= maxLIDHop; hop++ {
		fold(p) // a switch source: its port 0, as OpenSM starts there
		if pp.hasLID(lid) {
			return mtu, rate, true
		}
		n := &f.nodes[pp.node]
		out := p
		if n.sw >= 0 {
			sw := &f.sws[n.sw]
			if lid > sw.top || int(lid) >= len(sw.lft) || sw.lft[lid] == 0xff || int(sw.lft[lid]) > int(n.nports) {
				return 0, 0, false
			}
			out = n.base + int32(sw.lft[lid])
			fold(out) // the egress port, or port 0 of a switch destination
			if f.ports[out].hasLID(lid) {
				return mtu, rate, true
			}
		} else if hop > 0 {
			return 0, 0, false // a CA in the middle
		}
		op := &f.ports[out]
		if !op.linkValid() || op.remote < 0 || !f.ports[op.remote].linkValid() {
			return 0, 0, false
		}
		p = op.remote
		pp = &f.ports[p]
	}
	return 0, 0, false
}

// processSA answers an SA request m (in place) with its first (or only)
// segment; it reports whether an answer came back.
func (f *Fabric) processSA(src int32, dlid uint16, m []byte) bool {
	if !f.isSA(src, dlid) {
		return false
	}
	var req [sa.MADSize]byte
	copy(req[:], m)
	attr, stride, recs, status := f.saAnswer(req[:])
	return saFirst(m, req[:], attr, stride, recs, status)
}

// saFirst writes the first MAD of the answer into m.
func saFirst(m, req []byte, attr uint16, stride int, recs []byte, status uint16) bool {
	if status != 0 || req[3] == sa.MethodGet {
		clear(m[:sa.MADSize])
		copy(m, req[:sa.HeaderSize])
		m[3] = req[3] | 0x80
		binary.BigEndian.PutUint16(m[4:], status)
		if stride > 0 {
			binary.BigEndian.PutUint16(m[44:], uint16(stride/8))
		}
		copy(m[sa.DataOffset:], recs)
		return true
	}
	return sa.MarshalSegment(m, req, stride, recs, 1) == nil
}

// Stream implements transport.Streamer: an SA GetTable is answered as
// an RMPP transfer, one segment per recv, the window opened by the
// client's ACKs; any other MAD is one Exchange.
func (e *Endpoint) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	if len(req) < smp.MADSize || req[1] != sa.Class || req[0] != 1 {
		var resp [smp.MADSize]byte
		if err := e.Exchange(ctx, dlid, req, resp[:]); err != nil {
			return err
		}
		_, _, err := recv(resp[:])
		return err
	}
	if e.closed.Load() {
		return &transport.OpError{Op: "send", Source: "sim", Err: transport.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &transport.OpError{Op: "send", Source: "sim", Err: err}
	}
	f := e.f
	var q [sa.MADSize]byte
	copy(q[:], req)
	q[8], q[9] = byte(e.slot>>8), byte(e.slot)
	f.mu.RLock()
	ok := f.isSA(e.port, dlid) && f.lidRoute(e.port, dlid, new(int)) >= 0
	var attr uint16
	var stride int
	var recs []byte
	var status uint16
	if ok {
		attr, stride, recs, status = f.saAnswer(q[:])
	}
	f.mu.RUnlock()
	if !ok {
		return errNoAnswer
	}
	var b [sa.MADSize]byte
	if status != 0 || q[3] == sa.MethodGet || sa.Segments(len(recs)) == 1 {
		saFirst(b[:], q[:], attr, stride, recs, status)
		reply, done, err := recv(b[:])
		_ = reply
		if err != nil || done {
			return err
		}
		return nil
	}
	n := sa.Segments(len(recs))
	win := uint32(1)
	for seg := uint32(1); seg <= n; {
		if err := ctx.Err(); err != nil {
			return &transport.OpError{Op: "recv", Source: "sim", Err: err}
		}
		if seg > win {
			// The sender waits for an ACK that opens the window.
			return errNoAnswer
		}
		sa.MarshalSegment(b[:], q[:], stride, recs, seg)
		reply, done, err := recv(b[:])
		if err != nil {
			return err
		}
		seg++
		if reply != nil {
			var h sa.Header
			if h.UnmarshalBinary(reply) == nil && h.RMPP.Type == sa.RMPPTypeAck && h.RMPP.Data2 >= h.RMPP.Data1 {
				win = max(win, h.RMPP.Data2)
				if h.RMPP.Data1 == n {
					return nil
				}
			}
		}
		if done {
			return nil
		}
	}
	// Every segment sent and no ACK of the last: the transfer is over
	// for the client that stopped asking.
	return nil
}

// broadcastGroup is the MCMemberRecord of OpenSM's IPoIB broadcast group
// of the default partition, as OpenSM 3.3.23 answers it on ibsim.
var broadcastGroup = sa.MCMemberRecord{
	MGID:        sa.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
	QKey:        0x0b1b,
	MLID:        0xc000,
	MTUSelector: sa.SelectorExactly, MTU: smp.MTU2048,
	PKey:         0xffff,
	RateSelector: sa.SelectorExactly, Rate: smp.Rate10,
	PacketLifeSelector: sa.SelectorExactly, PacketLife: saPLT,
	Scope: 2,
}
