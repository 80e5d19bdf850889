package exporter

// The exporter's metrics as they were built with prometheus/client_golang
// (const metrics gathered by a pedantic registry, encoded by expfmt), kept
// as the reference the hand-written encoder is tested and measured
// against (docs/performance.md, "Prometheus exporter: library").

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// constCollector collects a fixed list of metrics.
type constCollector []prometheus.Metric

func (constCollector) Describe(chan<- *prometheus.Desc) {}
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}

// encode gathers c (checked as a pedantic registry checks: no duplicate
// series, consistent help and labels) and writes it in the text format.
func encode(w io.Writer, c prometheus.Collector) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

type descs struct {
	errs                                   [pma.NumErrors]*prometheus.Desc
	xmitData, rcvData, xmitPkts, rcvPkts   *prometheus.Desc
	ucXmit, ucRcv, mcXmit, mcRcv, qp1      *prometheus.Desc
	ext64                                  *prometheus.Desc
	state, phys, width, speedGbps, rate    *prometheus.Desc
	rawRate                                *prometheus.Desc
	linkInfo, uplink, degraded, readFailed *prometheus.Desc
}

var (
	descCache   = map[string]*descs{}
	descCacheMu sync.Mutex
)

func portDescs(k string) *descs {
	descCacheMu.Lock()
	defer descCacheMu.Unlock()
	if d := descCache[k]; d != nil {
		return d
	}
	p := "infiniband_" + k + "_port_"
	l := []string{"guid", "port"}
	nd := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(p+name, help, append(append([]string{}, l...), extra...), nil)
	}
	d := &descs{}
	for i, n := range counterNames {
		d.errs[i] = nd(n, "PerfMgt "+pma.ErrorNames[i]+" (64-bit from PortCountersExtended where the port has it)")
	}
	d.xmitData = nd("transmit_data_bytes_total", "PerfMgt PortXmitData in bytes")
	d.rcvData = nd("receive_data_bytes_total", "PerfMgt PortRcvData in bytes")
	d.xmitPkts = nd("transmit_packets_total", "PerfMgt PortXmitPkts")
	d.rcvPkts = nd("receive_packets_total", "PerfMgt PortRcvPkts")
	d.ucXmit = nd("unicast_transmit_packets_total", "PerfMgt PortUnicastXmitPkts (PortCountersExtended only)")
	d.ucRcv = nd("unicast_receive_packets_total", "PerfMgt PortUnicastRcvPkts (PortCountersExtended only)")
	d.mcXmit = nd("multicast_transmit_packets_total", "PerfMgt PortMulticastXmitPkts (PortCountersExtended only)")
	d.mcRcv = nd("multicast_receive_packets_total", "PerfMgt PortMulticastRcvPkts (PortCountersExtended only)")
	d.qp1 = nd("qp1_dropped_total", "PerfMgt QP1Dropped")
	d.ext64 = nd("counters_64bit", "1 when the port's counters were read from PortCountersExtended (64-bit)")
	d.state = nd("state", "PortInfo PortState (1 Down, 2 Initialize, 3 Armed, 4 Active)")
	d.phys = nd("physical_state", "PortInfo PortPhysicalState (2 Polling, 3 Disabled, 5 LinkUp, ...)")
	d.width = nd("link_width_lanes", "active link width in lanes (1, 2, 4, 8, 12)")
	d.speedGbps = nd("link_speed_gbps_per_lane", "active lane signalling speed in Gb/s (2.5 SDR .. 212.5 XDR)")
	d.rate = nd("rate_bytes_per_second", "the link's data rate (width times lane speed, after encoding) in bytes per second")
	d.rawRate = nd("raw_rate_bytes_per_second", "the link's signalling rate (width times lane speed, before encoding) in bytes per second")
	if k == "hca" {
		d.rate = prometheus.NewDesc("infiniband_hca_rate_bytes_per_second", "the link's data rate (width times lane speed, after encoding) in bytes per second", l, nil)
		d.rawRate = prometheus.NewDesc("infiniband_hca_raw_rate_bytes_per_second", "the link's signalling rate (width times lane speed, before encoding) in bytes per second", l, nil)
	}
	d.linkInfo = nd("link_info", "the active width and speed as ibnetdiscover names them", "width", "speed")
	d.degraded = nd("link_degraded", "1 when the link runs below the width or speed both ends support and enable")
	d.readFailed = nd("counters_read_failed", "1 when the port's PerfMgt counters could not be read")
	d.uplink = prometheus.NewDesc("infiniband_"+k+"_uplink_info", "the far end of the port's link",
		append(append([]string{}, l...), k, "uplink", "uplink_guid", "uplink_type", "uplink_port", "uplink_lid"), nil)
	return d
}

var (
	descDuration = prometheus.NewDesc("infiniband_exporter_collector_duration_seconds",
		"how long the served collection took", []string{"collector"}, nil)
	descErrors = prometheus.NewDesc("infiniband_exporter_collect_errors",
		"queries of the served collection that failed (SMPs, PerfMgt MADs)", []string{"collector"}, nil)
	descPartial = prometheus.NewDesc("infiniband_exporter_collect_partial",
		"1 when the served collection misses part of the fabric (failed queries, a check that could not run everywhere)", nil, nil)
	descSMPs = prometheus.NewDesc("infiniband_exporter_collect_smps",
		"SMPs the served collection sent (discovery and checks, retries included)", nil, nil)
	descMADs = prometheus.NewDesc("infiniband_exporter_collect_mads",
		"PerfMgt and SA MADs the served collection sent", nil, nil)
	descNodes = prometheus.NewDesc("infiniband_exporter_nodes",
		"nodes the served collection found, by type", []string{"type"}, nil)
	descFinding = prometheus.NewDesc("infiniband_health_finding",
		"findings of ibcheck's checks at one place (the value counts them)",
		[]string{"check", "kind", "severity", "node", "guid", "port", "peer_guid", "peer_port"}, nil)
	descCheck = prometheus.NewDesc("infiniband_health_check_status",
		"1 for the status each check of the served collection ended with",
		[]string{"check", "status"}, nil)
	descProblems = prometheus.NewDesc("infiniband_health_problems",
		"findings of the served collection that are not info", nil, nil)
	descSwitchInfo = prometheus.NewDesc("infiniband_switch_info",
		"a switch of the fabric", []string{"guid", "switch", "lid"}, nil)
	descHCAInfo = prometheus.NewDesc("infiniband_hca_info",
		"a channel adapter of the fabric", []string{"guid", "hca", "lid"}, nil)
)

// clientGolangMetrics returns the metrics of one collection (without the exporter's
// stale flag and age, which Exporter adds at each scrape).
func clientGolangMetrics(c *Collection) []prometheus.Metric {
	var ms []prometheus.Metric
	// a series once only (two nodes with one GUID, as the ids check
	// reports, would repeat one): the first is kept
	type series struct {
		d *prometheus.Desc
		k string
	}
	seen := map[series]bool{}
	add := func(d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
		k := series{d, strings.Join(lv, "\xff")}
		if seen[k] {
			return
		}
		seen[k] = true
		ms = append(ms, prometheus.MustNewConstMetric(d, t, v, lv...))
	}
	add(descDuration, prometheus.GaugeValue, c.Duration.Seconds(), "ibcheck")
	add(descErrors, prometheus.GaugeValue, float64(c.Errors()), "ibcheck")
	add(descPartial, prometheus.GaugeValue, b2f(c.Partial()))
	var smps, mads int64
	if c.Result != nil {
		smps = c.Result.SMPs
	}
	if c.Health != nil {
		smps += c.Health.SMPs
		mads += c.Health.MADs
	}
	if c.Counters != nil && (c.Health == nil || c.Health.Counters != c.Counters) {
		mads += c.Counters.MADs // once (TestMADsCountedOnce)
	}
	add(descSMPs, prometheus.GaugeValue, float64(smps))
	add(descMADs, prometheus.GaugeValue, float64(mads))
	if c.Health != nil {
		ms = appendHealth(ms, c.Health)
	}
	if c.Result == nil || c.Result.Fabric == nil {
		return ms
	}
	name := c.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	f := c.Result.Fabric
	counts := map[string]int{}
	for _, n := range f.Nodes {
		counts[kind(n)]++
		lid := ""
		if p := firstPort(n); p != nil {
			lid = strconv.Itoa(int(p.BaseLID()))
		}
		switch kind(n) {
		case "switch":
			add(descSwitchInfo, prometheus.GaugeValue, 1, hexGUID(n.GUID()), name(n), lid)
		case "hca":
			add(descHCAInfo, prometheus.GaugeValue, 1, hexGUID(n.GUID()), name(n), lid)
		}
	}
	for _, k := range []string{"switch", "hca", "router"} {
		add(descNodes, prometheus.GaugeValue, float64(counts[k]), k)
	}
	degraded := map[*model.PhysPort]bool{}
	for _, l := range pathav.CheckLinks(f, c.MaxOpVLs) {
		for _, p := range l.Problems {
			if p.Kind == pathav.Width || p.Kind == pathav.Speed {
				degraded[l.A], degraded[l.B] = true, true
			}
		}
	}
	for _, n := range f.Nodes {
		k := kind(n)
		d := portDescs(k)
		nm, g := name(n), hexGUID(n.GUID())
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo || (pp.Num == 0 && n.IsSwitch()) {
				continue
			}
			lv := []string{g, strconv.Itoa(int(pp.Num))}
			pi := &pp.Info
			add(d.state, prometheus.GaugeValue, float64(pi.PortState), lv...)
			add(d.phys, prometheus.GaugeValue, float64(pi.PortPhysicalState), lv...)
			if pi.PortState == smp.PortStateDown {
				continue
			}
			caps := pp.CapInfo()
			add(d.width, prometheus.GaugeValue, float64(lanes(pi.LinkWidthActive)), lv...)
			rate := smp.PortRate(pi, caps)
			add(d.rate, prometheus.GaugeValue, smp.RateGbps(rate)*1e9/8, lv...)
			speed := smp.PortSpeedToken(pi, caps, pp.FDR10())
			add(d.speedGbps, prometheus.GaugeValue, laneGbps(speed), lv...)
			add(d.rawRate, prometheus.GaugeValue, float64(lanes(pi.LinkWidthActive))*laneGbps(speed)*1e9/8, lv...)
			add(d.linkInfo, prometheus.GaugeValue, 1, append(lv, smp.WidthToken(pi.LinkWidthActive), speed)...)
			if r := pp.Remote; r != nil {
				add(d.degraded, prometheus.GaugeValue, b2f(degraded[pp]), lv...)
				add(d.uplink, prometheus.GaugeValue, 1, append(lv, nm, name(r.Node), hexGUID(r.Node.GUID()),
					uplinkType(r.Node), strconv.Itoa(int(r.Num)), strconv.Itoa(int(r.BaseLID())))...)
			}
			if c.Counters == nil {
				continue
			}
			s, ok := c.PortCounters(n, int(pp.Num))
			if !ok {
				continue
			}
			if s.Failed {
				add(d.readFailed, prometheus.GaugeValue, 1, lv...)
				continue
			}
			add(d.readFailed, prometheus.GaugeValue, 0, lv...)
			add(d.ext64, prometheus.GaugeValue, b2f(s.Ext), lv...)
			for i, v := range s.Errors {
				add(d.errs[i], prometheus.CounterValue, float64(v), lv...)
			}
			add(d.xmitData, prometheus.CounterValue, float64(s.XmitData)*4, lv...)
			add(d.rcvData, prometheus.CounterValue, float64(s.RcvData)*4, lv...)
			add(d.xmitPkts, prometheus.CounterValue, float64(s.XmitPkts), lv...)
			add(d.rcvPkts, prometheus.CounterValue, float64(s.RcvPkts), lv...)
			if s.Ext {
				add(d.ucXmit, prometheus.CounterValue, float64(s.UnicastXmitPkts), lv...)
				add(d.ucRcv, prometheus.CounterValue, float64(s.UnicastRcvPkts), lv...)
				add(d.mcXmit, prometheus.CounterValue, float64(s.MulticastXmitPkts), lv...)
				add(d.mcRcv, prometheus.CounterValue, float64(s.MulticastRcvPkts), lv...)
			}
			add(d.qp1, prometheus.CounterValue, float64(s.QP1Dropped), lv...)
		}
	}
	return ms
}

func appendHealth(ms []prometheus.Metric, r *health.Report) []prometheus.Metric {
	for _, k := range findingCounts(r) {
		ms = append(ms, prometheus.MustNewConstMetric(descFinding, prometheus.GaugeValue, float64(k.n),
			k.check, k.kind, k.sev, k.node, k.guid, k.port, k.pguid, k.pport))
	}
	for _, c := range r.Checks {
		ms = append(ms, prometheus.MustNewConstMetric(descCheck, prometheus.GaugeValue, 1, c.Name, string(c.Status)))
	}
	ms = append(ms, prometheus.MustNewConstMetric(descProblems, prometheus.GaugeValue, float64(r.Problems())))
	return ms
}
