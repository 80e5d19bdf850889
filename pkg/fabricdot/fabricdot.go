// Package fabricdot renders a fabric as a Graphviz (DOT) graph drawn by
// level: spines at the top, leaf switches below them, hosts (CAs and
// routers) at the bottom (model.Levels, one rank=same subgraph a level).
// Every link is an edge of its own, so parallel links are drawn side by
// side, labelled with its width and speed and with the port number at
// each end. Links running below what both ends are capable of (width or
// speed, BelowCapability),
// links not yet Active, ports that are down while something holds them
// (Disabled, LinkUp, LinkErrorRecovery) and error counts, when the caller
// knows them, are marked in red. Output is deterministic: levels from the
// top, nodes in discovery order, edges in model.Fabric.Links order.
package fabricdot

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Options control the graph.
type Options struct {
	// Name maps nodes to names (default: the NodeDescription).
	Name func(*model.Node) string
	// Title is the graph's name (default "fabric").
	Title string
	// Errors returns the sum of a port's error counters and whether it
	// is known (nil: no port's is); a port with errors is drawn with
	// its count at its end of the link.
	Errors func(*model.PhysPort) (uint64, bool)
}

// Colours of the marks.
const (
	red    = "#d62728"
	orange = "#ff7f0e"
)

// quote returns s as a DOT double-quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func style(t uint8) string {
	switch t {
	case smp.NodeSwitch:
		return `shape=box, style="rounded,filled", fillcolor="#9ecae1"`
	case smp.NodeCA:
		return `shape=ellipse, style=filled, fillcolor="#c7e9c0"`
	case smp.NodeRouter:
		return `shape=diamond, style=filled, fillcolor="#fdd0a2"`
	}
	return `shape=octagon, style=filled, fillcolor="#d9d9d9"`
}

func id(n *model.Node) string { return quote(smp.NodeID(n.Type(), n.GUID())) }

// BelowCapability reports whether the link between a and b runs below
// what its ends are capable of, by pathav's rule (the one ibavtrack
// checks): narrower than both ends are enabled for, 1x while both support
// a wider width, slower than both are enabled for, or the ends
// disagreeing; could is what it could run ("4xEDR"). False when an end
// has no PortInfo.
func BelowCapability(a, b *model.PhysPort) (below bool, could string) {
	if !a.HasInfo || !b.HasInfo {
		return false, ""
	}
	l := pathav.CheckLink(a, b, 0)
	w, s := l.Width, l.Speed
	for _, p := range l.Problems {
		switch p.Kind {
		case pathav.Width:
			below = true
			if pathav.Lanes(l.EnabledWidth) > pathav.Lanes(w) {
				w = l.EnabledWidth
			} else if pathav.Lanes(l.SupportedWidth) > pathav.Lanes(w) {
				w = l.SupportedWidth
			}
		case pathav.Speed:
			below = true
			s = max(s, l.EnabledSpeed)
		}
	}
	if !below {
		return false, ""
	}
	return true, smp.WidthToken(w) + s.String()
}

// downPort reports whether p is down while something holds it: no
// peer, PortState Down and a physical state other than the empty port's
// Polling or Sleep.
func downPort(p *model.PhysPort) bool {
	if p == nil || !p.HasInfo || p.Remote != nil || p.Num == 0 || p.Info.PortState != smp.PortStateDown {
		return false
	}
	switch p.Info.PortPhysicalState {
	case smp.PhysDisabled, smp.PhysLinkUp, smp.PhysErrRecov:
		return true
	}
	return false
}

// Write writes f as an undirected DOT graph for dot(1).
func Write(w io.Writer, f *model.Fabric, o Options) error {
	name := o.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	title := o.Title
	if title == "" {
		title = "fabric"
	}
	lv := model.Levels(f)
	top := 0
	for _, l := range lv {
		top = max(top, l)
	}
	byLevel := make([][]*model.Node, top+1)
	for _, n := range f.Nodes {
		byLevel[lv[n]] = append(byLevel[lv[n]], n)
	}

	bw := bufio.NewWriter(w)
	bw.WriteString("graph " + quote(title) + " {\n")
	bw.WriteString("\tgraph [splines=true, outputorder=edgesfirst, ranksep=1.2, nodesep=0.25];\n")
	bw.WriteString("\tnode [fontname=\"Helvetica\", fontsize=10];\n")
	bw.WriteString("\tedge [fontname=\"Helvetica\", fontsize=8, labelfontsize=8, labelfontcolor=\"#404040\"];\n")
	var down []*model.PhysPort
	for l := top; l >= 0; l-- {
		if len(byLevel[l]) == 0 {
			continue
		}
		what := "switches"
		switch {
		case l == 0:
			what = "hosts"
		case l == 1:
			what = "leaf switches"
		case l == top:
			what = "top switches"
		}
		fmt.Fprintf(bw, "\tsubgraph \"level%d\" { // %s\n\t\trank=same;\n", l, what)
		for _, n := range byLevel[l] {
			label := name(n) + "\n" + "0x" + hex16(n.GUID())
			if lid := n.SMALID(); lid != 0 {
				label += "\nlid " + strconv.Itoa(int(lid))
			}
			attrs := style(n.Type())
			var downs []string
			for _, p := range n.Ports {
				if downPort(p) {
					down = append(down, p)
					downs = append(downs, strconv.Itoa(int(p.Num)))
				}
			}
			if len(downs) > 0 {
				label += "\nport " + strings.Join(downs, ",") + " down"
				attrs += ", color=\"" + red + "\", penwidth=2"
			}
			bw.WriteString("\t\t" + id(n) + " [label=" + quote(label) + ", " + attrs + "];\n")
		}
		bw.WriteString("\t}\n")
	}
	errs := func(p *model.PhysPort) string {
		s := strconv.Itoa(int(p.Num))
		if o.Errors != nil {
			if e, ok := o.Errors(p); ok && e > 0 {
				s += " (" + strconv.FormatUint(e, 10) + " err)"
			}
		}
		return s
	}
	f.Links(func(a, b *model.PhysPort) {
		if lv[b.Node] > lv[a.Node] {
			a, b = b, a // the upper end first: dot ranks the tail above
		}
		label := smp.WidthToken(a.Info.LinkWidthActive) + smp.PortSpeedToken(&a.Info, a.CapInfo(), a.FDR10())
		var attrs []string
		color := ""
		if below, could := BelowCapability(a, b); below {
			label += " (could be " + could + ")"
			color = red
			attrs = append(attrs, "penwidth=2.5")
		}
		for _, p := range [2]*model.PhysPort{a, b} {
			if p.HasInfo && p.Info.PortState != smp.PortStateActive {
				label += "\nport " + strconv.Itoa(int(p.Num)) + " " + smp.PortStateText(p.Info.PortState)
				attrs = append(attrs, "style=dashed")
				color = red
				break
			}
		}
		ta, hb := errs(a), errs(b)
		if color == "" && (ta != strconv.Itoa(int(a.Num)) || hb != strconv.Itoa(int(b.Num))) {
			color = orange
		}
		if color != "" {
			attrs = append(attrs, "color=\""+color+"\"", "fontcolor=\""+color+"\"")
		}
		key := "label="
		if lv[a.Node] == lv[b.Node] {
			// a link within a level (a torus, a ring of leaves) does not
			// rank its ends; dot routes a flat edge's label only as an
			// external label
			attrs = append(attrs, "constraint=false")
			key = "xlabel="
		}
		bw.WriteString("\t" + id(a.Node) + " -- " + id(b.Node) + " [" + key + quote(label) + ", taillabel=" + quote(ta) + ", headlabel=" + quote(hb))
		for _, s := range attrs {
			bw.WriteString(", " + s)
		}
		bw.WriteString("];\n")
	})
	for _, p := range down {
		stub := quote(smp.NodeID(p.Node.Type(), p.Node.GUID()) + "-p" + strconv.Itoa(int(p.Num)))
		bw.WriteString("\t" + stub + " [shape=point, width=0.1, color=\"" + red + "\"];\n")
		bw.WriteString("\t" + id(p.Node) + " -- " + stub + " [label=" + quote(smp.PhysStateText(p.Info.PortPhysicalState)) +
			", taillabel=" + quote(errs(p)) + ", style=dashed, color=\"" + red + "\", fontcolor=\"" + red + "\"];\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

func hex16(v uint64) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", 16-len(s)) + s
}
