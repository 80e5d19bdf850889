// Package fabricdot renders a fabric as a Graphviz (DOT) graph: one
// vertex per node (switches as blue boxes, CAs as green ellipses,
// routers as orange diamonds), one edge per pair of linked nodes with
// parallel links collapsed into a single edge labelled with their count
// and width/speed. Output is deterministic: vertices in discovery order,
// edges in the order their first link is met.
package fabricdot

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Options control the graph.
type Options struct {
	// Name maps nodes to names (default: the NodeDescription).
	Name func(*model.Node) string
	// Title is the graph's name (default "fabric").
	Title string
}

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

type edge struct {
	a, b   *model.Node
	count  int
	tokens map[string]int
}

// Write writes f as an undirected DOT graph.
func Write(w io.Writer, f *model.Fabric, o Options) error {
	name := o.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	title := o.Title
	if title == "" {
		title = "fabric"
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("graph " + quote(title) + " {\n")
	bw.WriteString("\tgraph [overlap=false, splines=true, outputorder=edgesfirst];\n")
	bw.WriteString("\tnode [fontname=\"Helvetica\", fontsize=10];\n")
	bw.WriteString("\tedge [fontname=\"Helvetica\", fontsize=8];\n")
	for _, n := range f.Nodes {
		label := name(n) + "\n" + "0x" + hex16(n.GUID())
		if lid := n.SMALID(); lid != 0 {
			label += "\nlid " + strconv.Itoa(int(lid))
		}
		bw.WriteString("\t" + quote(smp.NodeID(n.Type(), n.GUID())) + " [label=" + quote(label) + ", " + style(n.Type()) + "];\n")
	}
	type pair struct{ a, b *model.Node }
	var edges []*edge
	byPair := map[pair]*edge{}
	f.Links(func(a, b *model.PhysPort) {
		k := pair{a.Node, b.Node}
		e := byPair[k]
		if e == nil {
			e = &edge{a: a.Node, b: b.Node, tokens: map[string]int{}}
			byPair[k] = e
			edges = append(edges, e)
		}
		e.count++
		e.tokens[smp.WidthToken(a.Info.LinkWidthActive)+smp.PortSpeedToken(&a.Info, a.CapInfo(), a.FDR10())]++
	})
	for _, e := range edges {
		toks := make([]string, 0, len(e.tokens))
		for t := range e.tokens {
			toks = append(toks, t)
		}
		sort.Strings(toks)
		var label string
		for i, t := range toks {
			if i > 0 {
				label += ", "
			}
			if len(toks) > 1 {
				label += strconv.Itoa(e.tokens[t]) + "×"
			}
			label += t
		}
		attrs := "label=" + quote(label)
		if e.count > 1 {
			attrs = "label=" + quote(strconv.Itoa(e.count)+"× "+label) + ", penwidth=" + strconv.Itoa(min(1+e.count, 6))
			if len(toks) > 1 {
				attrs = "label=" + quote(strconv.Itoa(e.count)+" links: "+label) + ", penwidth=" + strconv.Itoa(min(1+e.count, 6))
			}
		}
		bw.WriteString("\t" + quote(smp.NodeID(e.a.Type(), e.a.GUID())) + " -- " + quote(smp.NodeID(e.b.Type(), e.b.GUID())) + " [" + attrs + "];\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

func hex16(v uint64) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", 16-len(s)) + s
}
