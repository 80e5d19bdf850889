// Package chassis groups a fabric's nodes into chassis as libibnetdisc
// (infiniband-diags 44, ibnetdiscover -g) does: Voltaire ISR chassis
// rebuilt from their chips' device IDs and cabling, Mellanox InfiniScale
// IV directors from their "MF0;" node descriptions, Topspin/InfiniCon and
// Xsigo chassis GUIDs, and every other node by a chassis GUID shared by at
// least two nodes. It also gives the external port numbers of chassis
// line ports, which ibnetdiscover prints as "[ext N]" and stores in its
// cache.
package chassis

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// Vendor IDs with chassis rules in libibnetdisc.
const (
	vendorVoltaire = 0x0008f1
	vendorMellanox = 0x0002c9
	vendorTopspin  = 0x0005ad // Cisco/Topspin
	vendorSilver   = 0x00066a // InfiniCon/SilverStorm, Topspin-style GUIDs
	vendorXsigo    = 0x001397
)

// Mellanox InfiniScale IV: directors describe their chips as
// "MF0;<system>:<type>/<L|S><slot>[:<board>]/U<chip>".
const devIS4 = 0xbd36

// Voltaire device IDs (libibnetdisc chassis.h).
const (
	vtrFCRouter  = 0x5a00
	vtrIPRouter  = 0x5a01
	vtrSLB24     = 0x5a09
	vtrSFB12     = 0x5a08
	vtrSFB4      = 0x5a0b
	vtrSLB8      = 0x5a0d
	vtrSFB12DDR  = 0x5a32
	vtrSFB4DDR   = 0x5a33
	vtrSLB24DDR  = 0x5a34
	vtrSFB2012   = 0x5a37
	vtrSLB2024   = 0x5a38
	vtrSFB2004   = 0x5a40
	vtrSRB2004   = 0x5a42
	vtrSLB4018   = 0x5a5b
	vtrSFB4700   = 0x5a5c
	vtrSFB4700x2 = 0x5a5d
	vtrSFB4200   = 0x5a60
)

const (
	SpinesMax = 18 // spine slots of a chassis
	LinesMax  = 36 // line slots of a chassis
)

// slotKind is where a chip sits in a vendor chassis.
type slotKind uint8

const (
	slotNone slotKind = iota
	slotLine
	slotSpine
	slotSRBD // a Voltaire router board
)

var slotNames = [...]string{"", "Line", "Spine", "SRBD"}

// Voltaire chassis types, by libibnetdisc's numbering.
const (
	isrNone = iota
	isr9288
	isr9096
	isr2012
	isr2004
	isr4700
	isr4200
)

var isrNames = [...]string{"", "ISR9288", "ISR9096", "ISR2012", "ISR2004", "ISR4700", "ISR4200"}

// Chassis is one chassis of ibnetdiscover -g: a Voltaire chassis built
// around its spines, or a group of nodes sharing a chassis GUID (with the
// Mellanox IS4 chips of a director in its spine and line slots).
type Chassis struct {
	// Num is the chassis number (1..), 0 for a group of a single node
	// (not a chassis).
	Num int
	// GUID is the chassis GUID.
	GUID  uint64
	count int
	// Nodes are the members grouped by chassis GUID, in libibnetdisc's
	// list order (discovery order).
	Nodes []*model.Node
	// Spines and Lines are the chips in spine slots 1..18 and line
	// slots 1..36 (index 0 unused).
	Spines [SpinesMax + 1]*model.Node
	Lines  [LinesMax + 1]*model.Node
}

// chip is libibnetdisc's vendor chassis record of one node.
type chip struct {
	found   bool // seen by the vendor rules (or added to a chassis)
	slot    slotKind
	slotNum int
	chipNum int
	isr     int    // Voltaire chassis type
	typeStr string // Mellanox system type
	ch      *Chassis
}

// Grouping is ibnetdiscover -g's chassis grouping, libibnetdisc's
// group_nodes: Voltaire chassis from the chips' device IDs and cabling,
// Mellanox IS4 directors from their "MF0;" descriptions, then every other
// node grouped by chassis GUID (SystemImageGUID, with the slot byte of
// Topspin/InfiniCon GUIDs masked and Xsigo's rules) when at least two
// nodes share it.
type Grouping struct {
	chassis []*Chassis
	chip    map[*model.Node]*chip
	ext     map[*model.PhysPort]int // external port numbers ("[ext N]")
	// Err is set when libibnetdisc's grouping fails (a chip whose slot
	// index is out of range); the grouping then holds no chassis.
	Err error
}

func (g *Grouping) rec(n *model.Node) *chip {
	c := g.chip[n]
	if c == nil {
		c = &chip{}
		g.chip[n] = c
	}
	return c
}

func (g *Grouping) found(n *model.Node) bool {
	c := g.chip[n]
	return c != nil && c.found
}

// IsXsigoGUID, IsXsigoHCA and IsXsigoTCA are libibnetdisc's Xsigo GUID
// classes (a chassis, its host channel adapter, its I/O modules).
func IsXsigoGUID(guid uint64) bool    { return guid&0xffffff0000000000 == 0x0013970000000000 }
func isXsigoLeafOne(guid uint64) bool { return guid&0xffffffffff000000 == 0x0013970102000000 }
func IsXsigoHCA(guid uint64) bool     { return guid&0xffffffff00000000 == 0x0013970200000000 }
func IsXsigoTCA(guid uint64) bool     { return guid&0xffffffff00000000 == 0x0013970300000000 }
func isXsigoSwitch(guid uint64) bool  { return guid&0xffffffff00000000 == 0x0013970100000000 }

// chassisGUID is libibnetdisc's chassis GUID of a node.
func chassisGUID(n *model.Node) uint64 {
	g := n.Info.SystemImageGUID
	switch {
	case n.Info.VendorID == vendorTopspin || n.Info.VendorID == vendorSilver:
		return g & 0xffffffff00ffffff // byte 4 is the slot
	case n.Info.VendorID == vendorXsigo || IsXsigoGUID(g):
		if !IsXsigoHCA(g) && !IsXsigoTCA(g) {
			if isXsigoSwitch(g) {
				return g & 0xffffffff00ffffff
			}
			return g
		}
		p := n.Port(1)
		if p == nil {
			return 0
		}
		if p.Remote == nil {
			return g
		}
		if r := p.Remote.Node.Info.SystemImageGUID; isXsigoLeafOne(r) {
			return r & 0xffffffff00ffffff
		}
		return g
	}
	return g
}

func devID(n *model.Node) uint16 { return n.Info.DeviceID }

func isVtrRouter(n *model.Node) bool { d := devID(n); return d == vtrFCRouter || d == vtrIPRouter }
func isSpine9096(n *model.Node) bool { d := devID(n); return d == vtrSFB4 || d == vtrSFB4DDR }
func isSpine9288(n *model.Node) bool { d := devID(n); return d == vtrSFB12 || d == vtrSFB12DDR }
func isSpine2004(n *model.Node) bool { return devID(n) == vtrSFB2004 }
func isSpine2012(n *model.Node) bool { return devID(n) == vtrSFB2012 }
func isSpine4700(n *model.Node) bool { return devID(n) == vtrSFB4700 }
func isSpine4700x2(n *model.Node) bool {
	return devID(n) == vtrSFB4700x2
}
func isSpine4200(n *model.Node) bool { return devID(n) == vtrSFB4200 }
func isSpine(n *model.Node) bool {
	return isSpine9096(n) || isSpine9288(n) || isSpine2004(n) || isSpine2012(n) ||
		isSpine4700(n) || isSpine4700x2(n) || isSpine4200(n)
}
func isLine24(n *model.Node) bool {
	d := devID(n)
	return d == vtrSLB24 || d == vtrSLB24DDR || d == vtrSRB2004
}
func isLine8(n *model.Node) bool    { return devID(n) == vtrSLB8 }
func isLine2024(n *model.Node) bool { return devID(n) == vtrSLB2024 }
func isLine4700(n *model.Node) bool { return devID(n) == vtrSLB4018 }
func isLine(n *model.Node) bool {
	return isLine24(n) || isLine8(n) || isLine2024(n) || isLine4700(n)
}

// Voltaire slot tables, indexed by port number 1..36: the line slot and
// chip behind a spine port, the spine slot and chip behind a line port.
var (
	lineSlotSFB4    = tbl(1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4)
	lineChipSFB4    = tbl(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2)
	lineSlotSFB12   = tbl(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12)
	lineChipSFB12   = tbl(1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2)
	lineSlotSFB18   = tbl(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18)
	lineChipSFB18   = ones(36)
	lineSlotSFB18x2 = tbl(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18)
	lineChipSFB18x2 = ones(18)
	lineSlotSFB4200 = tbl(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 9)
	lineChipSFB4200 = ones(36)
	iprChipSFB4     = tbl(3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1)
	spineSlot12     = tbl(1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4)
	spineChip12     = tbl(1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3)
	spineSlot4      = tbl(1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4)
	spineChip4      = ones(12)
	spineSlot18     = tbl(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9)
	spineChip18     = ones(18)
	spineChip18x2   = tbl(2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1)
	spineSlot4200   = tbl(1, 1, 1, 1, 0, 0, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4)
	spineChip4200   = ones(18)
	extSLB24        = [2][37]int{extRange(13, 6, 5, 4, 18, 17, 16, 1, 2, 3, 13, 14, 15), extRange(13, 12, 11, 10, 24, 23, 22, 7, 8, 9, 19, 20, 21)}
	extSLB8         = [2][37]int{extRange(13, 2, 2, 2, 6, 6, 6, 1, 1, 1, 5, 5, 5), extRange(13, 4, 4, 4, 8, 8, 8, 3, 3, 3, 7, 7, 7)}
	extSLB2024      = [2][37]int{extRange(13, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24), extRange(13, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)}
	extSLB4018      = extRange(19, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18)
	extSFB4700x2    = [2][37]int{extRange(19, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12), extRange(19, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6)}
)

var errChassisIndex = errors.New("chassis slot index out of range")

// tbl is a port-indexed table: v[0] is port 1's value; ports beyond are 0.
func tbl(v ...int) [37]int {
	var t [37]int
	copy(t[1:], v)
	return t
}

func ones(n int) [37]int {
	var t [37]int
	for i := 1; i <= n; i++ {
		t[i] = 1
	}
	return t
}

// extRange is a port-indexed table whose values start at port first.
func extRange(first int, v ...int) [37]int {
	var t [37]int
	copy(t[first:], v)
	return t
}

func portNum(p *model.PhysPort) int { return int(p.Num) }

// tableIndex is p's index in the slot and chip tables, which cover ports
// 0 to 36 (beyond them, 0: no slot, as libibnetdisc).
func tableIndex(p *model.PhysPort) int {
	if n := portNum(p); n <= 36 {
		return n
	}
	return 0
}

// sfbSlot places spine n by the line port lp it is cabled to.
func (g *Grouping) sfbSlot(n *model.Node, lp *model.PhysPort) {
	c := g.rec(n)
	c.slot = slotSpine
	p := tableIndex(lp)
	switch {
	case isSpine9096(n):
		c.isr, c.slotNum, c.chipNum = isr9096, spineSlot4[p], spineChip4[p]
	case isSpine9288(n):
		c.isr, c.slotNum, c.chipNum = isr9288, spineSlot12[p], spineChip12[p]
	case isSpine2012(n):
		c.isr, c.slotNum, c.chipNum = isr2012, spineSlot12[p], spineChip12[p]
	case isSpine2004(n):
		c.isr, c.slotNum, c.chipNum = isr2004, spineSlot4[p], spineChip4[p]
	case isSpine4700(n):
		c.isr, c.slotNum, c.chipNum = isr4700, spineSlot18[p], spineChip18[p]
	case isSpine4700x2(n):
		c.isr, c.slotNum, c.chipNum = isr4700, spineSlot18[p], spineChip18x2[p]
	case isSpine4200(n):
		c.isr, c.slotNum, c.chipNum = isr4200, spineSlot4200[p], spineChip4200[p]
	}
}

// routerSlot places router board n by the spine port sp it is cabled to.
func (g *Grouping) routerSlot(n *model.Node, sp *model.PhysPort) {
	c := g.rec(n)
	c.found = true
	c.slot = slotSRBD
	s := sp.Node
	p := tableIndex(sp)
	// libibnetdisc guesses the router chip of an sFB-12 from the spine's
	// GUID: module 1 faces chip 3, module 3 chip 1, others chip 2.
	guess := func() int {
		switch s.GUID() % 4 {
		case 3:
			return 1
		case 1:
			return 3
		}
		return 2
	}
	switch {
	case isSpine9096(s):
		c.isr, c.slotNum, c.chipNum = isr9096, lineSlotSFB4[p], iprChipSFB4[p]
	case isSpine9288(s):
		c.isr, c.slotNum, c.chipNum = isr9288, lineSlotSFB12[p], guess()
	case isSpine2012(s):
		c.isr, c.slotNum, c.chipNum = isr2012, lineSlotSFB12[p], guess()
	case isSpine2004(s):
		c.isr, c.slotNum, c.chipNum = isr2004, lineSlotSFB4[p], iprChipSFB4[p]
	}
}

// slbSlot places line n by the spine port sp it is cabled to.
func (g *Grouping) slbSlot(n *model.Node, sp *model.PhysPort) {
	c := g.rec(n)
	c.slot = slotLine
	s := sp.Node
	p := tableIndex(sp)
	switch {
	case isSpine9096(s):
		c.isr, c.slotNum, c.chipNum = isr9096, lineSlotSFB4[p], lineChipSFB4[p]
	case isSpine9288(s):
		c.isr, c.slotNum, c.chipNum = isr9288, lineSlotSFB12[p], lineChipSFB12[p]
	case isSpine2012(s):
		c.isr, c.slotNum, c.chipNum = isr2012, lineSlotSFB12[p], lineChipSFB12[p]
	case isSpine2004(s):
		c.isr, c.slotNum, c.chipNum = isr2004, lineSlotSFB4[p], lineChipSFB4[p]
	case isSpine4700(s):
		c.isr, c.slotNum, c.chipNum = isr4700, lineSlotSFB18[p], lineChipSFB18[p]
	case isSpine4700x2(s):
		c.isr, c.slotNum, c.chipNum = isr4700, lineSlotSFB18x2[p], lineChipSFB18x2[p]
	case isSpine4200(s):
		c.isr, c.slotNum, c.chipNum = isr4200, lineSlotSFB4200[p], lineChipSFB4200[p]
	}
}

// atoi is C's atoi: optional blanks and sign, then digits.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	v := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + int(s[i]-'0')
		if v > 1<<30 {
			break
		}
	}
	if neg {
		v = -v
	}
	return v
}

// fillMellanox reads an IS4 chip's "MF0;" description.
func (g *Grouping) fillMellanox(n *model.Node) {
	if g.found(n) || devID(n) != devIS4 {
		return
	}
	d := string(n.Desc[:])
	if i := strings.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	if !strings.HasPrefix(d, "MF0;") {
		return
	}
	rest := d[4:]
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return
	}
	rest = rest[i+1:]
	i = strings.IndexByte(rest, '/')
	if i < 0 {
		return
	}
	sysType := rest[:i]
	rest = rest[i+1:]
	i = strings.IndexAny(rest, "/:")
	if i < 0 {
		return
	}
	slotName := rest[:i]
	if rest[i] == ':' { // a board type
		rest = rest[i+1:]
		if i = strings.IndexByte(rest, '/'); i < 0 {
			return
		}
	}
	index := rest[i+1:]
	if !strings.HasPrefix(index, "U") {
		return
	}
	c := g.rec(n)
	c.chipNum = int(uint8(atoi(index[1:])))
	switch {
	case strings.HasPrefix(slotName, "L"):
		c.slot = slotLine
	case strings.HasPrefix(slotName, "S"):
		c.slot = slotSpine
	default:
		return
	}
	c.found = true
	c.slotNum = int(uint8(atoi(slotName[1:])))
	if (c.slot == slotLine && c.slotNum > LinesMax+1) || (c.slot == slotSpine && c.slotNum > SpinesMax+1) {
		c.slotNum = 0
		return
	}
	if len(sysType) > 19 {
		sysType = sysType[:19]
	}
	c.typeStr = sysType
	if c.slot == slotLine {
		// line ports 1-18 are the chassis' external ports 1-18
		for p := 1; p <= n.NumPorts() && p <= 18; p++ {
			if pp := n.Port(p); pp != nil {
				g.ext[pp] = p
			}
		}
	}
}

// fillVoltaire finds a Voltaire chip's slot from its cabling and maps its
// ports to the chassis' external port numbers.
func (g *Grouping) fillVoltaire(n *model.Node) {
	if g.found(n) {
		return
	}
	g.rec(n).found = true
	switch {
	case isVtrRouter(n):
		for p := 1; p <= n.NumPorts(); p++ {
			// (rdma-core 66fcb26ca: a port without a remote is skipped;
			// ibnetdiscover 44 dereferences it and crashes)
			if pp := n.Port(p); pp != nil && pp.Remote != nil && isSpine(pp.Remote.Node) {
				g.routerSlot(n, pp.Remote)
			}
		}
	case isSpine(n):
		x2 := isSpine4700x2(n)
		for p := 1; p <= n.NumPorts(); p++ {
			pp := n.Port(p)
			if pp == nil || pp.Remote == nil || (x2 && p > 18) {
				continue
			}
			rn := pp.Remote.Node
			if !rn.IsSwitch() {
				if !g.found(rn) {
					g.routerSlot(rn, pp)
				}
				continue
			}
			if g.rec(n).isr == isrNone {
				g.sfbSlot(n, pp.Remote)
			}
		}
	case isLine(n):
		l4700 := isLine4700(n)
		for p := 1; p <= n.NumPorts(); p++ {
			pp := n.Port(p)
			if pp == nil || pp.Remote == nil || (l4700 && p > 18) || (!l4700 && p > 12) {
				continue
			}
			g.slbSlot(n, pp.Remote)
			break
		}
	}
	for p := 1; p <= n.NumPorts(); p++ {
		if pp := n.Port(p); pp != nil {
			if e := g.voltaireExt(pp); e != 0 {
				g.ext[pp] = e
			}
		}
	}
}

// voltaireExt is the external port number of a Voltaire line (or sFB-4700
// x2 spine) port, 0 for an internal port.
func (g *Grouping) voltaireExt(pp *model.PhysPort) int {
	n := pp.Node
	c := g.chip[n]
	l4700, x2 := isLine4700(n), isSpine4700x2(n)
	if c == nil || !c.found || (!isLine(n) && !x2) {
		return 0
	}
	p := portNum(pp)
	if ((l4700 || x2) && (p < 19 || p > 36)) || (!l4700 && !x2 && (p < 13 || p > 24)) {
		return 0
	}
	if c.chipNum < 1 || c.chipNum > 2 {
		return 0
	}
	k := c.chipNum - 1
	switch {
	case isLine24(n):
		return extSLB24[k][p]
	case isLine2024(n):
		return extSLB2024[k][p]
	case l4700:
		return extSLB4018[p]
	case x2:
		return extSFB4700x2[k][p]
	}
	return extSLB8[k][p]
}

func (g *Grouping) lineIndex(n *model.Node) (int, error) {
	c := g.rec(n)
	i := 3*(c.slotNum-1) + c.chipNum
	if isLine4700(n) {
		i = c.slotNum
	}
	if i < 1 || i > LinesMax {
		return 0, fmt.Errorf("%w: line index %d of node 0x%016x", errChassisIndex, i, n.GUID())
	}
	return i, nil
}

func (g *Grouping) spineIndex(n *model.Node) (int, error) {
	c := g.rec(n)
	i := c.slotNum
	switch {
	case isSpine9288(n) || isSpine2012(n):
		i = 3*(c.slotNum-1) + c.chipNum
	case isSpine4700(n) || isSpine4700x2(n):
		i = 2*(c.slotNum-1) + c.chipNum
	}
	if i < 1 || i > SpinesMax {
		return 0, fmt.Errorf("%w: spine index %d of node 0x%016x", errChassisIndex, i, n.GUID())
	}
	return i, nil
}

func (g *Grouping) insertLine(n *model.Node, ch *Chassis) error {
	i, err := g.lineIndex(n)
	if err != nil {
		return err
	}
	if ch.Lines[i] == nil {
		ch.Lines[i] = n
		g.rec(n).ch = ch
	}
	return nil
}

func (g *Grouping) insertSpine(n *model.Node, ch *Chassis) error {
	i, err := g.spineIndex(n)
	if err != nil {
		return err
	}
	if ch.Spines[i] == nil {
		ch.Spines[i] = n
		g.rec(n).ch = ch
	}
	return nil
}

// linesCatchSpines puts the spines cabled to the chassis' lines in.
func (g *Grouping) linesCatchSpines(ch *Chassis) error {
	for i := 1; i <= LinesMax; i++ {
		n := ch.Lines[i]
		if n == nil || !isLine(n) {
			continue
		}
		l4700 := isLine4700(n)
		for p := 1; p <= n.NumPorts(); p++ {
			pp := n.Port(p)
			if pp == nil || pp.Remote == nil || (l4700 && p > 18) || (!l4700 && p > 12) {
				continue
			}
			if rn := pp.Remote.Node; g.found(rn) {
				if err := g.insertSpine(rn, ch); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// spinesCatchLines puts the lines and routers cabled to the chassis'
// spines in.
func (g *Grouping) spinesCatchLines(ch *Chassis) error {
	for i := 1; i <= SpinesMax; i++ {
		n := ch.Spines[i]
		if n == nil {
			continue
		}
		x2 := isSpine4700x2(n)
		for p := 1; p <= n.NumPorts(); p++ {
			pp := n.Port(p)
			if pp == nil || pp.Remote == nil || (x2 && p > 18) {
				continue
			}
			if rn := pp.Remote.Node; g.found(rn) {
				if err := g.insertLine(rn, ch); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// buildVoltaire builds the chassis around spine n.
func (g *Grouping) buildVoltaire(n *model.Node, ch *Chassis) error {
	if err := g.insertSpine(n, ch); err != nil {
		return err
	}
	x2 := isSpine4700x2(n)
	for p := 1; p <= n.NumPorts(); p++ {
		pp := n.Port(p)
		if pp == nil || pp.Remote == nil || (x2 && p > 18) {
			continue
		}
		if rn := pp.Remote.Node; g.found(rn) {
			g.insertLine(rn, ch) // libibnetdisc ignores a bad index here
		}
	}
	// two rounds: routers hang off some spines only, and chips cabled
	// only inside the chassis need the second
	for range 2 {
		if err := g.linesCatchSpines(ch); err != nil {
			return err
		}
		if err := g.spinesCatchLines(ch); err != nil {
			return err
		}
	}
	for i := 1; i <= SpinesMax; i++ {
		if s := ch.Spines[i]; s != nil {
			ch.GUID = s.GUID() - 1 // as the Voltaire SM numbers chassis
			break
		}
	}
	return nil
}

// HasExtPorts reports whether f has chips whose ports can have external
// port numbers (Voltaire chips, Mellanox IS4 chips): Group is needed for
// ExtPort only then.
func HasExtPorts(f *model.Fabric) bool {
	for _, n := range f.Nodes {
		if n.IsSwitch() && (n.Info.VendorID == vendorVoltaire || (n.Info.VendorID == vendorMellanox && devID(n) == devIS4)) {
			return true
		}
	}
	return false
}

// Group groups f's nodes into chassis as libibnetdisc does; chassis are
// numbered in its order (Voltaire chassis first, then the others in
// all-nodes list order: reverse discovery).
func Group(f *model.Fabric) *Grouping {
	g := &Grouping{chip: make(map[*model.Node]*chip), ext: make(map[*model.PhysPort]int)}
	if err := g.build(f); err != nil {
		// libibnetdisc's group_nodes fails, and with it the discovery
		// (ibnetdiscover 44 may crash in its clean-up); ibdiscover prints
		// the fabric without chassis.
		return &Grouping{chip: map[*model.Node]*chip{}, ext: map[*model.PhysPort]int{}, Err: err}
	}
	return g
}

func (g *Grouping) build(f *model.Fabric) error {
	// libibnetdisc's lists are newest first: reverse discovery order.
	var switches []*model.Node
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		if f.Nodes[i].IsSwitch() {
			switches = append(switches, f.Nodes[i])
		}
	}
	for _, n := range switches {
		switch n.Info.VendorID {
		case vendorVoltaire:
			g.fillVoltaire(n)
		case vendorMellanox:
			g.fillMellanox(n)
		}
	}
	num := 0
	for _, n := range switches {
		if n.Info.VendorID != vendorVoltaire || !g.found(n) || !isSpine(n) {
			continue
		}
		if c := g.chip[n]; c.ch != nil && c.ch.Num != 0 {
			continue
		}
		num++
		ch := &Chassis{Num: num}
		g.chassis = append(g.chassis, ch)
		if err := g.buildVoltaire(n, ch); err != nil {
			return err
		}
	}
	// Chassis by chassis GUID. libibnetdisc looks chassis up in the
	// fabric's list, which it sets when it adds the first of these: until
	// then no chassis is found. A lookup finds the first chassis of the
	// list with that GUID (Voltaire chassis included).
	visible := false
	byGUID := make(map[uint64]*Chassis)
	for _, ch := range g.chassis {
		if _, ok := byGUID[ch.GUID]; !ok {
			byGUID[ch.GUID] = ch
		}
	}
	find := func(n *model.Node) *Chassis {
		if !visible {
			return nil
		}
		return byGUID[chassisGUID(n)]
	}
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		if n.Info.VendorID == vendorVoltaire || n.Info.SystemImageGUID == 0 {
			continue
		}
		if ch := find(n); ch != nil {
			ch.count++
			continue
		}
		ch := &Chassis{GUID: chassisGUID(n), count: 1}
		g.chassis = append(g.chassis, ch)
		if _, ok := byGUID[ch.GUID]; !ok {
			byGUID[ch.GUID] = ch
		}
		visible = true
	}
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		if n.Info.VendorID == vendorVoltaire || n.Info.SystemImageGUID == 0 {
			continue
		}
		ch := find(n)
		if ch == nil || ch.count < 2 {
			continue
		}
		if ch.Num == 0 {
			num++
			ch.Num = num
		}
		c := g.rec(n)
		switch {
		case !c.found:
			c.found = true
			c.ch = ch
			ch.Nodes = append(ch.Nodes, n) // reversed below
		case n.Info.VendorID == vendorMellanox:
			g.insertMellanox(n, ch)
		}
	}
	// libibnetdisc prepends: the chassis lists nodes in discovery order.
	for _, ch := range g.chassis {
		slices.Reverse(ch.Nodes)
	}
	return nil
}

// insertMellanox puts an IS4 director chip into its spine or line slot.
func (g *Grouping) insertMellanox(n *model.Node, ch *Chassis) {
	c := g.rec(n)
	switch {
	case c.slot == slotLine && c.slotNum <= LinesMax:
		if ch.Lines[c.slotNum] != nil {
			return
		}
		ch.Lines[c.slotNum] = n
	case c.slot == slotSpine && c.slotNum <= SpinesMax:
		if ch.Spines[c.slotNum] != nil {
			return
		}
		ch.Spines[c.slotNum] = n
	default:
		return
	}
	c.ch = ch
}

// All returns the chassis in libibnetdisc's list order; those with Num 0
// are groups of one node.
func (g *Grouping) All() []*Chassis {
	if g == nil {
		return nil
	}
	return g.chassis
}

// Of is n's chassis when it is numbered, else nil (also for a nil
// grouping).
func (g *Grouping) Of(n *model.Node) *Chassis {
	if g == nil {
		return nil
	}
	if c := g.chip[n]; c != nil && c.ch != nil && c.ch.Num != 0 {
		return c.ch
	}
	return nil
}

// Num is the chassis number of n, 0 when n is in no chassis (or g is
// nil).
func (g *Grouping) Num(n *model.Node) int {
	if ch := g.Of(n); ch != nil {
		return ch.Num
	}
	return 0
}

// Type is libibnetdisc's chassis type string of n, e.g. "ISR9288" or a
// Mellanox system type such as "IS5300" ("" for none).
func (g *Grouping) Type(n *model.Node) string {
	if g == nil {
		return ""
	}
	c := g.chip[n]
	if c == nil || c.ch == nil {
		return ""
	}
	switch n.Info.VendorID {
	case vendorVoltaire:
		if c.isr > isrNone && c.isr <= isr4200 {
			return isrNames[c.isr]
		}
	case vendorMellanox:
		return c.typeStr
	}
	return ""
}

// Slot is libibnetdisc's slot string "<Line|Spine|SRBD> N Chip M" ("" for
// none).
func (g *Grouping) Slot(n *model.Node) string {
	if g == nil {
		return ""
	}
	if v := n.Info.VendorID; v != vendorVoltaire && v != vendorMellanox {
		return ""
	}
	c := g.chip[n]
	if c == nil || c.ch == nil || c.slot == slotNone || c.slot > slotSRBD {
		return ""
	}
	return fmt.Sprintf("%s %d Chip %d", slotNames[c.slot], uint8(c.slotNum), uint8(c.chipNum))
}

// ExtPort is the external port number of a chassis line port, shown as
// "[ext N]" (0 for none).
func (g *Grouping) ExtPort(pp *model.PhysPort) int {
	if g == nil {
		return 0
	}
	return g.ext[pp]
}
