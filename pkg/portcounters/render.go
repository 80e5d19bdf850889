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

// humanData is conv_cnt_human_readable for data counters (units of 4
// bytes): the byte count scaled by powers of 1024 in single precision,
// one more step when the first leaves more than 1024, and its unit.
func humanData(v uint64) (float32, string) {
	ui, div := 0, uint64(1)
	for t := v / 1024; t != 0; t /= 1024 {
		ui++
		div *= 1024
	}
	f := float32(v) * 4
	if f/float32(div) > 1024 {
		ui++
		div *= 1024
	}
	units := [...]string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
	u := ""
	if ui < len(units) {
		u = units[ui]
	}
	return f / float32(div), u
}

// dataField is one data or packet counter as ibqueryerrors names it.
type dataField struct {
	name  string
	value uint64
	data  bool // in units of 4 bytes
}

// dataFields are the data counters ibqueryerrors prints for s (--data,
// --counters): PortCountersExtended's where the PMA has them (the
// unicast and multicast packet counters too with CapExtWidth), else
// PortCounters'.
func dataFields(s *Sample, cap uint16) []dataField {
	if s.HasExt {
		e := &s.Ext
		f := []dataField{{"PortXmitData", e.PortXmitData, true}, {"PortRcvData", e.PortRcvData, true},
			{"PortXmitPkts", e.PortXmitPkts, false}, {"PortRcvPkts", e.PortRcvPkts, false}}
		if cap&pma.CapExtWidth != 0 {
			f = append(f, dataField{"PortUnicastXmitPkts", e.PortUnicastXmitPkts, false}, dataField{"PortUnicastRcvPkts", e.PortUnicastRcvPkts, false},
				dataField{"PortMulticastXmitPkts", e.PortMulticastXmitPkts, false}, dataField{"PortMulticastRcvPkts", e.PortMulticastRcvPkts, false})
		}
		return f
	}
	c := &s.Counters
	return []dataField{{"PortXmitData", uint64(c.PortXmitData), true}, {"PortRcvData", uint64(c.PortRcvData), true},
		{"PortXmitPkts", uint64(c.PortXmitPkts), false}, {"PortRcvPkts", uint64(c.PortRcvPkts), false}}
}

// appendData appends ibqueryerrors' " [Name == value (scaled)]" for the
// data counters of s; all of them, or only those not 0.
func appendData(b []byte, s *Sample, cap uint16, all bool) []byte {
	for _, f := range dataFields(s, cap) {
		if f.value == 0 && !all {
			continue
		}
		v, u := humanCount(f.value)
		if f.data {
			v, u = humanData(f.value)
		}
		b = fmt.Appendf(b, " [%s == %d (%5.3f%s)]", f.name, f.value, v, u)
	}
	return b
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
		// --details, as ibqueryerrors 44 prints them: after PortRcvErrors
		// the PortRcvErrorDetails data decoded with PortXmitDiscardDetails'
		// field names, after PortXmitDiscards the reverse (its
		// query_and_dump is given the other attribute's fields)
		switch pma.ErrorNames[i] {
		case "PortRcvErrors":
			b = appendDetails(b, s.RcvDetails, xmitDiscardNames)
		case "PortXmitDiscards":
			b = appendDetails(b, s.XmitDetails, rcvErrorNames)
		}
	}
	return b
}

// The detail attributes' fields (16 bits each from byte 4), libibmad's
// names.
var (
	xmitDiscardNames = []string{"PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards", "PortSwHOQLifetimeLimitDiscards"}
	rcvErrorNames    = []string{"PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors", "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors"}
)

// appendDetails appends " [Name == value]" for the fields of d that are
// not 0.
func appendDetails(b []byte, d *[pma.DataSize]byte, names []string) []byte {
	if d == nil {
		return b
	}
	for k, name := range names {
		if v := uint16(d[4+2*k])<<8 | uint16(d[5+2*k]); v != 0 {
			b = fmt.Appendf(b, " [%s == %d]", name, v)
		}
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

// IBQueryErrorsOptions are ibqueryerrors' output options.
type IBQueryErrorsOptions struct {
	// Data appends the data counters that are not 0 to each port
	// reported (--data).
	Data bool
	// CountersOnly prints every port's data counters instead of the
	// errors (--counters); the report must have been read with
	// Config.PerPort.
	CountersOnly bool
	// ReportPort adds each port line's "Link info" line (-r); ExtPort
	// gives chassis line ports' external port numbers (nil: none).
	ReportPort bool
	ExtPort    func(*model.PhysPort) int
	// NoPeers prints every port without its peer (ibqueryerrors -G of a
	// CA port: libibnetdisc's discovery from a LID-routed CA goes no
	// further than the CA).
	NoPeers bool
	// Peer, when set, is the peer shown for every port instead of its own
	// (ibqueryerrors -D to a CA: see the errors command).
	Peer *model.PhysPort
}

// ForgetErrors clears every sample's Over: ibqueryerrors --counters
// judges no error counter (its summary finds no bad node or port).
func (r *Report) ForgetErrors() {
	for i := range r.Nodes {
		nr := &r.Nodes[i]
		if nr.All != nil {
			nr.All.Over = false
		}
		for j := range nr.Ports {
			nr.Ports[j].Over = false
		}
	}
}

// WriteIBQueryErrors writes r in ibqueryerrors' default output format
// (infiniband-diags 44, no options): for each node with a port beyond a
// threshold an "Errors for" header and one line per such port (and for a
// switch's AllPortSelect sum), then the summary.
func WriteIBQueryErrors(w io.Writer, r *Report) error {
	return WriteIBQueryErrorsOptions(w, r, IBQueryErrorsOptions{})
}

// WriteIBQueryErrorsOptions is WriteIBQueryErrors with ibqueryerrors'
// output options.
func WriteIBQueryErrorsOptions(w io.Writer, r *Report, o IBQueryErrorsOptions) error {
	bw := bufio.NewWriter(w)
	var line []byte
	if o.ExtPort == nil {
		o.ExtPort = func(*model.PhysPort) int { return 0 }
	}
	portConfig := func(n *model.Node, port int) {
		if !o.ReportPort || port == int(pma.AllPorts) {
			return
		}
		if pp := n.Port(port); pp != nil {
			peer := pp.Remote
			if o.Peer != nil {
				peer = o.Peer
			}
			if o.NoPeers {
				peer = nil
			}
			line = r.appendPortConfig(line[:0], pp, peer, o.ExtPort)
			bw.Write(line)
		}
	}
	for i := range r.Nodes {
		nr := &r.Nodes[i]
		n := nr.Node
		header := false
		if o.CountersOnly {
			for j := range nr.Ports {
				s := &nr.Ports[j]
				if s.Err != nil {
					continue
				}
				if !header {
					fmt.Fprintf(bw, "Data Counters for 0x%x \"%s\"\n", n.GUID(), r.nodeName(n))
					header = true
				}
				line = fmt.Appendf(line[:0], "   GUID 0x%x port %d:", n.GUID(), s.Port)
				line = appendData(line, s, nr.Cap.CapabilityMask, true)
				line = append(line, '\n')
				bw.Write(line)
				portConfig(n, s.Port)
			}
			continue
		}
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
			if o.Data {
				line = appendData(line, s, nr.Cap.CapabilityMask, false)
			}
			line = append(line, '\n')
			bw.Write(line)
			portConfig(n, s.Port)
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
