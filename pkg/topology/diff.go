package topology

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// DiffKeys select what ibnetdiscover --diff compares (--diffcheck).
type DiffKeys uint8

// Diff keys, named as in --diffcheck.
const (
	DiffSwitch   DiffKeys = 1 << iota // sw
	DiffCA                            // ca
	DiffRouter                        // router
	DiffPort                          // port: connections
	DiffLID                           // lid
	DiffNodeDesc                      // nodedesc
	// DiffDefault is ibnetdiscover's default: sw,ca,router,port.
	DiffDefault = DiffSwitch | DiffCA | DiffRouter | DiffPort
)

// DiffKeyError is a --diffcheck key that does not exist.
type DiffKeyError struct{ Key string }

func (e *DiffKeyError) Error() string { return "invalid diff check key: " + e.Key }

// ParseDiffCheck parses a --diffcheck value: a comma-separated list of
// sw, ca, router, port, lid, nodedesc (any case). Empty items are skipped
// (as strtok does); the result replaces the default.
func ParseDiffCheck(s string) (DiffKeys, error) {
	var k DiffKeys
	for _, item := range strings.Split(s, ",") {
		switch strings.ToLower(item) {
		case "":
		case "sw":
			k |= DiffSwitch
		case "ca":
			k |= DiffCA
		case "router":
			k |= DiffRouter
		case "port":
			k |= DiffPort
		case "lid":
			k |= DiffLID
		case "nodedesc":
			k |= DiffNodeDesc
		default:
			return 0, &DiffKeyError{Key: item}
		}
	}
	return k, nil
}

// String lists the keys as --diffcheck takes them.
func (k DiffKeys) String() string {
	var s []string
	for i, n := range []string{"sw", "ca", "router", "port", "lid", "nodedesc"} {
		if k&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return strings.Join(s, ",")
}

// ibndSMALID is libibnetdisc's node smalid: port 0's LID for switches,
// 0 for CAs and routers (which have no port 0).
func ibndSMALID(n *model.Node) uint16 {
	if n.IsSwitch() {
		return n.SMALID()
	}
	return 0
}

// WriteDiff writes ibnetdiscover's --diff output comparing old (the
// --diff cache) with cur (the discovered or loaded fabric): no header;
// for each node type selected, old nodes missing from cur ("< " on every
// line), changed nodes and ports, then cur nodes missing from old ("> ").
//
// ibnetdiscover dereferences a missing neighbour when a port without a
// link is to be printed (a LID change on an unlinked port); such port
// lines are left out here instead.
func WriteDiff(w io.Writer, old, cur *model.Fabric, keys DiffKeys, name Namer) error {
	if name == nil {
		name = DescName
	}
	d := &differ{o: Options{Name: name}, keys: keys}
	for _, t := range []struct {
		key DiffKeys
		typ uint8
	}{{DiffSwitch, smp.NodeSwitch}, {DiffCA, smp.NodeCA}, {DiffRouter, smp.NodeRouter}} {
		if keys&t.key == 0 {
			continue
		}
		d.pass(old, cur, t.typ, keys, "< ", "> ")
		d.pass(cur, old, t.typ, keys&^(DiffPort|DiffLID|DiffNodeDesc), "> ", "< ")
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(d.b); err != nil {
		return err
	}
	return bw.Flush()
}

type differ struct {
	b    []byte
	o    Options
	keys DiffKeys
}

func (d *differ) header(n *model.Node, idPrefix, prefix string) {
	if n.IsSwitch() {
		d.b = appendSwitchHeader(d.b, n, &d.o, nil, "", idPrefix, prefix)
	} else {
		d.b = appendCAHeader(d.b, n, nil, "", idPrefix, prefix)
	}
}

func (d *differ) detail(n *model.Node, prefix string) {
	if n.IsSwitch() {
		d.b = appendSwitchDetail(d.b, n, &d.o, prefix)
	} else {
		d.b = appendCADetail(d.b, n, prefix)
	}
}

func (d *differ) port(pp *model.PhysPort, prefix string) {
	if pp == nil || pp.Remote == nil {
		return
	}
	if pp.Node.IsSwitch() {
		d.b = appendSwitchPort(d.b, pp, &d.o, nil, prefix)
	} else {
		d.b = appendCAPort(d.b, pp, &d.o, nil, prefix)
	}
}

// pass walks f1's nodes of type typ (type-list order) against f2.
func (d *differ) pass(f1, f2 *model.Fabric, typ uint8, keys DiffKeys, p1, p2 string) {
	for i := len(f1.Nodes) - 1; i >= 0; i-- {
		n1 := f1.Nodes[i]
		if n1.Type() != typ {
			continue
		}
		n2 := f2.NodeByGUID(n1.GUID())
		if n2 == nil {
			d.header(n1, p1, p1)
			for p := 1; p <= n1.NumPorts(); p++ {
				if pp := n1.Port(p); pp != nil && pp.Remote != nil {
					d.port(pp, p1)
				}
			}
			continue
		}
		if keys&(DiffPort|DiffLID|DiffNodeDesc) == 0 {
			continue
		}
		shown := false
		if (keys&DiffLID != 0 && ibndSMALID(n1) != ibndSMALID(n2)) ||
			(keys&DiffNodeDesc != 0 && n1.Desc != n2.Desc) {
			d.header(n1, "", p1)
			d.detail(n2, p2)
			d.b = append(d.b, '\n')
			shown = true
		}
		showHeader := func() {
			if !shown {
				d.header(n1, "", "")
				shown = true
			}
		}
		if n1.NumPorts() != n2.NumPorts() {
			showHeader()
			d.b = fmt.Appendf(d.b, "%snumports = %d\n%snumports = %d\n", p1, n1.NumPorts(), p2, n2.NumPorts())
			continue
		}
		if keys&(DiffPort|DiffLID) == 0 {
			continue
		}
		for p := 1; p <= n1.NumPorts(); p++ {
			out1, out2 := diffPort(n1.Port(p), n2.Port(p), keys)
			if out1 {
				showHeader()
				d.port(n1.Port(p), p1)
			}
			if out2 {
				showHeader()
				d.port(n2.Port(p), p2)
			}
		}
	}
}

// diffPort decides which of two same-numbered ports ibnetdiscover prints.
func diffPort(a, b *model.PhysPort, keys DiffKeys) (outA, outB bool) {
	if keys&DiffPort != 0 {
		switch {
		case a != nil && (b == nil || (a.Remote != nil && b.Remote == nil)):
			outA = true
		case b != nil && (a == nil || (a.Remote == nil && b.Remote != nil)):
			outB = true
		case a != nil && b != nil && (a.GUID != b.GUID ||
			(a.Remote != nil && b.Remote != nil && a.Remote.GUID != b.Remote.GUID)):
			outA, outB = true, true
		}
	}
	if a == nil || b == nil {
		return
	}
	if keys&DiffLID != 0 && a.BaseLID() != b.BaseLID() {
		outA, outB = true, true
	}
	if a.Remote == nil || b.Remote == nil || keys&DiffPort == 0 {
		return
	}
	if keys&DiffNodeDesc != 0 && a.Remote.Node.Desc != b.Remote.Node.Desc {
		outA, outB = true, true
	}
	if keys&DiffLID != 0 && a.Remote.BaseLID() != b.Remote.BaseLID() {
		outA, outB = true, true
	}
	return
}
