package exporter

import (
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// family is one metric family: its name, type, help and label names.
type family struct {
	name, typ, help string
	labels          []string
	// order is labels' indexes in name order: a sample's label pairs are
	// written sorted, as client_golang writes them
	order []int
}

func newFamily(name, typ, help string, labels ...string) *family {
	f := &family{name: name, typ: typ, help: help, labels: labels}
	for i := range labels {
		f.order = append(f.order, i)
	}
	slices.SortFunc(f.order, func(a, b int) int {
		switch {
		case labels[a] < labels[b]:
			return -1
		case labels[a] > labels[b]:
			return 1
		}
		return 0
	})
	return f
}

const (
	gauge   = "gauge"
	counter = "counter"
)

var (
	famUp = newFamily("infiniband_exporter_up", gauge,
		"1 when a collection of the fabric is served (0 before the first completes)")
	famStale = newFamily("infiniband_exporter_stale", gauge,
		"1 when the last scheduled sweep could not reach the fabric and an older result is served")
	famAge = newFamily("infiniband_exporter_result_age_seconds", gauge,
		"seconds since the served collection started")
	famLastTime = newFamily("infiniband_exporter_last_collect_timestamp_seconds", gauge,
		"when the served collection started (Unix time)")
	famSweepFailures = newFamily("infiniband_exporter_sweep_failures_total", counter,
		"scheduled sweeps that could not reach the fabric since the exporter started")

	famDuration = newFamily("infiniband_exporter_collector_duration_seconds", gauge,
		"how long the served collection took", "collector")
	famErrors = newFamily("infiniband_exporter_collect_errors", gauge,
		"queries of the served collection that failed (SMPs, PerfMgt MADs)", "collector")
	famPartial = newFamily("infiniband_exporter_collect_partial", gauge,
		"1 when the served collection misses part of the fabric (failed queries, a check that could not run everywhere)")
	famSMPs = newFamily("infiniband_exporter_collect_smps", gauge,
		"SMPs the served collection sent (discovery and checks, retries included)")
	famMADs = newFamily("infiniband_exporter_collect_mads", gauge,
		"PerfMgt and SA MADs the served collection sent")
	famNodes = newFamily("infiniband_exporter_nodes", gauge,
		"nodes the served collection found, by type", "type")
	famFinding = newFamily("infiniband_health_finding", gauge,
		"findings of ibcheck's checks at one place (the value counts them)",
		"check", "kind", "severity", "node", "guid", "port", "peer_guid", "peer_port")
	famCheck = newFamily("infiniband_health_check_status", gauge,
		"1 for the status each check of the served collection ended with", "check", "status")
	famProblems = newFamily("infiniband_health_problems", gauge,
		"findings of the served collection that are not info")
	famSwitchInfo = newFamily("infiniband_switch_info", gauge,
		"a switch of the fabric", "guid", "switch", "lid")
	famHCAInfo = newFamily("infiniband_hca_info", gauge,
		"a channel adapter of the fabric", "guid", "hca", "lid")

	portFams = map[string]*portFamilies{
		"switch": newPortFamilies("switch"),
		"hca":    newPortFamilies("hca"),
		"router": newPortFamilies("router"),
	}
)

// portFamilies are the per-port families of one node kind, named
// infiniband_<kind>_port_... and labelled guid and port, as treydock
// names them (the node's name is on uplink_info and the info metric).
type portFamilies struct {
	state, phys, width, rate, rawRate, speedGbps, linkInfo, degraded, uplink *family
	readFailed, ext64                                                        *family
	errs                                                                     [pma.NumErrors]*family
	xmitData, rcvData, xmitPkts, rcvPkts                                     *family
	ucXmit, ucRcv, mcXmit, mcRcv, qp1                                        *family
}

func newPortFamilies(k string) *portFamilies {
	p := "infiniband_" + k + "_port_"
	nf := func(name, typ, help string, extra ...string) *family {
		return newFamily(p+name, typ, help, append([]string{"guid", "port"}, extra...)...)
	}
	d := &portFamilies{}
	for i, n := range counterNames {
		d.errs[i] = nf(n, counter, "PerfMgt "+pma.ErrorNames[i]+" (64-bit from PortCountersExtended where the port has it)")
	}
	d.xmitData = nf("transmit_data_bytes_total", counter, "PerfMgt PortXmitData in bytes")
	d.rcvData = nf("receive_data_bytes_total", counter, "PerfMgt PortRcvData in bytes")
	d.xmitPkts = nf("transmit_packets_total", counter, "PerfMgt PortXmitPkts")
	d.rcvPkts = nf("receive_packets_total", counter, "PerfMgt PortRcvPkts")
	d.ucXmit = nf("unicast_transmit_packets_total", counter, "PerfMgt PortUnicastXmitPkts (PortCountersExtended only)")
	d.ucRcv = nf("unicast_receive_packets_total", counter, "PerfMgt PortUnicastRcvPkts (PortCountersExtended only)")
	d.mcXmit = nf("multicast_transmit_packets_total", counter, "PerfMgt PortMulticastXmitPkts (PortCountersExtended only)")
	d.mcRcv = nf("multicast_receive_packets_total", counter, "PerfMgt PortMulticastRcvPkts (PortCountersExtended only)")
	d.qp1 = nf("qp1_dropped_total", counter, "PerfMgt QP1Dropped")
	d.ext64 = nf("counters_64bit", gauge, "1 when the port's counters were read from PortCountersExtended (64-bit)")
	d.state = nf("state", gauge, "PortInfo PortState (1 Down, 2 Initialize, 3 Armed, 4 Active)")
	d.phys = nf("physical_state", gauge, "PortInfo PortPhysicalState (2 Polling, 3 Disabled, 5 LinkUp, ...)")
	d.width = nf("link_width_lanes", gauge, "active link width in lanes (1, 2, 4, 8, 12)")
	d.speedGbps = nf("link_speed_gbps_per_lane", gauge, "active lane signalling speed in Gb/s (2.5 SDR .. 212.5 XDR)")
	d.rate = nf("rate_bytes_per_second", gauge, "the link's data rate (width times lane speed, after encoding) in bytes per second")
	d.rawRate = nf("raw_rate_bytes_per_second", gauge, "the link's signalling rate (width times lane speed, before encoding) in bytes per second")
	if k == "hca" {
		// treydock's names for a CA's (infiniband_hca_rate_bytes_per_second)
		d.rate.name = "infiniband_hca_rate_bytes_per_second"
		d.rawRate.name = "infiniband_hca_raw_rate_bytes_per_second"
	}
	d.linkInfo = nf("link_info", gauge, "the active width and speed as ibnetdiscover names them", "width", "speed")
	d.degraded = nf("link_degraded", gauge, "1 when the link runs below the width or speed both ends support and enable")
	d.readFailed = nf("counters_read_failed", gauge, "1 when the port's PerfMgt counters could not be read")
	d.uplink = newFamily("infiniband_"+k+"_uplink_info", gauge, "the far end of the port's link",
		"guid", "port", k, "uplink", "uplink_guid", "uplink_type", "uplink_port", "uplink_lid")
	return d
}

// text writes samples in the text exposition format, a family's HELP and
// TYPE before its first sample. A family's samples must be written
// together (the format requires it).
type text struct {
	w   io.Writer
	b   []byte
	cur *family
	err error
}

func newText(w io.Writer) *text { return &text{w: w, b: make([]byte, 0, 64<<10)} }

// sample writes one sample of f with label values vals (in f.labels'
// order).
func (t *text) sample(f *family, v float64, vals ...string) {
	if t.cur != f {
		t.cur = f
		t.b = append(t.b, "# HELP "...)
		t.b = append(t.b, f.name...)
		t.b = append(t.b, ' ')
		t.b = appendEscaped(t.b, f.help, false)
		t.b = append(t.b, "\n# TYPE "...)
		t.b = append(t.b, f.name...)
		t.b = append(t.b, ' ')
		t.b = append(t.b, f.typ...)
		t.b = append(t.b, '\n')
	}
	t.b = append(t.b, f.name...)
	if len(f.order) > 0 {
		t.b = append(t.b, '{')
		for i, j := range f.order {
			if i > 0 {
				t.b = append(t.b, ',')
			}
			t.b = append(t.b, f.labels[j]...)
			t.b = append(t.b, '=', '"')
			t.b = appendEscaped(t.b, vals[j], true)
			t.b = append(t.b, '"')
		}
		t.b = append(t.b, '}')
	}
	t.b = append(t.b, ' ')
	t.b = appendFloat(t.b, v)
	t.b = append(t.b, '\n')
	if len(t.b) >= 60<<10 {
		t.flush()
	}
}

// single writes a family's only sample (no labels).
func (t *text) single(f *family, v float64) { t.sample(f, v) }

func (t *text) flush() error {
	if t.err == nil && len(t.b) > 0 {
		_, t.err = t.w.Write(t.b)
	}
	t.b = t.b[:0]
	return t.err
}

// appendEscaped escapes a HELP text (backslash, newline) or a label value
// (and double quote).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat formats v as expfmt does.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, '-', '1')
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// Write writes the metrics of one collection in the text exposition
// format (without the exporter's own: up, stale, the result's age). A
// node whose GUID and name repeat an earlier node's (a duplicate GUID,
// which the ids check reports) is written once, the first.
//
// It works from the model and the packed counters family by family,
// without a copy of the ports: what a sample needs is worked out again
// for each family it is in, which costs less than holding it.
func Write(w io.Writer, c *Collection) error {
	t := newText(w)
	t.sample(famDuration, c.Duration.Seconds(), "ibcheck")
	t.sample(famErrors, float64(c.Errors()), "ibcheck")
	t.single(famPartial, b2f(c.Partial()))
	var smps, mads int64
	if c.Result != nil {
		smps = c.Result.SMPs
	}
	if c.Health != nil {
		smps += c.Health.SMPs
		mads += c.Health.MADs
	}
	if c.Counters != nil && (c.Health == nil || c.Health.Counters != c.Counters) {
		// read by Collect, not by the counters check (whose MADs the
		// health report counts already)
		mads += c.Counters.MADs
	}
	t.single(famSMPs, float64(smps))
	t.single(famMADs, float64(mads))
	if c.Result == nil || c.Result.Fabric == nil {
		if c.Health != nil {
			writeHealth(t, c.Health)
		}
		return t.flush()
	}
	name := c.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	f := c.Result.Fabric
	type nodeKey struct {
		kind, name string
		guid       uint64
	}
	seen := map[nodeKey]bool{}
	// the nodes written, by kind, with their GUIDs and names as labels
	byKind := map[string]*kindNodes{"hca": {}, "router": {}, "switch": {}}
	counts := map[string]int{}
	for _, n := range f.Nodes {
		k := kind(n)
		counts[k]++
		nm := name(n)
		key := nodeKey{k, nm, n.GUID()}
		if seen[key] {
			continue
		}
		seen[key] = true
		kn := byKind[k]
		kn.nodes, kn.guids, kn.names = append(kn.nodes, n), append(kn.guids, hexGUID(n.GUID())), append(kn.names, nm)
	}
	seen = nil
	for _, k := range []string{"hca", "router", "switch"} {
		t.sample(famNodes, float64(counts[k]), k)
	}
	degraded := map[*model.PhysPort]bool{}
	f.Links(func(a, b *model.PhysPort) {
		// pathav.CheckLinks, one link at a time
		for _, p := range pathav.CheckLink(a, b, c.MaxOpVLs).Problems {
			if p.Kind == pathav.Width || p.Kind == pathav.Speed {
				degraded[a], degraded[b] = true, true
			}
		}
	})
	if st := c.store(); st != nil {
		for _, kn := range byKind {
			kn.recs = make([][]byte, len(kn.nodes))
			for i, n := range kn.nodes {
				kn.recs[i] = st.records(n)
			}
		}
	}
	pw := &portWriter{t: t, name: name, degraded: degraded}
	// families in name order, as client_golang writes them
	pw.info(famHCAInfo, byKind["hca"])
	pw.ports(portFams["hca"], byKind["hca"])
	if c.Health != nil {
		writeHealth(t, c.Health)
	}
	pw.ports(portFams["router"], byKind["router"])
	pw.info(famSwitchInfo, byKind["switch"])
	pw.ports(portFams["switch"], byKind["switch"])
	return t.flush()
}

// kindNodes are the nodes of one kind written, with their GUIDs (as
// labels), names and packed counters (recs nil: not read).
type kindNodes struct {
	nodes        []*model.Node
	guids, names []string
	recs         [][]byte
}

// portWriter writes the per-port families of a collection.
type portWriter struct {
	t        *text
	name     func(*model.Node) string
	degraded map[*model.PhysPort]bool
}

// info writes a node info family (switch_info, hca_info).
func (w *portWriter) info(fam *family, kn *kindNodes) {
	for i, n := range kn.nodes {
		lid := ""
		if p := firstPort(n); p != nil {
			lid = strconv.Itoa(int(p.BaseLID()))
		}
		w.t.sample(fam, 1, kn.guids[i], kn.names[i], lid)
	}
}

// written reports whether port pp of n has per-port samples.
func written(n *model.Node, pp *model.PhysPort) bool {
	return pp != nil && pp.HasInfo && !(pp.Num == 0 && n.IsSwitch())
}

func isDown(pp *model.PhysPort) bool { return pp.Info.PortState == smp.PortStateDown }

// speed is an active port's lane speed token and its lane rate.
func speed(pp *model.PhysPort) (string, float64) {
	tok := smp.PortSpeedToken(&pp.Info, pp.CapInfo(), pp.FDR10())
	return tok, laneGbps(tok)
}

// each writes fam's sample of every port of kn that has one (v's ok).
func (w *portWriter) each(fam *family, kn *kindNodes, v func(pp *model.PhysPort) (float64, bool)) {
	for i, n := range kn.nodes {
		for _, pp := range n.Ports {
			if !written(n, pp) {
				continue
			}
			if x, ok := v(pp); ok {
				w.t.sample(fam, x, kn.guids[i], strconv.Itoa(int(pp.Num)))
			}
		}
	}
}

// up is v for a port that is not down.
func up(v func(pp *model.PhysPort) float64) func(pp *model.PhysPort) (float64, bool) {
	return func(pp *model.PhysPort) (float64, bool) {
		if isDown(pp) {
			return 0, false
		}
		return v(pp), true
	}
}

// Which ports of a node a counter family has a sample of.
const (
	anyRead = iota // every port whose counters were looked for and found (read or failed)
	readOK         // every port whose counters were read
	readExt        // every port read from PortCountersExtended
)

// eachRead writes fam's sample of the ports of kn whose counters are in
// the store (which: anyRead, readOK, readExt), its value v of their
// record.
func (w *portWriter) eachRead(fam *family, kn *kindNodes, which int, v func(r record) float64) {
	if kn.recs == nil {
		return
	}
	for i, n := range kn.nodes {
		cur := cursor{b: kn.recs[i], port: -1}
		for _, pp := range n.Ports {
			if !written(n, pp) || isDown(pp) {
				continue
			}
			r, ok := cur.at(int(pp.Num))
			if !ok || (which != anyRead && r.failed()) || (which == readExt && !r.ext()) {
				continue
			}
			w.t.sample(fam, v(r), kn.guids[i], strconv.Itoa(int(pp.Num)))
		}
	}
}

// ports writes the per-port families of one node kind, a family at a
// time.
func (w *portWriter) ports(d *portFamilies, kn *kindNodes) {
	w.each(d.state, kn, func(pp *model.PhysPort) (float64, bool) { return float64(pp.Info.PortState), true })
	w.each(d.phys, kn, func(pp *model.PhysPort) (float64, bool) { return float64(pp.Info.PortPhysicalState), true })
	w.each(d.width, kn, up(func(pp *model.PhysPort) float64 { return float64(lanes(pp.Info.LinkWidthActive)) }))
	w.each(d.rate, kn, up(func(pp *model.PhysPort) float64 {
		return smp.RateGbps(smp.PortRate(&pp.Info, pp.CapInfo())) * 1e9 / 8
	}))
	w.each(d.rawRate, kn, up(func(pp *model.PhysPort) float64 {
		_, gbps := speed(pp)
		return float64(lanes(pp.Info.LinkWidthActive)) * gbps * 1e9 / 8
	}))
	w.each(d.speedGbps, kn, up(func(pp *model.PhysPort) float64 { _, gbps := speed(pp); return gbps }))
	for i, n := range kn.nodes {
		for _, pp := range n.Ports {
			if written(n, pp) && !isDown(pp) {
				tok, _ := speed(pp)
				w.t.sample(d.linkInfo, 1, kn.guids[i], strconv.Itoa(int(pp.Num)), smp.WidthToken(pp.Info.LinkWidthActive), tok)
			}
		}
	}
	w.each(d.degraded, kn, func(pp *model.PhysPort) (float64, bool) {
		return b2f(w.degraded[pp]), !isDown(pp) && pp.Remote != nil
	})
	for i, n := range kn.nodes {
		for _, pp := range n.Ports {
			if !written(n, pp) || isDown(pp) || pp.Remote == nil {
				continue
			}
			rp := pp.Remote
			w.t.sample(d.uplink, 1, kn.guids[i], strconv.Itoa(int(pp.Num)), kn.names[i], w.name(rp.Node), hexGUID(rp.Node.GUID()),
				uplinkType(rp.Node), strconv.Itoa(int(rp.Num)), strconv.Itoa(int(rp.BaseLID())))
		}
	}
	w.eachRead(d.readFailed, kn, anyRead, func(r record) float64 { return b2f(r.failed()) })
	w.eachRead(d.ext64, kn, readOK, func(r record) float64 { return b2f(r.ext()) })
	for e := range d.errs {
		w.eachRead(d.errs[e], kn, readOK, func(r record) float64 { return float64(r.field(e)) })
	}
	// the data counters in bytes (PerfMgt counts 4-byte units)
	w.eachRead(d.xmitData, kn, readOK, func(r record) float64 { return float64(r.field(fXmitData)) * 4 })
	w.eachRead(d.rcvData, kn, readOK, func(r record) float64 { return float64(r.field(fRcvData)) * 4 })
	field := func(k int) func(r record) float64 { return func(r record) float64 { return float64(r.field(k)) } }
	w.eachRead(d.xmitPkts, kn, readOK, field(fXmitPkts))
	w.eachRead(d.rcvPkts, kn, readOK, field(fRcvPkts))
	w.eachRead(d.ucXmit, kn, readExt, field(fUnicastXmit))
	w.eachRead(d.ucRcv, kn, readExt, field(fUnicastRcv))
	w.eachRead(d.mcXmit, kn, readExt, field(fMulticastXmit))
	w.eachRead(d.mcRcv, kn, readExt, field(fMulticastRcv))
	w.eachRead(d.qp1, kn, readOK, field(fQP1Dropped))
}

// findingCount is how many findings of one kind a check made at one
// place (and peer): the labels and value of infiniband_health_finding.
type findingCount struct {
	check, kind, sev, node, guid, port, pguid, pport string
	n                                                int
}

// findingCounts groups r's findings by check, kind, severity and place,
// in the order each group first appears.
func findingCounts(r *health.Report) []findingCount {
	place := func(p health.Place) (string, string) {
		port := ""
		if p.Port >= 0 {
			port = strconv.Itoa(p.Port)
		}
		return hexGUID(p.NodeGUID), port
	}
	index := map[findingCount]int{} // keyed with n == 0
	var out []findingCount
	for _, f := range r.Findings {
		g, port := place(f.Place)
		k := findingCount{check: f.Check, kind: f.Kind, sev: f.Severity.String(), node: f.Place.Node, guid: g, port: port}
		if f.Peer != nil {
			k.pguid, k.pport = place(*f.Peer)
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, k)
		}
		out[i].n++
	}
	return out
}

// writeHealth writes the health report's findings (counted by place),
// each check's status and the problem count.
func writeHealth(t *text, r *health.Report) {
	for _, k := range findingCounts(r) {
		t.sample(famFinding, float64(k.n), k.check, k.kind, k.sev, k.node, k.guid, k.port, k.pguid, k.pport)
	}
	for _, c := range r.Checks {
		t.sample(famCheck, 1, c.Name, string(c.Status))
	}
	t.single(famProblems, float64(r.Problems()))
}
