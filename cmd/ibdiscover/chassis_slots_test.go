//go:build linux

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// chNet builds an ibsim net file of Voltaire chassis hung off a chain of
// Mellanox "top" switches, with host h0 first (where the tools attach).
type chNet struct {
	nodes []*chNode
	by    map[string]*chNode
	guid  uint64 // the next Voltaire GUID
	tops  int    // top switches made
	free  int    // the next free port of the last top switch
}

type chNode struct {
	name  string
	ca    bool
	ports int
	vend  uint32
	dev   uint16
	guid  uint64
	peers map[int]string
}

// Voltaire device IDs (libibnetdisc chassis.h) of the generated chips.
const (
	vSFB4, vSFB4DDR, vSFB12, vSFB12DDR           = 0x5a0b, 0x5a33, 0x5a08, 0x5a32
	vSFB2012, vSFB2004, vSFB4700, vSFB4700x2     = 0x5a37, 0x5a40, 0x5a5c, 0x5a5d
	vSFB4200                                     = 0x5a60
	vSLB24, vSLB24DDR, vSLB8, vSLB2024, vSRB2004 = 0x5a09, 0x5a34, 0x5a0d, 0x5a38, 0x5a42
	vSLB4018, vIPRouter                          = 0x5a5b, 0x5a01
)

func newChNet() *chNet {
	n := &chNet{by: map[string]*chNode{}, guid: 0x0008f10400100000}
	n.add("h0", true, 1, 0x2c9, 0x1017, 0x0002c90300d00100)
	n.newTop()
	return n
}

func (n *chNet) add(name string, ca bool, ports int, vend uint32, dev uint16, guid uint64) *chNode {
	if n.by[name] != nil {
		panic("node " + name + " twice")
	}
	c := &chNode{name: name, ca: ca, ports: ports, vend: vend, dev: dev, guid: guid, peers: map[int]string{}}
	n.nodes = append(n.nodes, c)
	n.by[name] = c
	return c
}

// chip adds a Voltaire switch (or, ca, a router board) with the next
// GUID (a multiple of 16: an sFB-12's router chip guess is 2).
func (n *chNet) chip(name string, ports int, dev uint16) {
	n.guid += 0x10
	n.add(name, false, ports, 0x8f1, dev, n.guid)
}

func (n *chNet) link(a string, pa int, b string, pb int) {
	for _, e := range []struct {
		n    string
		p    int
		peer string
	}{{a, pa, fmt.Sprintf("%q[%d]", b, pb)}, {b, pb, fmt.Sprintf("%q[%d]", a, pa)}} {
		c := n.by[e.n]
		if c == nil || e.p < 1 || e.p > c.ports {
			panic(fmt.Sprintf("no port %s[%d]", e.n, e.p))
		}
		if _, taken := c.peers[e.p]; taken {
			panic(fmt.Sprintf("%s[%d] cabled twice", e.n, e.p))
		}
		c.peers[e.p] = e.peer
	}
}

func (n *chNet) newTop() {
	name := fmt.Sprintf("top%d", n.tops)
	n.add(name, false, 36, 0x2c9, 0xc738, 0x0002c90300f00000+uint64(n.tops))
	if n.tops == 0 {
		n.link("h0", 1, name, 1)
	} else {
		n.link(fmt.Sprintf("top%d", n.tops-1), 36, name, 1)
	}
	n.tops++
	n.free = 2
}

// toTop cables port p of node to the next free port of a top switch.
func (n *chNet) toTop(node string, p int) {
	if n.free > 35 {
		n.newTop()
	}
	n.link(node, p, fmt.Sprintf("top%d", n.tops-1), n.free)
	n.free++
}

func (n *chNet) text() string {
	var b strings.Builder
	for _, c := range n.nodes {
		fmt.Fprintf(&b, "vendid=%#x\ndevid=%#x\n", c.vend, c.dev)
		if c.ca {
			fmt.Fprintf(&b, "caguid=%#x\nCa\t%d %q\n", c.guid, c.ports, c.name)
		} else {
			fmt.Fprintf(&b, "switchguid=%#x\nSwitch\t%d %q\n", c.guid, c.ports, c.name)
		}
		for p := 1; p <= c.ports; p++ {
			if r, ok := c.peers[p]; ok {
				fmt.Fprintf(&b, "[%d]\t%s\n", p, r)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// linePorts is a line chip's port count and first external port.
func linePorts(dev uint16) (ports, ext int) {
	if dev == vSLB4018 {
		return 36, 19
	}
	return 24, 13
}

// spineTable adds, for each q of qs, a spine of type spine whose first
// port goes to port q of one hub line: the spine's slot and chip are the
// spine table's entry q. The hub goes to a top switch.
func (n *chNet) spineTable(id string, spine, line uint16, spinePorts int, qs []int) []string {
	hub := id + "-hub"
	ports, _ := linePorts(line)
	n.chip(hub, ports, line)
	var spines []string
	for _, q := range qs {
		s := fmt.Sprintf("%s-s%d", id, q)
		n.chip(s, spinePorts, spine)
		n.link(s, 1, hub, q)
		spines = append(spines, s)
	}
	n.toTop(hub, ports)
	return spines
}

// lineTable adds a spine of type spine and, on each of its ports ps, a
// line whose port 1 goes there: the line's slot and chip are the line
// table's entry p. The external ports of the first two lines are cabled
// to each other, port for port (their external port numbers: both chips
// of a two-chip line); the last line goes to a top switch.
func (n *chNet) lineTable(id string, spine, line uint16, spinePorts int, ps []int) {
	s := id + "-s"
	n.chip(s, spinePorts, spine)
	ports, ext := linePorts(line)
	for _, p := range ps {
		l := fmt.Sprintf("%s-l%d", id, p)
		n.chip(l, ports, line)
		n.link(s, p, l, 1)
	}
	a, b := fmt.Sprintf("%s-l%d", id, ps[0]), fmt.Sprintf("%s-l%d", id, ps[1])
	for p := ext; p <= ports; p++ {
		n.link(a, p, b, p)
	}
	n.toTop(fmt.Sprintf("%s-l%d", id, ps[len(ps)-1]), ports)
}

// routers adds a spine of type spine (GUID guid, 0: the next one) with
// an IP router board on each of its ports ps and a line on port line
// (the spine's slot); the line goes to a top switch.
func (n *chNet) routers(id string, spine uint16, guid uint64, ps []int, line int) {
	s := id + "-s"
	if guid == 0 {
		n.chip(s, 24, spine)
	} else {
		n.add(s, false, 24, 0x8f1, spine, guid)
	}
	for _, p := range ps {
		r := fmt.Sprintf("%s-r%d", id, p)
		n.guid += 0x10
		n.add(r, true, 1, 0x8f1, vIPRouter, n.guid)
		n.link(s, p, r, 1)
	}
	l := id + "-l"
	n.chip(l, 24, vSLB24)
	n.link(s, line, l, 1)
	n.toTop(l, 24)
}

func seq(from, to, step int) []int {
	var s []int
	for i := from; i <= to; i += step {
		s = append(s, i)
	}
	return s
}

// allSlotsNet is a fabric in which every entry of every Voltaire slot
// table of pkg/chassis decides a chip's slot, chip or external port
// number that ibnetdiscover -g prints, without two chips of a chassis
// competing for one slot (the loser would print none): spines placed by
// every line port (spine tables), lines by every spine port (line
// tables), IP router boards by every spine port of the sFB-4 (and the
// three sFB-12 chip guesses), and both chips of every two-chip line
// type (and the sFB-4700 x2 spine) with all external ports cabled. Every
// chassis type is there (ISR9096, ISR9288, ISR2012, ISR2004, ISR4700,
// ISR4700 x2, ISR4200), fully cabled. The two ISR4200 spine table
// entries that are no slot (line ports 5 and 6) make the grouping fail;
// slotlessSpineNet has them.
func allSlotsNet() string {
	n := newChNet()
	// Spine tables, by the hub line port each spine is cabled to; spines
	// of one chassis sit in distinct slots.
	for k := 1; k <= 3; k++ { // spineSlot4/spineChip4: slot (q+2)/3
		n.spineTable(fmt.Sprintf("s9096-%d", k), vSFB4, vSLB24, 24, seq(k, 12, 3))
	}
	n.spineTable("s9288", vSFB12, vSLB24, 24, seq(1, 12, 1)) // spineSlot12/spineChip12: 12 slots
	n.spineTable("s2012", vSFB2012, vSLB2024, 24, seq(1, 12, 1))
	n.spineTable("s2004", vSFB2004, vSRB2004, 24, seq(1, 12, 3))
	for k := 1; k <= 2; k++ { // spineSlot18: slot (q+1)/2
		n.spineTable(fmt.Sprintf("s4700-%d", k), vSFB4700, vSLB4018, 36, seq(k, 18, 2))
	}
	x2 := n.spineTable("s4700x2", vSFB4700x2, vSLB4018, 36, seq(1, 18, 1)) // spineChip18x2: 18 slots
	for p := 19; p <= 36; p++ {                                            // external ports, chips 2 and 1
		n.link(x2[0], p, x2[1], p)
	}
	for k := 1; k <= 4; k++ { // spineSlot4200: slots 1-4 by 4 ports (5, 6: none)
		n.spineTable(fmt.Sprintf("s4200-%d", k), vSFB4200, vSLB4018, 36, []int{k, 6 + k, 10 + k, 14 + k})
	}
	// Line tables, by the spine port each line is cabled to.
	for k, dev := range []uint16{vSLB24, vSLB8, vSLB24DDR} { // lineSlotSFB4/lineChipSFB4: (p+5)/6, chip by threes
		spine := uint16(vSFB4)
		if k == 2 {
			spine = vSFB4DDR
		}
		n.lineTable(fmt.Sprintf("l9096-%d", k+1), spine, dev, 24, seq(k+1, 24, 3))
	}
	n.lineTable("l2004", vSFB2004, vSRB2004, 24, seq(1, 24, 3))
	n.lineTable("l9288", vSFB12, vSLB24, 24, seq(1, 24, 1)) // lineSlotSFB12/lineChipSFB12: 24 slots
	n.lineTable("l9288d", vSFB12DDR, vSLB24DDR, 24, seq(1, 24, 1))
	n.lineTable("l2012", vSFB2012, vSLB2024, 24, seq(1, 24, 1))
	for k := 1; k <= 2; k++ { // lineSlotSFB18: slot (p+1)/2
		n.lineTable(fmt.Sprintf("l4700-%d", k), vSFB4700, vSLB4018, 36, seq(k, 36, 2))
	}
	n.lineTable("l4700x2", vSFB4700x2, vSLB4018, 36, seq(1, 18, 1)) // lineSlotSFB18x2: 18 slots
	for k := 1; k <= 4; k++ {                                       // lineSlotSFB4200: slot (p+3)/4
		n.lineTable(fmt.Sprintf("l4200-%d", k), vSFB4200, vSLB4018, 36, seq(k, 36, 4))
	}
	// Router boards: iprChipSFB4 on every sFB-4 port (two slots' ports per
	// chassis, the line in another slot), and the three sFB-12 guesses.
	n.routers("r9096-1", vSFB4, 0, []int{1, 2, 3, 7, 8, 9}, 24)
	n.routers("r9096-2", vSFB4, 0, []int{4, 5, 6, 10, 11, 12}, 24)
	n.routers("r2004-1", vSFB2004, 0, []int{13, 14, 15, 19, 20, 21}, 1)
	n.routers("r2004-2", vSFB2004, 0, []int{16, 17, 18, 22, 23, 24}, 1)
	n.routers("r9288-3", vSFB12, 0x0008f10400f00001, seq(1, 23, 2), 2)  // GUID%4 1: chip 3
	n.routers("r9288-1", vSFB12, 0x0008f10400f00013, seq(1, 11, 2), 24) // GUID%4 3: chip 1
	n.routers("r2012-2", vSFB2012, 0x0008f10400f00020, seq(1, 11, 2), 24)
	return n.text()
}

// slotlessSpineNet is an ISR4200 whose spine's first port goes to hub
// line port q (5 or 6): spineSlot4200 gives it no slot, and the grouping
// fails.
func slotlessSpineNet(q int) string {
	n := newChNet()
	n.spineTable("s4200", vSFB4200, vSLB4018, 36, []int{q})
	return n.text()
}

// TestCompatChassisEverySlot compares -g (and -g -f) with ibnetdiscover 44
// byte for byte on allSlotsNet, where every entry of every slot table
// shows in the output: a table shifted by one port prints another slot,
// chip or [ext N] somewhere. The ISR4200 spine table's slotless entries
// make both tools give up the grouping.
func TestCompatChassisEverySlot(t *testing.T) {
	ibsimtest.Require(t)
	size := []ibsimtest.Option{ibsimtest.Nodes(2048), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}
	sim := ibsimtest.Start(t, ibsimtest.WriteNetFile(t, allSlotsNet()), size...)
	for _, args := range [][]string{{"-g"}, {"-g", "-f"}} {
		ours, oerr, code := runOurs(t, append(ibsimArgs(sim, ""), args...)...)
		if code != 0 || len(oerr) != 0 {
			t.Fatalf("%v: ibdiscover exit %d: %s", args, code, oerr)
		}
		theirs, terr, tcode := sim.RunTool(t, "", "ibnetdiscover", append([]string{"-o", "1"}, args...)...)
		if tcode != 0 {
			t.Fatalf("%v: ibnetdiscover exit %d: %s", args, tcode, terr)
		}
		if o, th := stripDate(ours), stripDate(theirs); o != th {
			t.Errorf("%v: differs from ibnetdiscover:\n%s", args, golden.LineDiff(th, o))
		}
	}
	for _, q := range []int{5, 6} {
		s := ibsimtest.Start(t, ibsimtest.WriteNetFile(t, slotlessSpineNet(q)))
		_, oerr, code := runOurs(t, append(ibsimArgs(s, ""), "-g")...)
		if code != 0 || !strings.Contains(string(oerr), "ibdiscover: warning: chassis grouping failed") {
			t.Errorf("ISR4200 spine on line port %d: exit %d, stderr %q, want the grouping failed", q, code, oerr)
		}
		_, terr, tcode := s.RunTool(t, "", "ibnetdiscover", "-o", "1", "-g")
		if tcode == 0 {
			t.Errorf("ISR4200 spine on line port %d: ibnetdiscover 44 -g succeeded, want its grouping failure (%q)", q, terr)
		}
	}
}
