package sim

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ibsim's SMA status codes.
const (
	errMethod = smp.StatusMethodUnsupp     // 0x0008
	errAttr   = smp.StatusMethodAttrUnsupp // 0x000c
	errParam  = smp.StatusInvalidField     // 0x001c
	maxLIDHop = 16                         // ibsim's MAXHOPS for LID routing
)

var errNoAnswer = &transport.OpError{Op: "recv", Source: "sim", Err: transport.ErrTimeout}

// Exchange sends the 256-byte MAD req to dlid (smp.PermissiveLID for a
// directed-route SMP) and writes ibsim's answer into resp. Where ibsim
// would answer with sim status 110, or not at all, it returns an error
// wrapping transport.ErrTimeout at once. TID bits 63..48 are replaced by
// the endpoint's slot number, as ibsim does.
func (e *Endpoint) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if e.closed.Load() {
		return &transport.OpError{Op: "send", Source: "sim", Err: transport.ErrClosed}
	}
	// A deadline bounds waiting, and without the latency model nothing
	// waits: an SMP whose deadline passed while its goroutine waited for
	// the CPU is still answered, so a loaded machine does not turn into
	// lost SMPs. Cancellation stops it.
	if err := ctx.Err(); err != nil && (!errors.Is(err, context.DeadlineExceeded) || e.f.fs.lat.Load() != nil) {
		return &transport.OpError{Op: "send", Source: "sim", Err: err}
	}
	if len(req) < smp.MADSize || len(resp) < smp.MADSize {
		return &transport.OpError{Op: "send", Source: "sim", Err: smp.ErrShort}
	}
	copy(resp[:smp.MADSize], req[:smp.MADSize])
	f := e.f
	if f.fs.sched.on.Load() {
		f.fs.sched.tick()
	}
	var lt latTicket
	if l := f.fs.lat.Load(); l != nil {
		l.stamp(&lt)
	}
	ok := f.process(e.port, e.slot, dlid, resp[:smp.MADSize], &lt)
	if lt.lat != nil {
		lt.lat.done(&lt)
		return lt.await(ctx, ok)
	}
	if !ok {
		return errNoAnswer
	}
	return nil
}

// process handles one MAD in place, like ibsim's process_packet, and
// reports whether a real answer (sim status 0) came back.
func (f *Fabric) process(src int32, slot uint16, dlid uint16, m []byte, lt *latTicket) bool {
	if m[0] != 1 || m[2] > 2 {
		return false // no answer at all
	}
	response := m[3]&0x80 != 0
	method := m[3] & 0x7f
	class := m[1]
	hops := 0
	if class == smp.ClassDirectRoute {
		if m[6] != 0 || (m[4]&0x80 != 0) != response {
			return false
		}
		hops = int(m[7])
		if hops > smp.MaxHops {
			return false
		}
		if binary.BigEndian.Uint16(m[32:]) != 0xffff || binary.BigEndian.Uint16(m[34:]) != 0xffff {
			return false
		}
	}
	if !response {
		m[8], m[9] = byte(slot>>8), byte(slot)
	}
	if method == smp.MethodTrapRepress || response {
		// Swallowed, or a response nobody waits for: no real answer.
		return false
	}
	attr := binary.BigEndian.Uint16(m[16:])
	mod := binary.BigEndian.Uint32(m[20:])
	if method == smp.MethodSet {
		f.mu.Lock()
		defer f.mu.Unlock()
	} else {
		f.mu.RLock()
		defer f.mu.RUnlock()
	}
	slid := uint16(0xffff)
	if dlid != 0xffff {
		slid = f.ports[src].lid
	}
	var path [64]byte
	if class == smp.ClassDirectRoute {
		copy(path[:], m[smp.InitPathOff:smp.InitPathOff+64])
	}
	var dst int32
	if dlid < 0xffff {
		dst = f.lidRoute(src, dlid, &lt.hops)
	} else {
		var via *[smp.MaxHops + 1]int32
		if lt.lat != nil && lt.lat.Fwd > 0 {
			via, lt.dr = &lt.via, true
		}
		dst = f.drOut(src, &path, hops, via)
		lt.hops = hops
	}
	if dst < 0 {
		return false
	}
	if class == sa.Class {
		return f.processSA(src, dlid, m)
	}
	var h handler
	switch class & 0x0f {
	case 1:
		h = handlers(attr)
	case pma.Class:
		h = pmaHandlers(attr)
	}
	if h == nil {
		return false
	}
	dp := &f.ports[dst]
	if dp.errRate != 0 && (dp.errAttr == 0 || dp.errAttr == attr) && f.drop(dp.errRate) {
		return false
	}
	if (f.fs.nodes != nil || f.fs.dropAll != 0) && f.faultDrop(dp.node) {
		return false
	}
	if lt.lat != nil {
		if f.serve(lt, dp.node); lt.drop {
			return false
		}
	}
	// ibsim copies the data area in and out only for classes 0x01, 0x81
	// and 0x04; for the other classes it handles, the reply keeps the
	// request's data.
	data := m[smp.DataOffset : smp.DataOffset+smp.DataSize]
	var saved [smp.DataSize]byte
	keep := class != smp.ClassLIDRouted && class != smp.ClassDirectRoute && class != pma.Class
	if keep {
		copy(saved[:], data)
	}
	status, ok := h(f, dst, method, mod, data)
	if keep {
		copy(data, saved[:])
	}
	if attr == smp.AttrNodeInfo && f.fs.nodes != nil {
		f.lie(dp.node, data)
	}
	if !ok {
		return false
	}
	m[3] = smp.MethodGetResp
	if class == smp.ClassDirectRoute {
		binary.BigEndian.PutUint16(m[4:], 0x8000|status&0x7fff)
		copy(m[smp.RetPathOff:], path[:])
	} else {
		binary.BigEndian.PutUint16(m[4:], status)
	}
	// Route the reply back to the requester.
	var back int32
	if slid < 0xffff {
		var n int
		back = f.lidRoute(dst, slid, &n)
	} else {
		back = f.drIn(dst, &path, hops)
	}
	return back >= 0 && f.ports[back].node == f.ports[src].node
}

// drop decides a fault-injection drop with probability rate percent.
func (f *Fabric) drop(rate uint8) bool {
	if rate >= 100 {
		return true
	}
	f.rndMu.Lock()
	v := f.rnd.IntN(100)
	f.rndMu.Unlock()
	return v < int(rate)
}

// nextPort moves a packet out of node n's port pn (a path element) to the
// peer's ingress port, as ibsim's next_port: -1 when it cannot go.
func (f *Fabric) nextPort(from int32, pn int) int32 {
	n := &f.nodes[f.ports[from].node]
	idx := pn
	if n.sw < 0 {
		if idx > 0 {
			idx--
		}
		if idx >= int(n.nports) {
			f.pcErr(from, peSwitchRelay)
			return -1
		}
	} else if idx > int(n.nports) {
		f.pcErr(from, peSwitchRelay)
		return -1
	}
	out := n.base + int32(idx)
	op := &f.ports[out]
	if op.phys != 5 {
		f.pcErr(out, peXmitDiscards)
		return -1
	}
	if op.remote < 0 {
		return out // the SMA port
	}
	in := op.remote
	ip := &f.ports[in]
	if ip.phys != 5 {
		f.pcErr(out, peXmitDiscards)
		f.pcErr(in, peRcvErrors)
		return -1
	}
	if ip.errRate != 0 && ip.errAttr == 0 && f.drop(ip.errRate) {
		f.pcXmit(out, in)
		f.pcErr(in, peRcvErrors)
		return -1
	}
	f.pcLink(out, in)
	return in
}

// drOut follows a directed route outward and fills the return path;
// via, when not nil, gets the node reached at each hop.
func (f *Fabric) drOut(p int32, path *[64]byte, hops int, via *[smp.MaxHops + 1]int32) int32 {
	ptr := 0
	for ptr < hops {
		if ptr > 0 && !f.isSwitch(&f.ports[p]) {
			return -1 // transit through a CA or router
		}
		if via != nil {
			via[ptr] = f.ports[p].node
		}
		path[ptr] = f.ports[p].num
		ptr++
		if p = f.nextPort(p, int(path[ptr])); p < 0 {
			return -1
		}
	}
	path[ptr] = f.ports[p].num
	return p
}

// drIn follows a return path back to the requester.
func (f *Fabric) drIn(p int32, path *[64]byte, hops int) int32 {
	for ptr := hops; ptr > 0; ptr-- {
		if ptr < hops && !f.isSwitch(&f.ports[p]) {
			return -1
		}
		if p = f.nextPort(p, int(path[ptr])); p < 0 {
			return -1
		}
	}
	return p
}

func (pp *port) hasLID(lid uint16) bool {
	return uint32(lid) >= uint32(pp.lid) && uint32(lid) <= uint32(pp.lid)+(1<<pp.lmc)-1
}

func (pp *port) linkValid() bool { return pp.phys == 5 && pp.state == 4 }

// lidRoute routes from port p to lid through the switches' LFTs.
// hops is set to the number of links crossed.
func (f *Fabric) lidRoute(p int32, lid uint16, hops *int) int32 {
	if lid == 0 {
		return -1
	}
	pp := &f.ports[p]
	if pp.hasLID(lid) {
		return p
	}
	if !f.isSwitch(pp) {
		if pp.remote < 0 {
			f.pcErr(p, peXmitDiscards)
			return -1
		}
		from := p
		p = pp.remote
		pp = &f.ports[p]
		if pp.errRate != 0 && pp.errAttr == 0 && f.drop(pp.errRate) {
			f.pcXmit(from, p)
			f.pcErr(p, peRcvErrors)
			return -1
		}
		f.pcLink(from, p)
		*hops = 1
	}
	for hop := 0; !pp.hasLID(lid); hop++ {
		if hop >= maxLIDHop {
			return -1
		}
		n := &f.nodes[pp.node]
		if n.sw < 0 {
			return -1
		}
		sw := &f.sws[n.sw]
		if lid > sw.top || int(lid) >= len(sw.lft) || sw.lft[lid] == 0xff {
			f.pcErr(p, peSwitchRelay)
			return -1
		}
		out := int(sw.lft[lid])
		if out > int(n.nports) {
			f.pcErr(p, peSwitchRelay)
			return -1
		}
		op := n.base + int32(out)
		opp := &f.ports[op]
		if !opp.linkValid() {
			f.pcErr(op, peXmitDiscards)
			return -1
		}
		if opp.hasLID(lid) {
			return op
		}
		if opp.remote < 0 {
			f.pcErr(op, peXmitDiscards)
			return -1
		}
		*hops++
		p = opp.remote
		pp = &f.ports[p]
		if !pp.linkValid() {
			f.pcErr(op, peXmitDiscards)
			return -1
		}
		if pp.errRate != 0 && pp.errAttr == 0 && f.drop(pp.errRate) {
			f.pcXmit(op, p)
			f.pcErr(p, peRcvErrors)
			return -1
		}
		f.pcLink(op, p)
	}
	return p
}

// handler runs an attribute at port p (the ingress port of the target
// node). ok=false means "no answer" (status 110).
type handler func(f *Fabric, p int32, method uint8, mod uint32, data []byte) (status uint16, ok bool)

func handlers(attr uint16) handler {
	switch attr {
	case smp.AttrNodeDescription:
		return doNodeDesc
	case smp.AttrNodeInfo:
		return doNodeInfo
	case smp.AttrSwitchInfo:
		return doSwitchInfo
	case smp.AttrGUIDInfo:
		return doGUIDInfo
	case smp.AttrPortInfo:
		return doPortInfo
	case smp.AttrPKeyTable:
		return doPKeys
	case smp.AttrSLtoVLMappingTable:
		return doSL2VL
	case smp.AttrVLArbitrationTable:
		return doVLArb
	case smp.AttrLinearForwardingTable:
		return doLFT
	case smp.AttrMulticastFwdTable:
		return doMFT
	case smp.AttrMlnxExtPortInfo:
		return doExtPortInfo
	}
	return nil
}

func doNodeDesc(f *Fabric, p int32, method uint8, _ uint32, data []byte) (uint16, bool) {
	n := &f.nodes[f.ports[p].node]
	clear(data)
	copy(data, n.description())
	if method != smp.MethodGet {
		return errMethod, true
	}
	return 0, true
}

func doNodeInfo(f *Fabric, p int32, method uint8, _ uint32, data []byte) (uint16, bool) {
	pp := &f.ports[p]
	n := &f.nodes[pp.node]
	f.renderNodeInfo(n, pp.num, data)
	if method != smp.MethodGet {
		return errMethod, true
	}
	return 0, true
}

func (f *Fabric) renderNodeInfo(n *node, local uint8, b []byte) {
	clear(b[:64])
	b[0], b[1], b[2], b[3] = 1, 1, n.typ, n.nports
	binary.BigEndian.PutUint64(b[4:], n.sysguid)
	binary.BigEndian.PutUint64(b[12:], n.guid)
	pg := n.guid
	partCap := uint16(64)
	if n.sw >= 0 {
		partCap = 8
	} else {
		pg += uint64(local)
	}
	binary.BigEndian.PutUint64(b[20:], pg)
	binary.BigEndian.PutUint16(b[28:], partCap)
	binary.BigEndian.PutUint16(b[30:], n.devid)
	binary.BigEndian.PutUint32(b[32:], 0xa1)
	b[36] = local
	b[37], b[38], b[39] = byte(n.vendor>>16), byte(n.vendor>>8), byte(n.vendor)
}

func doSwitchInfo(f *Fabric, p int32, method uint8, _ uint32, data []byte) (uint16, bool) {
	n := &f.nodes[f.ports[p].node]
	if n.sw < 0 {
		return errAttr, true
	}
	sw := &f.sws[n.sw]
	if method == smp.MethodSet {
		if data[11]&0x04 != 0 {
			sw.portChange = false
		}
		sw.top = binary.BigEndian.Uint16(data[6:])
		sw.lifetime = data[11] >> 3
	}
	f.renderSwitchInfo(sw, data)
	return 0, true
}

func (f *Fabric) renderSwitchInfo(sw *swState, b []byte) {
	clear(b[:64])
	binary.BigEndian.PutUint16(b[0:], f.opt.LinearFDBCap)
	binary.BigEndian.PutUint16(b[4:], f.opt.MulticastFDBCap)
	binary.BigEndian.PutUint16(b[6:], sw.top)
	b[11] = sw.lifetime << 3
	if sw.portChange {
		b[11] |= 0x04
	}
	binary.BigEndian.PutUint16(b[14:], 64)
	b[16] = 0x30
	if sw.esp0 {
		b[16] |= 0x08
	}
}

func doGUIDInfo(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	pp := &f.ports[p]
	n := &f.nodes[pp.node]
	clear(data)
	if mod == 0 {
		g := n.guid
		if n.sw < 0 {
			g += uint64(pp.num)
		}
		binary.BigEndian.PutUint64(data, g)
	}
	if method != smp.MethodGet {
		return errMethod, true
	}
	return 0, true
}

// templates: the per-kind constant PortInfo fields of ibsim 0.10.
var templates = [5]struct {
	capMask   uint32
	mkeyLease uint16
	nmtu      uint8
	mtuCap    uint8
	vlStall   uint8
	guidCap   uint8
	subnetTO  uint8
	respTime  uint8
	phyErrs   uint8
	capMask2  uint16
}{
	tmplSMA:    {0x0000c048, 4089, 1, 3, 0, 1, 31, 8, 0, 0x0030},
	tmplSW:     {0, 0, 4, 4, 7, 0, 0, 0, 0, 0},
	tmplSWDown: {0, 0, 4, 4, 7, 0, 0, 0, 4, 0},
	tmplCA:     {0x0050c048, 4089, 4, 4, 7, 32, 31, 0, 0, 0x0030},
	tmplCADown: {0x0010c048, 4089, 4, 4, 7, 32, 31, 0, 0, 0x0030},
}

// renderPortInfo writes the PortInfo of pp as ibsim's update_portinfo
// leaves it; LocalPortNum is written by the caller.
func (f *Fabric) renderPortInfo(pp *port, b []byte) {
	t := &templates[pp.tmpl]
	clear(b[:64])
	binary.BigEndian.PutUint64(b[8:], pp.prefix)
	binary.BigEndian.PutUint16(b[16:], pp.lid)
	binary.BigEndian.PutUint16(b[18:], pp.smlid)
	binary.BigEndian.PutUint32(b[20:], t.capMask)
	binary.BigEndian.PutUint16(b[26:], t.mkeyLease)
	b[29], b[30], b[31] = pp.wEn, 31, pp.w
	b[32] = 7<<4 | pp.state&0x0f
	b[33] = pp.phys<<4 | 2
	b[34] = pp.lmc & 7
	b[35] = pp.s<<4 | pp.sEn&0x0f
	mtuCap, nmtu := t.mtuCap, t.nmtu
	if pp.mtuCap != 0 {
		mtuCap, nmtu = pp.mtuCap, pp.mtuCap
		if pp.remote >= 0 {
			if r := f.ports[pp.remote].mtuCap; r != 0 && r < nmtu {
				nmtu = r
			} else if r == 0 && 4 < nmtu {
				nmtu = 4
			}
		}
	} else if pp.remote >= 0 && f.ports[pp.remote].mtuCap != 0 && f.ports[pp.remote].mtuCap < nmtu {
		nmtu = f.ports[pp.remote].mtuCap
	}
	b[36] = nmtu << 4
	b[37] = pp.vlCapOr() << 4
	b[39], b[40] = 8, 8
	b[41] = mtuCap & 0x0f
	b[42] = t.vlStall<<5 | pp.hoq&0x1f
	b[43] = pp.opVLs << 4
	b[50] = t.guidCap
	b[51] = t.subnetTO
	b[52] = t.respTime
	b[53] = t.phyErrs << 4
	binary.BigEndian.PutUint16(b[60:], t.capMask2)
	if pp.e != 0 {
		b[62] = pp.e<<4 | 7
		b[63] = pp.eEn & 0x1f
	}
}

func doPortInfo(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	in := &f.ports[p]
	n := &f.nodes[in.node]
	num := mod & 0x7fffffff
	if num > uint32(n.nports) {
		return errParam, true
	}
	if num == 0 && n.sw < 0 {
		num = uint32(in.num)
	}
	pi := f.portIndex(in.node, int(num))
	pp := &f.ports[pi]
	if method == smp.MethodSet {
		if st, ok := f.setPortInfo(in, pp, data); !ok {
			return st, true
		}
	}
	f.renderPortInfo(pp, data)
	data[28] = in.num
	return 0, true
}

// setPortInfo applies a PortInfo Set as ibsim's do_portinfo does.
func (f *Fabric) setPortInfo(in, pp *port, data []byte) (uint16, bool) {
	if !f.isSwitch(in) && in != pp {
		return errParam, false
	}
	pp.lid = binary.BigEndian.Uint16(data[16:])
	pp.smlid = binary.BigEndian.Uint16(data[18:])
	pp.lmc = data[34] & 7
	pp.hoq = data[42] & 0x1f
	if ps := data[33] >> 4; ps != 0 {
		pp.phys = ps
	}
	st := data[32] & 0x0f
	var rp *port
	if st > 0 && pp.remote >= 0 {
		rp = &f.ports[pp.remote]
		switch {
		case st == 1:
			pp.state, rp.state = 2, 2
			if f.isSwitch(rp) {
				f.sws[f.nodes[rp.node].sw].portChange = true
			}
		case st > 2:
			if absDiff(rp.state, st) <= 1 && absDiff(pp.state, st) == 1 {
				pp.state = st
			} else {
				return errParam, false
			}
		}
	} else if st > 1 {
		return errParam, false
	}
	vls := data[43] >> 4
	if vls > data[37]>>4 {
		return errParam, false
	}
	pp.opVLs = vls
	pp.prefix = binary.BigEndian.Uint64(data[8:])
	if rp != nil || pp.remote < 0 {
		return 0, true
	}
	rp = &f.ports[pp.remote]
	var speed, width uint8
	switch v := data[35] & 0x0f; v {
	case 1:
		pp.s, rp.s, speed = 1, 1, v
	case 3:
		pp.s, rp.s, speed = 2, 2, v
	case 5, 7:
		pp.s, rp.s, speed = 4, 4, v
	}
	if speed != 0 && speed != pp.sEn {
		pp.sEn = speed
	}
	switch v := data[63] & 0x1f; v {
	case 1:
		pp.e, rp.e = 1, 1
		if v != pp.eEn {
			pp.eEn = v
		}
	case 2, 3:
		pp.e, rp.e = 2, 2
		if v != pp.eEn {
			pp.eEn = v
		}
	case 4, 5, 6, 7:
		pp.e, rp.e = 4, 4
		if v != pp.eEn {
			pp.eEn = v
		}
	}
	if v := data[29]; v >= 1 && v <= 31 {
		width = highestWidth(v)
		pp.w, rp.w = width, width
		if v != pp.wEn {
			pp.wEn = v
		}
	}
	return 0, true
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

func (f *Fabric) extra(pp *port) *portExtra {
	if pp.x == nil {
		pp.x = &portExtra{}
	}
	return pp.x
}

func doPKeys(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	pp := &f.ports[p]
	n := &f.nodes[pp.node]
	block := mod & 0xffff
	pnum := mod >> 16
	size := uint32(64)
	if n.sw >= 0 {
		if pnum > uint32(n.nports) {
			return errParam, true
		}
		pp = &f.ports[f.portIndex(pp.node, int(pnum))]
		if pnum == 0 {
			size = 8
		}
	}
	if block*32 >= size {
		return errParam, true
	}
	cnt := min(size-block*32, 32)
	off := block * 64
	if method == smp.MethodSet {
		x := f.extra(pp)
		if x.pkeys == nil {
			x.pkeys = make([]byte, size*2)
			x.pkeys[0], x.pkeys[1] = 0xff, 0xff
		}
		copy(x.pkeys[off:off+cnt*2], data)
		return 0, true
	}
	clear(data)
	if pp.x != nil && pp.x.pkeys != nil {
		copy(data, pp.x.pkeys[off:off+cnt*2])
	} else if block == 0 {
		data[0], data[1] = 0xff, 0xff
	}
	return 0, true
}

var defaultSL2VL = [8]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7}

func doSL2VL(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	pp := &f.ports[p]
	n := &f.nodes[pp.node]
	out := uint32(0)
	entries := uint32(1)
	if n.sw >= 0 {
		inp, o := (mod>>8)&0xff, mod&0xff
		if inp > uint32(n.nports) || o > uint32(n.nports) {
			return errParam, true
		}
		pp = &f.ports[f.portIndex(pp.node, int(inp))]
		out = o
		entries = uint32(n.nports) + 1
	}
	if method == smp.MethodSet {
		x := f.extra(pp)
		if x.sl2vl == nil {
			x.sl2vl = make([]byte, entries*8)
			for i := uint32(0); i < entries; i++ {
				copy(x.sl2vl[i*8:], defaultSL2VL[:])
			}
		}
		copy(x.sl2vl[out*8:out*8+8], data)
		return 0, true
	}
	if pp.x != nil && pp.x.sl2vl != nil {
		copy(data[:8], pp.x.sl2vl[out*8:])
	} else {
		copy(data[:8], defaultSL2VL[:])
	}
	return 0, true
}

func defaultVLArb(high bool) []byte {
	b := make([]byte, 128)
	for vl := 0; vl < 15; vl++ {
		b[2*vl] = byte(vl)
		w := byte(4)
		if high == (vl != 0) {
			w = 0
		}
		b[2*vl+1] = w
	}
	return b
}

func doVLArb(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	pp := &f.ports[p]
	n := &f.nodes[pp.node]
	if n.sw >= 0 {
		pn := mod & 0xffff
		if pn > uint32(n.nports) {
			return errParam, true
		}
		pp = &f.ports[f.portIndex(pp.node, int(pn))]
	}
	blk := (mod >> 16) - 1
	if blk > 3 {
		return errParam, true
	}
	const capEntries = 8 // VLArbitrationHigh/LowCap of every template
	if blk%2 > capEntries/32 {
		return errParam, true
	}
	high := blk/2 == 1
	size := capEntries * 2
	off := (blk % 2) * 64
	if method == smp.MethodSet {
		x := f.extra(pp)
		tbl := &x.vlLow
		if high {
			tbl = &x.vlHigh
		}
		if *tbl == nil {
			*tbl = defaultVLArb(high)
		}
		copy((*tbl)[off:off+uint32(size)], data)
		return 0, true
	}
	var tbl []byte
	if pp.x != nil {
		tbl = pp.x.vlLow
		if high {
			tbl = pp.x.vlHigh
		}
	}
	if tbl == nil {
		tbl = defaultVLArb(high)
	}
	clear(data)
	copy(data[:size], tbl[off:])
	return 0, true
}

func doLFT(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	n := &f.nodes[f.ports[p].node]
	if n.sw < 0 {
		return errAttr, true
	}
	if mod > 767 {
		return errParam, true
	}
	sw := &f.sws[n.sw]
	off := int(mod) * 64
	if method == smp.MethodSet {
		sw.growLFT(off + 64)
		copy(sw.lft[off:off+64], data)
	}
	if off+64 <= len(sw.lft) {
		copy(data, sw.lft[off:off+64])
	} else {
		for i := range data[:64] {
			data[i] = 0xff
		}
	}
	return 0, true
}

func (sw *swState) growLFT(n int) {
	if n <= len(sw.lft) {
		return
	}
	n = (n + 63) &^ 63
	old := len(sw.lft)
	if n <= cap(sw.lft) {
		sw.lft = sw.lft[:n]
	} else {
		t := make([]byte, n, max(n, 2*cap(sw.lft)))
		copy(t, sw.lft)
		sw.lft = t
	}
	for i := old; i < n; i++ {
		sw.lft[i] = 0xff
	}
}

func doMFT(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	n := &f.nodes[f.ports[p].node]
	if n.sw < 0 {
		return errAttr, true
	}
	sw := &f.sws[n.sw]
	pos, blk := mod>>28, mod&0x1ff
	last := uint32(f.opt.MulticastFDBCap)/32 - 1
	if blk > last || pos >= uint32(sw.numPortMsk) {
		clear(data)
		return 0, true
	}
	off := (blk*uint32(sw.numPortMsk) + pos) * 64
	if method == smp.MethodSet {
		// RunSM allocates block 0 only; a Set beyond grows the table.
		if uint32(len(sw.mft)) < off+64 {
			sw.mft = append(sw.mft, make([]byte, (last+1)*uint32(sw.numPortMsk)*64-uint32(len(sw.mft)))...)
		}
		copy(sw.mft[off:off+64], data)
	}
	if uint32(len(sw.mft)) >= off+64 {
		copy(data, sw.mft[off:off+64])
	} else {
		clear(data)
	}
	return 0, true
}

func doExtPortInfo(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	in := &f.ports[p]
	n := &f.nodes[in.node]
	if mod > uint32(n.nports) {
		return errParam, true
	}
	num := mod
	if num == 0 && n.sw < 0 {
		num = uint32(in.num)
	}
	pp := &f.ports[f.portIndex(in.node, int(num))]
	if method == smp.MethodSet {
		x := f.extra(pp)
		x.epi = new([64]byte)
		copy(x.epi[:], data)
		return 0, true
	}
	if pp.x != nil && pp.x.epi != nil {
		copy(data, pp.x.epi[:])
	} else {
		clear(data)
	}
	if pp.m != 0 && pp.e == 0 {
		data[7], data[11], data[15] = pp.mEn, pp.mEn, pp.m
	}
	return 0, true
}
