package portcounters

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pma"
)

// humanCount is infiniband-diags' conv_cnt_human_readable for counts: the
// value scaled by powers of 1024 in single precision, and its unit.
func humanCount(v uint64) (float32, string) {
	ui, div := 0, uint64(1)
	for t := v / 1024; t != 0; t /= 1024 {
		ui++
		div *= 1024
	}
	units := [...]string{"", "K", "M", "G", "T", "P", "E"}
	u := ""
	if ui < len(units) {
		u = units[ui]
	}
	return float32(v) / float32(div), u
}

// appendExceeded appends ibqueryerrors' " [Name == value]" list of the
// counters of s that exceed their thresholds.
func appendExceeded(b []byte, s *Sample, th *Thresholds) []byte {
	for i, v := range s.Errors {
		if !th.Over(i, v) {
			continue
		}
		b = append(b, " ["...)
		b = append(b, pma.ErrorNames[i]...)
		b = append(b, " == "...)
		b = strconv.AppendUint(b, v, 10)
		if s.Ext64 {
			f, u := humanCount(v)
			b = fmt.Appendf(b, " (%5.3f%s)", f, u)
		}
		b = append(b, ']')
	}
	return b
}

// nodeName is the name ibqueryerrors prints for n: its name in the node
// name map, else its description.
func (r *Report) nodeName(n *model.Node) string { return r.Names.Name(n.GUID(), n.Description()) }

// switchGUID is the GUID of a switch's port 0, as ibqueryerrors prints.
func switchGUID(n *model.Node) uint64 {
	if pp := n.Port(0); pp != nil && pp.GUID != 0 {
		return pp.GUID
	}
	return n.Info.PortGUID
}

// WriteIBQueryErrors writes r in ibqueryerrors' default output format
// (infiniband-diags 44, no options): for each node with a port beyond a
// threshold an "Errors for" header and one line per such port (and for a
// switch's AllPortSelect sum), then the summary.
func WriteIBQueryErrors(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for i := range r.Nodes {
		nr := &r.Nodes[i]
		n := nr.Node
		header := false
		emit := func(s *Sample) {
			if s.Err != nil || !s.Over {
				return
			}
			if !header {
				if n.IsSwitch() {
					fmt.Fprintf(bw, "Errors for 0x%x \"%s\"\n", switchGUID(n), r.nodeName(n))
				} else {
					fmt.Fprintf(bw, "Errors for \"%s\"\n", r.nodeName(n))
				}
				header = true
			}
			line = line[:0]
			if s.Port == int(pma.AllPorts) {
				line = fmt.Appendf(line, "   GUID 0x%x port ALL:", switchGUID(n))
			} else {
				line = fmt.Appendf(line, "   GUID 0x%x port %d:", s.GUID, s.Port)
			}
			line = appendExceeded(line, s, &r.Thresholds)
			line = append(line, '\n')
			bw.Write(line)
		}
		if nr.All != nil {
			emit(nr.All)
		}
		for j := range nr.Ports {
			emit(&nr.Ports[j])
		}
	}
	nodes, badNodes, ports, badPorts := r.Summary()
	fmt.Fprintf(bw, "\n## Summary: %d nodes checked, %d bad nodes found\n", nodes, badNodes)
	fmt.Fprintf(bw, "##          %d ports checked, %d ports have errors beyond threshold\n", ports, badPorts)
	fmt.Fprintf(bw, "## %s\n", r.Thresholds.String())
	if len(r.Failures) > 0 {
		fmt.Fprintf(bw, "##          %d PMA query failures\n", len(r.Failures))
	}
	bw.WriteString("## Suppressed:")
	for _, n := range r.Thresholds.SuppressedNames {
		bw.WriteString(" " + n)
	}
	bw.WriteString("\n")
	return bw.Flush()
}
