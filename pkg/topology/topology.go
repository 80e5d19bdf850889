// Package topology writes a fabric in ibnetdiscover's text formats, byte
// for byte as infiniband-diags 44 prints them: the topology file, the
// node lists (-l, -H, -S, -R) and the ports report (-p).
package topology

import (
	"fmt"
	"github.com/ibfabric/ibdiag/pkg/chassis"
	"io"
	"math/bits"
	"strconv"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Namer returns the name printed for a node: the node-name-map entry for
// its GUID, else its NodeDescription.
type Namer func(n *model.Node) string

// DescName is the Namer without a node-name map.
func DescName(n *model.Node) string { return n.Description() }

// Options select the topology file's optional parts.
type Options struct {
	// Full appends " s=<speed> w=<width> v=<vlcap>" to every port line (-f).
	Full bool
	// MaxHops adds the "max hops" and "Total MADs" header lines (-m).
	MaxHops bool
	// HopsDiscovered and MADs are the values printed with MaxHops.
	HopsDiscovered int
	MADs           int64
	// Generated is the time in the header (default: now).
	Generated time.Time
	// Name maps nodes to names (default DescName).
	Name Namer
	// Group groups nodes into chassis as ibnetdiscover -g does.
	Group bool
	// Warn, when set, receives a warning (a chassis grouping that failed).
	Warn func(string)
}

func appendNodeID(b []byte, n *model.Node) []byte {
	return smp.AppendNodeID(b, n.Type(), n.GUID())
}

const hexDigits = "0123456789abcdef"

// appendHex appends v in lower-case hex without leading zeros (as
// strconv.AppendUint(b, v, 16), without its general loop).
func appendHex(b []byte, v uint64) []byte {
	n := max(1, (bits.Len64(v)+3)/4)
	var a [16]byte
	for i := n - 1; i >= 0; i-- {
		a[i] = hexDigits[v&0xF]
		v >>= 4
	}
	return append(b, a[:n]...)
}

// appendName appends the name printed for n: o.Name's, or without one
// its NodeDescription, appended in place (no string per line).
func appendName(b []byte, o *Options, n *model.Node) []byte {
	if o.Name == nil {
		return n.Desc.AppendTo(b)
	}
	return append(b, o.Name(n)...)
}

// appendHeader appends the topology file's header block.
func appendHeader(b []byte, f *model.Fabric, o *Options) []byte {
	t := o.Generated
	if t.IsZero() {
		t = time.Now()
	}
	b = append(b, "#\n# Topology file: generated on "...)
	b = t.AppendFormat(b, "Mon Jan _2 15:04:05 2006")
	b = append(b, "\n#\n"...)
	if o.MaxHops {
		b = append(b, "# Reported max hops discovered: "...)
		b = strconv.AppendInt(b, int64(o.HopsDiscovered), 10)
		b = append(b, "\n# Total MADs used: "...)
		b = strconv.AppendInt(b, o.MADs, 10)
		b = append(b, '\n')
	}
	b = append(b, "# Initiated from node "...)
	var fromNode, fromPort uint64
	if f.From != nil {
		fromNode, fromPort = f.From.GUID(), f.From.Info.PortGUID
	}
	b = smp.AppendHex16(b, fromNode)
	b = append(b, " port "...)
	b = smp.AppendHex16(b, fromPort)
	b = append(b, '\n')
	return b
}

// WriteTopology writes f as ibnetdiscover's topology file: the header,
// then switches, CAs and routers, each in reverse discovery order. With
// Options.Group the nodes sharing a SystemImageGUID are grouped into
// chassis first, as ibnetdiscover -g does.
func WriteTopology(w io.Writer, f *model.Fabric, o Options) error {
	// One buffer, written out whenever it holds 32 KiB: the whole
	// output's only allocation (a node's lines fit in the rest).
	b := appendHeader(make([]byte, 0, 48<<10), f, &o)
	flush := func(force bool) error {
		if len(b) > 32<<10 || force && len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	}
	var g *chassis.Grouping
	if o.Group {
		g = chassis.Group(f)
		if g.Err != nil && o.Warn != nil {
			o.Warn(fmt.Sprintf("chassis grouping failed (%v): printed without chassis (ibnetdiscover's library fails the whole discovery on this fabric)", g.Err))
		}
		for _, ch := range g.All() {
			if ch.Num == 0 {
				continue
			}
			b = append(b, "\nChassis "...)
			b = strconv.AppendInt(b, int64(ch.Num), 10)
			if ch.GUID != 0 {
				b = append(b, " (guid 0x"...)
				b = appendHex(b, ch.GUID)
				b = append(b, ')')
			}
			b = append(b, '\n')
			chname := ""
			if chassis.IsXsigoGUID(ch.GUID) {
				for _, n := range ch.Nodes {
					if chassis.IsXsigoHCA(n.GUID()) {
						chname = n.Description()
						b = append(b, "Hostname: "...)
						b = append(b, chname...)
						b = append(b, '\n')
					}
				}
			}
			b = append(b, "\n# Spine Nodes"...)
			for _, n := range ch.Spines[1:] {
				if n != nil {
					b = appendChassisSwitch(b, n, &o, g, chname)
				}
			}
			b = append(b, "\n# Line Nodes"...)
			for _, n := range ch.Lines[1:] {
				if n != nil {
					b = appendChassisSwitch(b, n, &o, g, chname)
				}
			}
			b = append(b, "\n# Chassis Switches"...)
			for _, n := range ch.Nodes {
				if n.Type() == smp.NodeSwitch {
					b = appendChassisSwitch(b, n, &o, g, chname)
				}
			}
			b = append(b, "\n# Chassis CAs"...)
			for _, n := range ch.Nodes {
				if n.Type() == smp.NodeCA {
					b = appendCAHeader(b, n, g, chname, "", "")
					b = appendCAPorts(b, n, &o, g)
				}
			}
			if err := flush(false); err != nil {
				return err
			}
		}
		b = append(b, "\nNon-Chassis Nodes\n"...)
	}
	for _, t := range []uint8{smp.NodeSwitch, smp.NodeCA, smp.NodeRouter} {
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			n := f.Nodes[i]
			if n.Type() != t || g.Num(n) != 0 {
				continue
			}
			b = appendNode(b, n, &o, g)
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	return flush(true)
}

// appendNode appends a node block: ids, header and linked port lines.
func appendNode(b []byte, n *model.Node, o *Options, g *chassis.Grouping) []byte {
	switch n.Type() {
	case smp.NodeSwitch:
		b = appendChassisSwitch(b, n, o, g, "")
	case smp.NodeCA, smp.NodeRouter:
		b = appendCAHeader(b, n, g, "", "", "")
		b = appendCAPorts(b, n, o, g)
	}
	return b
}

// appendChassisSwitch appends n as a switch block (libibnetdisc prints
// every chip in a chassis slot so, a router board too).
func appendChassisSwitch(b []byte, n *model.Node, o *Options, g *chassis.Grouping, chname string) []byte {
	b = appendSwitchHeader(b, n, o, g, chname, "", "")
	for p := 1; p <= n.NumPorts(); p++ {
		if pp := n.Port(p); pp != nil && pp.Remote != nil {
			b = appendSwitchPort(b, pp, o, g, "")
		}
	}
	return b
}

func appendCAPorts(b []byte, n *model.Node, o *Options, g *chassis.Grouping) []byte {
	for p := 1; p <= n.NumPorts(); p++ {
		if pp := n.Port(p); pp != nil && pp.Remote != nil {
			b = appendCAPort(b, pp, o, g, "")
		}
	}
	return b
}

// appendIDs appends the vendid/devid/sysimgguid lines, each prefixed.
func appendIDs(b []byte, n *model.Node, g *chassis.Grouping, chname, prefix string) []byte {
	b = append(b, '\n')
	b = append(b, prefix...)
	b = append(b, "vendid=0x"...)
	b = appendHex(b, uint64(n.Info.VendorID))
	b = append(b, '\n')
	b = append(b, prefix...)
	b = append(b, "devid=0x"...)
	b = appendHex(b, uint64(n.Info.DeviceID))
	b = append(b, '\n')
	ch := g.Num(n)
	if n.Info.SystemImageGUID != 0 {
		b = append(b, prefix...)
		b = append(b, "sysimgguid=0x"...)
		b = appendHex(b, n.Info.SystemImageGUID)
	}
	if ch != 0 {
		b = append(b, "\t\t# Chassis "...)
		b = strconv.AppendInt(b, int64(ch), 10)
		if chname != "" {
			b = append(b, " ("...)
			b = append(b, chname...)
			b = append(b, ')')
		}
		if p := n.Port(1); chassis.IsXsigoTCA(n.GUID()) && p != nil && p.Remote != nil {
			b = append(b, " slot "...)
			b = strconv.AppendInt(b, int64(p.Remote.Num), 10)
		}
	}
	if n.Info.SystemImageGUID != 0 || ch != 0 {
		b = append(b, '\n')
	}
	return b
}

// appendSwitchHeader appends a switch's ids, switchguid and Switch lines.
func appendSwitchHeader(b []byte, n *model.Node, o *Options, g *chassis.Grouping, chname, idPrefix, swPrefix string) []byte {
	b = appendIDs(b, n, g, chname, idPrefix)
	b = append(b, idPrefix...)
	b = append(b, "switchguid=0x"...)
	b = appendHex(b, n.GUID())
	b = append(b, '(')
	b = appendHex(b, n.Info.PortGUID)
	b = append(b, ')')
	if g != nil {
		// chassis type and slot of Voltaire and Mellanox IS4 chips
		b = append(b, "\t# "...)
		if t := g.Type(n); t != "" {
			b = append(b, t...)
			b = append(b, ' ')
		}
		b = append(b, g.Slot(n)...)
	}
	b = append(b, '\n')
	b = appendSwitchDetail(b, n, o, swPrefix)
	return append(b, '\n')
}

// appendSwitchDetail appends the Switch line without its newline.
func appendSwitchDetail(b []byte, n *model.Node, o *Options, prefix string) []byte {
	b = append(b, prefix...)
	b = append(b, "Switch\t"...)
	b = strconv.AppendInt(b, int64(n.NumPorts()), 10)
	b = append(b, " \""...)
	b = appendNodeID(b, n)
	b = append(b, "\"\t\t# \""...)
	b = appendName(b, o, n)
	b = append(b, "\" "...)
	if n.SwitchInfo.EnhancedPort0 {
		b = append(b, "enhanced"...)
	} else {
		b = append(b, "base"...)
	}
	b = append(b, " port 0 lid "...)
	b = strconv.AppendInt(b, int64(n.SMALID()), 10)
	b = append(b, " lmc "...)
	b = strconv.AppendInt(b, int64(n.SMALMC()), 10)
	return b
}

// appendCAHeader appends a CA's or router's ids, guid and Ca/Rt lines.
func appendCAHeader(b []byte, n *model.Node, g *chassis.Grouping, chname, idPrefix, caPrefix string) []byte {
	b = appendIDs(b, n, g, chname, idPrefix)
	b = append(b, idPrefix...)
	if n.Type() == smp.NodeRouter {
		b = append(b, "rtguid=0x"...)
	} else {
		b = append(b, "caguid=0x"...)
	}
	b = appendHex(b, n.GUID())
	b = append(b, '\n')
	b = appendCADetail(b, n, caPrefix)
	if g != nil && chassis.IsXsigoHCA(n.GUID()) {
		b = append(b, " (scp)"...)
	}
	return append(b, '\n')
}

// appendCADetail appends the Ca/Rt line without its newline. The name is
// the raw NodeDescription: the node-name map does not apply here.
func appendCADetail(b []byte, n *model.Node, prefix string) []byte {
	b = append(b, prefix...)
	if n.Type() == smp.NodeRouter {
		b = append(b, "Rt\t"...)
	} else {
		b = append(b, "Ca\t"...)
	}
	b = strconv.AppendInt(b, int64(n.NumPorts()), 10)
	b = append(b, " \""...)
	b = appendNodeID(b, n)
	b = append(b, "\"\t\t# \""...)
	b = append(b, n.Description()...)
	return append(b, '"')
}

func remoteLID(r *model.PhysPort) uint16 {
	if r.Node.IsSwitch() {
		return r.Node.SMALID()
	}
	return r.Info.LID
}

func appendSwitchPort(b []byte, pp *model.PhysPort, o *Options, g *chassis.Grouping, prefix string) []byte {
	r := pp.Remote
	b = append(b, prefix...)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(pp.Num), 10)
	b = append(b, ']')
	b = appendExt(b, g, pp)
	b = append(b, "\t\""...)
	b = appendNodeID(b, r.Node)
	b = append(b, "\"["...)
	b = strconv.AppendInt(b, int64(r.Num), 10)
	b = append(b, ']')
	b = appendExt(b, g, r)
	if !r.Node.IsSwitch() {
		b = append(b, '(')
		b = appendHex(b, r.GUID)
		b = append(b, ") "...)
	}
	b = append(b, "\t\t# \""...)
	b = appendName(b, o, r.Node)
	b = append(b, "\" lid "...)
	b = strconv.AppendInt(b, int64(remoteLID(r)), 10)
	b = append(b, ' ')
	if pp.Node.IsSwitch() {
		b = appendLinkToken(b, pp)
	} else {
		// a router board in a Voltaire chassis slot, printed as a
		// switch: libibnetdisc has no port 0 to take the speed from
		b = append(b, smp.WidthToken(pp.Info.LinkWidthActive)...)
		b = append(b, smp.SpeedToken(0, 0, false)...)
	}
	if pp.Node.IsSwitch() {
		b = appendFull(b, pp, o)
	} else {
		full := *pp
		full.Info.LinkSpeedActive = 0 // "s=0" too
		b = appendFull(b, &full, o)
	}
	switch {
	case chassis.IsXsigoTCA(r.GUID):
		b = append(b, " slot "...)
		b = strconv.AppendInt(b, int64(pp.Num), 10)
	case chassis.IsXsigoHCA(r.GUID):
		b = append(b, " (scp)"...)
	}
	return append(b, '\n')
}

// appendExt appends "[ext N]" for a chassis' external port (-g).
func appendExt(b []byte, g *chassis.Grouping, pp *model.PhysPort) []byte {
	if e := g.ExtPort(pp); e != 0 {
		b = append(b, "[ext "...)
		b = strconv.AppendInt(b, int64(e), 10)
		b = append(b, ']')
	}
	return b
}

func appendCAPort(b []byte, pp *model.PhysPort, o *Options, g *chassis.Grouping, prefix string) []byte {
	r := pp.Remote
	b = append(b, prefix...)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(pp.Num), 10)
	b = append(b, "]("...)
	b = appendHex(b, pp.GUID)
	b = append(b, ") \t\""...)
	b = appendNodeID(b, r.Node)
	b = append(b, "\"["...)
	b = strconv.AppendInt(b, int64(r.Num), 10)
	b = append(b, ']')
	b = appendExt(b, g, r)
	if !r.Node.IsSwitch() {
		b = append(b, " ("...)
		b = appendHex(b, r.GUID)
		b = append(b, ") "...)
	}
	b = append(b, "\t\t# lid "...)
	b = strconv.AppendInt(b, int64(pp.Info.LID), 10)
	b = append(b, " lmc "...)
	b = strconv.AppendInt(b, int64(pp.Info.LMC), 10)
	b = append(b, " \""...)
	b = appendName(b, o, r.Node)
	b = append(b, "\" lid "...)
	b = strconv.AppendInt(b, int64(remoteLID(r)), 10)
	b = append(b, ' ')
	b = appendLinkToken(b, pp)
	b = appendFull(b, pp, o)
	return append(b, '\n')
}

func appendFull(b []byte, pp *model.PhysPort, o *Options) []byte {
	if !o.Full {
		return b
	}
	b = append(b, " s="...)
	b = strconv.AppendInt(b, int64(pp.Info.LinkSpeedActive), 10)
	b = append(b, " w="...)
	b = strconv.AppendInt(b, int64(pp.Info.LinkWidthActive), 10)
	b = append(b, " v="...)
	b = strconv.AppendInt(b, int64(pp.Info.VLCap), 10)
	return b
}

// appendLinkToken appends the width/speed token, e.g. "4xEDR".
func appendLinkToken(b []byte, pp *model.PhysPort) []byte {
	b = append(b, smp.WidthToken(pp.Info.LinkWidthActive)...)
	return append(b, smp.PortSpeedToken(&pp.Info, pp.CapInfo(), pp.FDR10())...)
}
