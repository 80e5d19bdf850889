package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/pma"
)

// The PMA: ibsim's performance management agent (class 0x04), answering
// ClassPortInfo, PortCounters and PortCountersExtended by LID. As in ibsim,
// every link a MAD crosses moves both ends' packet and data counters (one
// packet, 72 dwords), a MAD lost on the way moves PortXmitDiscards,
// PortRcvSwitchRelayErrors or PortRcvErrors, PerformanceSet sets a counter
// and a PortCounters Set with a CounterSelect resets the selected ones.

// Traffic counters, each a function of a port's packets sent or received.
const (
	tcXmitData = iota // PortCounters, 32 bits
	tcRcvData
	tcXmitPkts
	tcRcvPkts
	tcExtXmitData // PortCountersExtended, 64 bits
	tcExtRcvData
	tcExtXmitPkts
	tcExtRcvPkts
	numTraffic
)

// madDwords is what ibsim counts as one MAD's data (in 4-byte units).
const madDwords = 72

// Errors counted on traffic, as atomics.
const (
	peXmitDiscards = iota
	peSwitchRelay
	peRcvErrors
	numPathErr
)

// portCounters are one port's PerfMgt counters besides the packets it
// sent (pmaState.tx). What it received is derived from what its peer
// sent: rx = rxFolded + (tx[peer] - peerMark) - (lost - lostMark), so a
// link traversal costs one atomic add. lost and the path errors are
// atomics counted under the read lock; the rest changes only under the
// write lock (links made and broken, PerformanceSet, resets).
type portCounters struct {
	lost     atomic.Uint32 // packets lost entering this port (error rate)
	errs     [numPathErr]atomic.Uint32
	lostMark uint32
	rxFolded uint64 // received over earlier links
	peerMark uint64 // the peer's tx when the link came up
	x        *pcSet
}

// pcSet is the part of a port's counters that only commands change.
type pcSet struct {
	base [numTraffic]uint64 // traffic counter values at mark
	mark [numTraffic]uint64 // tx or rx when base was set
	errs [pma.NumErrors]uint64
	// unicast/multicast extended counters (never moved by traffic)
	ucastXmit, ucastRcv, mcastXmit, mcastRcv uint64
}

type pmaState struct {
	tx []atomic.Uint64 // packets sent out of each port (the hot counter)
	pc []portCounters
}

func (s *pmaState) init(nports int) {
	s.tx = make([]atomic.Uint64, nports)
	s.pc = make([]portCounters, nports)
}

// pcLink counts one packet leaving port out for its peer (which receives
// it: see portCounters).
func (f *Fabric) pcLink(out, in int32) { f.pma.tx[out].Add(1) }

// pcXmit counts one packet leaving port out that is lost entering in.
func (f *Fabric) pcXmit(out, in int32) {
	// The loss first: rx reads tx first, so it never counts a lost
	// packet as received.
	f.pma.pc[in].lost.Add(1)
	f.pma.tx[out].Add(1)
}

// rx is the number of packets port p received (under the read lock).
func (f *Fabric) rx(p int32) uint64 {
	c := &f.pma.pc[p]
	r := f.ports[p].remote
	if r < 0 {
		return c.rxFolded
	}
	sent := f.pma.tx[r].Load() - c.peerMark
	lost := uint64(c.lost.Load() - c.lostMark)
	if sent < lost { // a loss seen before its send: transient
		return c.rxFolded
	}
	return c.rxFolded + sent - lost
}

// pcUnlinking folds what port p received over its current link, before
// the link goes (under the write lock).
func (f *Fabric) pcUnlinking(p int32) {
	f.pma.pc[p].rxFolded = f.rx(p)
}

// pcLinked starts counting what a and b receive from each other (under
// the write lock, after the link is made).
func (f *Fabric) pcLinked(a, b int32) {
	for _, e := range [2][2]int32{{a, b}, {b, a}} {
		c := &f.pma.pc[e[0]]
		c.peerMark, c.lostMark = f.pma.tx[e[1]].Load(), c.lost.Load()
	}
}

// pcErr counts one path error at port p (saturating at 16 bits on read).
func (f *Fabric) pcErr(p int32, e int) {
	c := &f.pma.pc[p].errs[e]
	if c.Load() < math.MaxUint16 {
		c.Add(1)
	}
}

// limits of the PortCounters fields (ibsim saturates there).
var errLimit = [pma.NumErrors]uint64{
	0xffff, 0xff, 0xff, 0xffff, 0xffff, 0xffff, 0xffff, 0xff, 0xff, 0xf, 0xf, 0xffff, math.MaxUint32,
}

// counterSnap is a port's counters as read.
type counterSnap struct {
	errs                                     pma.Errors
	traffic                                  [numTraffic]uint64
	ucastXmit, ucastRcv, mcastXmit, mcastRcv uint64
}

// trafficOf is the packets sent (even i) or received (odd i) by port p.
func (f *Fabric) trafficOf(p int32, i int) uint64 {
	if i&1 == 0 {
		return f.pma.tx[p].Load()
	}
	return f.rx(p)
}

func trafficScale(i int) uint64 {
	if i == tcXmitData || i == tcRcvData || i == tcExtXmitData || i == tcExtRcvData {
		return madDwords
	}
	return 1
}

func (f *Fabric) snap(p int32) counterSnap {
	c := &f.pma.pc[p]
	var s counterSnap
	for i := range numTraffic {
		t := f.trafficOf(p, i)
		var v uint64
		if c.x != nil {
			var d uint64
			if t > c.x.mark[i] {
				d = t - c.x.mark[i]
			}
			v = satAdd(c.x.base[i], satMul(d, trafficScale(i)))
		} else {
			v = satMul(t, trafficScale(i))
		}
		if i < tcExtXmitData {
			v = min(v, math.MaxUint32)
		}
		s.traffic[i] = v
	}
	if c.x != nil {
		s.errs = c.x.errs
		s.ucastXmit, s.ucastRcv, s.mcastXmit, s.mcastRcv = c.x.ucastXmit, c.x.ucastRcv, c.x.mcastXmit, c.x.mcastRcv
	}
	s.errs[pma.PortXmitDiscards] = min(s.errs[pma.PortXmitDiscards]+uint64(c.errs[peXmitDiscards].Load()), 0xffff)
	s.errs[pma.PortRcvSwitchRelayErrors] = min(s.errs[pma.PortRcvSwitchRelayErrors]+uint64(c.errs[peSwitchRelay].Load()), 0xffff)
	s.errs[pma.PortRcvErrors] = min(s.errs[pma.PortRcvErrors]+uint64(c.errs[peRcvErrors].Load()), 0xffff)
	return s
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

func satMul(a, k uint64) uint64 {
	if k != 0 && a > math.MaxUint64/k {
		return math.MaxUint64
	}
	return a * k
}

// pcx returns port p's command-set counters, creating them (under the
// write lock) with the values the traffic gave so far.
func (f *Fabric) pcx(p int32) *pcSet {
	c := &f.pma.pc[p]
	if c.x == nil {
		x := &pcSet{}
		for i := range numTraffic {
			t := f.trafficOf(p, i)
			x.mark[i] = t
			x.base[i] = satMul(t, trafficScale(i))
		}
		c.x = x
	}
	return c.x
}

// setCounter gives port p's traffic counter (traffic >= 0) or error
// counter errIdx the value v, under the write lock. A traffic counter goes
// on counting from there.
func (f *Fabric) setCounter(p int32, traffic int, errIdx int, v uint64) {
	c := &f.pma.pc[p]
	f.pcx(p)
	if traffic >= 0 {
		c.x.base[traffic] = v
		c.x.mark[traffic] = f.trafficOf(p, traffic)
		return
	}
	switch errIdx {
	case pma.PortXmitDiscards:
		c.errs[peXmitDiscards].Store(0)
	case pma.PortRcvSwitchRelayErrors:
		c.errs[peSwitchRelay].Store(0)
	case pma.PortRcvErrors:
		c.errs[peRcvErrors].Store(0)
	}
	c.x.errs[errIdx] = v
}

// perfTraffic maps PerformanceSet's traffic fields to counters.
var perfTraffic = map[string]int{
	"PortCounters.PortXmitData": tcXmitData, "PortCounters.PortRcvData": tcRcvData,
	"PortCounters.PortXmitPkts": tcXmitPkts, "PortCounters.PortRcvPkts": tcRcvPkts,
	"PortCountersExtended.PortXmitData": tcExtXmitData, "PortCountersExtended.PortRcvData": tcExtRcvData,
	"PortCountersExtended.PortXmitPkts": tcExtXmitPkts, "PortCountersExtended.PortRcvPkts": tcExtRcvPkts,
}

// PerformanceSet sets one PerfMgt counter of node id's port, as ibsim's
// console command `PerformanceSet "id"[port] Attr.Field=value`: attr is
// PortCounters or PortCountersExtended, field a counter name as ibsim
// spells it (any case); a value beyond the field's width is clipped to
// its maximum. Port 0 of a switch needs enhanced port 0.
func (f *Fabric) PerformanceSet(id string, port int, attr, field string, value uint64) error {
	a, fld, ok := netfile.PerfCounter(attr, field)
	if !ok {
		return fmt.Errorf("%w: no counter %s.%s", ErrBadCommand, attr, field)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, port, 0)
	if err != nil {
		return err
	}
	if port < 0 {
		return fmt.Errorf("%w: PerformanceSet needs a port", ErrBadCommand)
	}
	d := &f.nodes[n]
	if d.sw >= 0 && port == 0 && !f.sws[d.sw].esp0 {
		return fmt.Errorf("%w: can't set performance counters of base switch port 0 of %q", ErrBadPort, id)
	}
	p := f.portIndex(n, port)
	if t, ok := perfTraffic[a+"."+fld]; ok {
		if t < tcExtXmitData {
			value = min(value, math.MaxUint32)
		}
		f.setCounter(p, t, -1, value)
		return nil
	}
	if a == "PortCounters" {
		i := pma.ErrorIndex(fld)
		f.setCounter(p, -1, i, min(value, errLimit[i]))
		return nil
	}
	x := f.pcx(p)
	switch strings.ToLower(fld) {
	case "portunicastxmitpkts":
		x.ucastXmit = value
	case "portunicastrcvpkts":
		x.ucastRcv = value
	case "portmulticastxmitpkts":
		x.mcastXmit = value
	case "portmulticastrcvpkts":
		x.mcastRcv = value
	}
	return nil
}

// resetCounters applies a PortCounters CounterSelect mask (bit 16 for
// PortXmitWait) to port p, under the write lock.
func (f *Fabric) resetCounters(p int32, mask uint32) {
	for i := range pma.NumErrors {
		bit := uint32(1) << i
		if i == pma.PortXmitWait {
			bit = pma.SelectXmitWait
		}
		if mask&bit != 0 {
			f.setCounter(p, -1, i, 0)
		}
	}
	for i, bit := range [4]uint32{pma.SelectXmitData, pma.SelectRcvData, pma.SelectXmitPkts, pma.SelectRcvPkts} {
		if mask&bit != 0 {
			f.setCounter(p, i, -1, 0)
		}
	}
}

// resetExtCounters applies a PortCountersExtended CounterSelect mask,
// with ibsim's quirk: the PortRcvPkts bit resets PortXmitPkts.
func (f *Fabric) resetExtCounters(p int32, mask uint32) {
	if mask&0xff == 0 {
		return
	}
	for i, t := range [4]int{tcExtXmitData, tcExtRcvData, tcExtXmitPkts, tcExtXmitPkts} {
		if mask&(1<<i) != 0 {
			f.setCounter(p, t, -1, 0)
		}
	}
	x := f.pcx(p)
	if mask&(1<<4) != 0 {
		x.ucastXmit = 0
	}
	if mask&(1<<5) != 0 {
		x.ucastRcv = 0
	}
	if mask&(1<<6) != 0 {
		x.mcastXmit = 0
	}
	if mask&(1<<7) != 0 {
		x.mcastRcv = 0
	}
}

func pmaHandlers(attr uint16) handler {
	switch attr {
	case pma.AttrClassPortInfo:
		return doPerfClassPortInfo
	case pma.AttrPortCounters:
		return doPortCounters
	case pma.AttrPortCountersExtended:
		return doPortCountersExt
	}
	return nil
}

func doPerfClassPortInfo(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	var status uint16
	if method != pma.MethodGet {
		status = errMethod
	}
	clear(data)
	c := pma.ClassPortInfo{BaseVersion: 1, ClassVersion: 1, RespTimeValue: 0x12,
		CapabilityMask: pma.CapExtWidth | pma.CapXmitWait}
	if f.isSwitch(&f.ports[p]) {
		c.CapabilityMask |= pma.CapAllPortSelect
	}
	var b [pma.ClassPortInfoSize]byte
	c.MarshalTo(b[:])
	copy(data, b[:]) // ibsim's data area is 64 bytes
	return status, true
}

// selectPorts returns the port index range PortSelect sel names at the
// node of port p, as ibsim's PMA checks it: a CA answers only for the port
// the GMP arrived at; a switch for 0..NumPorts, or all of them for 0xFF.
func (f *Fabric) selectPorts(p int32, sel uint8) (int32, int32, bool) {
	pp := &f.ports[p]
	if !f.isSwitch(pp) {
		if sel != pp.num {
			return 0, 0, false
		}
		return p, p + 1, true
	}
	d := &f.nodes[pp.node]
	if sel == pma.AllPorts {
		lo, hi := f.nodePorts(pp.node)
		return lo, hi, true
	}
	if sel > d.nports {
		return 0, 0, false
	}
	i := f.portIndex(pp.node, int(sel))
	return i, i + 1, true
}

func doPortCounters(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	lo, hi, ok := f.selectPorts(p, data[1])
	if !ok {
		return errParam, true
	}
	mask := uint32(binary.BigEndian.Uint16(data[2:]))
	if data[18] != 0 {
		mask |= pma.SelectXmitWait
	}
	var tot counterSnap
	for i := lo; i < hi; i++ {
		if method == pma.MethodSet {
			f.resetCounters(i, mask)
		}
		s := f.snap(i)
		if hi-lo == 1 {
			tot = s
			break
		}
		for k, v := range s.errs {
			lim := errLimit[k]
			if k == pma.PortXmitDiscards {
				lim = 0xff // ibsim sums PortXmitDiscards with the 8-bit limit
			}
			tot.errs[k] = min(tot.errs[k]+v, lim)
		}
		for k := range tcExtXmitData {
			tot.traffic[k] = min(tot.traffic[k]+s.traffic[k], math.MaxUint32)
		}
	}
	c := pma.PortCounters{
		SymbolErrorCounter:           uint16(tot.errs[pma.SymbolErrorCounter]),
		LinkErrorRecoveryCounter:     uint8(tot.errs[pma.LinkErrorRecoveryCounter]),
		LinkDownedCounter:            uint8(tot.errs[pma.LinkDownedCounter]),
		PortRcvErrors:                uint16(tot.errs[pma.PortRcvErrors]),
		PortRcvRemotePhysicalErrors:  uint16(tot.errs[pma.PortRcvRemotePhysicalErrors]),
		PortRcvSwitchRelayErrors:     uint16(tot.errs[pma.PortRcvSwitchRelayErrors]),
		PortXmitDiscards:             uint16(tot.errs[pma.PortXmitDiscards]),
		PortXmitConstraintErrors:     uint8(tot.errs[pma.PortXmitConstraintErrors]),
		PortRcvConstraintErrors:      uint8(tot.errs[pma.PortRcvConstraintErrors]),
		LocalLinkIntegrityErrors:     uint8(tot.errs[pma.LocalLinkIntegrityErrors]),
		ExcessiveBufferOverrunErrors: uint8(tot.errs[pma.ExcessiveBufferOverrunErrors]),
		VL15Dropped:                  uint16(tot.errs[pma.VL15Dropped]),
		PortXmitData:                 uint32(tot.traffic[tcXmitData]),
		PortRcvData:                  uint32(tot.traffic[tcRcvData]),
		PortXmitPkts:                 uint32(tot.traffic[tcXmitPkts]),
		PortRcvPkts:                  uint32(tot.traffic[tcRcvPkts]),
		PortXmitWait:                 uint32(tot.errs[pma.PortXmitWait]),
	}
	// ibsim writes the counters and keeps the request's PortSelect,
	// CounterSelect, CounterSelect2 and the reserved bytes.
	var b [pma.PortCountersSize]byte
	c.MarshalTo(b[:])
	copy(data[4:18], b[4:18])
	data[19] = b[19]
	copy(data[22:44], b[22:44])
	return 0, true
}

func doPortCountersExt(f *Fabric, p int32, method uint8, mod uint32, data []byte) (uint16, bool) {
	lo, hi, ok := f.selectPorts(p, data[1])
	if !ok {
		return errParam, true
	}
	mask := uint32(binary.BigEndian.Uint16(data[2:]))
	var tot counterSnap
	for i := lo; i < hi; i++ {
		if method == pma.MethodSet {
			f.resetExtCounters(i, mask)
		}
		s := f.snap(i)
		for k := tcExtXmitData; k < numTraffic; k++ {
			tot.traffic[k] = satAdd(tot.traffic[k], s.traffic[k])
		}
		tot.ucastXmit = satAdd(tot.ucastXmit, s.ucastXmit)
		tot.ucastRcv = satAdd(tot.ucastRcv, s.ucastRcv)
		tot.mcastXmit = satAdd(tot.mcastXmit, s.mcastXmit)
		tot.mcastRcv = satAdd(tot.mcastRcv, s.mcastRcv)
	}
	be := binary.BigEndian
	be.PutUint64(data[8:], tot.traffic[tcExtXmitData])
	be.PutUint64(data[16:], tot.traffic[tcExtRcvData])
	be.PutUint64(data[24:], tot.traffic[tcExtXmitPkts])
	be.PutUint64(data[32:], tot.traffic[tcExtRcvPkts])
	be.PutUint64(data[40:], tot.ucastXmit)
	be.PutUint64(data[48:], tot.ucastRcv)
	be.PutUint64(data[56:], tot.mcastXmit)
	// PortMulticastRcvPkts lies beyond the 64 bytes ibsim copies back.
	return 0, true
}
