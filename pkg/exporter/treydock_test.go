package exporter

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// treydockCommit is the treydock/infiniband_exporter commit (v0.10.0,
// 2025-01-12) whose collectors' prometheus.NewDesc calls the table below
// was read from: collectors/switch.go, hca.go, collectors.go,
// ibswinfo.go.
const treydockCommit = "992ebe121f3fe746a5937f5f74fbdff10e8ed388"

// treydockPortCounters are the per-port counters both collectors
// (switch.go, hca.go) describe as infiniband_<kind>_port_<name>, labels
// guid and port, CounterValue.
var treydockPortCounters = []string{
	"transmit_data_bytes_total", "receive_data_bytes_total", "transmit_packets_total", "receive_packets_total",
	"unicast_transmit_packets_total", "unicast_receive_packets_total", "multicast_transmit_packets_total",
	"multicast_receive_packets_total", "symbol_error_total", "link_error_recovery_total", "link_downed_total",
	"receive_errors_total", "receive_remote_physical_errors_total", "receive_switch_relay_errors_total",
	"transmit_discards_total", "transmit_constraint_errors_total", "receive_constraint_errors_total",
	"local_link_integrity_errors_total", "excessive_buffer_overrun_errors_total", "vl15_dropped_total",
	"transmit_wait_total", "qp1_dropped_total",
}

// treydockMetric is one of treydock's metric families.
type treydockMetric struct {
	name   string
	labels []string // treydock's, in its order
	typ    dto.MetricType
	// served: we serve the family, with treydock's labels plus extra
	// (docs/metrics.md lists every extra label and every family not
	// served)
	served bool
	extra  []string
}

func treydockMetrics() []treydockMetric {
	var ms []treydockMetric
	for _, k := range []string{"switch", "hca"} {
		for _, n := range treydockPortCounters {
			ms = append(ms, treydockMetric{"infiniband_" + k + "_port_" + n, []string{"guid", "port"}, dto.MetricType_COUNTER, true, nil})
		}
		// PortRcvErrorDetails, with --collector.<kind>.rcv-err-details
		for _, n := range []string{"local_physical_errors_total", "malformed_packet_errors_total", "buffer_overrun_errors_total",
			"dli_mapping_errors_total", "vl_mapping_errors_total", "looping_errors_total"} {
			ms = append(ms, treydockMetric{"infiniband_" + k + "_port_" + n, []string{"guid", "port"}, dto.MetricType_COUNTER, false, nil})
		}
		for _, n := range []string{"collect_duration_seconds", "collect_error", "collect_timeout"} {
			ms = append(ms, treydockMetric{"infiniband_" + k + "_" + n, []string{"guid", "collector"}, dto.MetricType_GAUGE, false, nil})
		}
		ms = append(ms,
			treydockMetric{"infiniband_" + k + "_uplink_info", []string{"guid", "port", k, "uplink", "uplink_guid", "uplink_type", "uplink_port", "uplink_lid"}, dto.MetricType_GAUGE, true, nil},
			treydockMetric{"infiniband_" + k + "_info", []string{"guid", k, "lid"}, dto.MetricType_GAUGE, true, nil},
		)
	}
	ms = append(ms,
		treydockMetric{"infiniband_switch_port_rate_bytes_per_second", []string{"guid", "port"}, dto.MetricType_GAUGE, true, nil},
		treydockMetric{"infiniband_switch_port_raw_rate_bytes_per_second", []string{"guid", "port"}, dto.MetricType_GAUGE, true, nil},
		// a CA's rate per CA in treydock (the last port ibnetdiscover
		// lists), per port in ours
		treydockMetric{"infiniband_hca_rate_bytes_per_second", []string{"guid"}, dto.MetricType_GAUGE, true, []string{"port"}},
		treydockMetric{"infiniband_hca_raw_rate_bytes_per_second", []string{"guid"}, dto.MetricType_GAUGE, true, []string{"port"}},
		// collectors.go
		treydockMetric{"infiniband_exporter_collector_duration_seconds", []string{"collector"}, dto.MetricType_GAUGE, true, nil},
		treydockMetric{"infiniband_exporter_collect_errors", []string{"collector"}, dto.MetricType_GAUGE, true, nil},
		treydockMetric{"infiniband_exporter_collect_timeouts", []string{"collector"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_exporter_last_execution", []string{"collector"}, dto.MetricType_GAUGE, false, nil},
		// ibswinfo.go (--collector.ibswinfo, Mellanox switches' vendor MADs)
		treydockMetric{"infiniband_switch_hardware_info", []string{"guid", "firmware_version", "psid", "part_number", "serial_number", "switch"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_uptime_seconds", []string{"guid"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_power_supply_status_info", []string{"guid", "psu", "status"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_power_supply_dc_power_status_info", []string{"guid", "psu", "status"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_power_supply_fan_status_info", []string{"guid", "psu", "status"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_power_supply_watts", []string{"guid", "psu"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_temperature_celsius", []string{"guid"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_fan_status_info", []string{"guid", "fan", "status"}, dto.MetricType_GAUGE, false, nil},
		treydockMetric{"infiniband_switch_fan_rpm", []string{"guid", "fan"}, dto.MetricType_GAUGE, false, nil},
	)
	return ms
}

// TestTreydockNames: every family of treydock/infiniband_exporter (at
// treydockCommit) we serve has its name, type and label names (plus the
// extra ones docs/metrics.md lists) on every sample, and the families we
// do not serve are absent, on a fabric with switches and CAs.
func TestTreydockNames(t *testing.T) {
	c := collectSpec(t, "../../testdata/fabrics/fattree2.net", nil)
	var b bytes.Buffer
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range treydockMetrics() {
		mf := mfs[m.name]
		if !m.served {
			if mf != nil {
				t.Errorf("%s is served: docs/metrics.md and this table say it is not", m.name)
			}
			continue
		}
		if mf == nil || len(mf.Metric) == 0 {
			t.Errorf("%s (treydock %.7s) is not served", m.name, treydockCommit)
			continue
		}
		if mf.GetType() != m.typ {
			t.Errorf("%s is a %v, treydock's a %v", m.name, mf.GetType(), m.typ)
		}
		want := slices.Sorted(slices.Values(append(slices.Clone(m.labels), m.extra...)))
		for _, s := range mf.Metric {
			var got []string
			for _, l := range s.Label {
				got = append(got, l.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s has labels %s, treydock's %s plus %s", m.name, strings.Join(got, ","), strings.Join(m.labels, ","), strings.Join(m.extra, ","))
				break
			}
		}
	}
}
