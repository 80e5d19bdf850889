package exporter_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/exporter"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

const fattree2 = "../../testdata/fabrics/fattree2.net"

// collect sweeps the embedded simulator's fattree2 under its SM, after
// set has changed it.
func collect(t *testing.T, set func(*sim.Fabric) error) *exporter.Collection {
	t.Helper()
	return collectNet(t, fattree2, set)
}

func collectNet(t *testing.T, net string, set func(*sim.Fabric) error) *exporter.Collection {
	t.Helper()
	sf, err := sim.Load(net, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		t.Fatal(err)
	}
	if set != nil {
		if err := set(sf); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := sf.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	checks := []string{health.CheckLinks, health.CheckIDs, health.CheckCounters, health.CheckRoutes}
	c, err := exporter.Collect(ctx, exporter.Config{Transport: tr, Checks: checks,
		Discover: discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second}})
	if ctx.Err() != nil {
		t.Fatal("Collect took more than 60 s")
	}
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return c
}

// scrape returns e's text exposition, parsed.
func scrape(t *testing.T, e *exporter.Exporter) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	var b bytes.Buffer
	if err := exporter.WriteText(&b, e); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("our text does not parse: %v\n%s", err, b.String())
	}
	return b.String(), mfs
}

// value is the value of the sample of family name whose labels include
// want; ok is false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestMetricsOfACollection(t *testing.T) {
	c := collect(t, func(f *sim.Fabric) error {
		if err := f.PerformanceSet("L0", 1, "PortCounters", "SymbolErrorCounter", 7); err != nil {
			return err
		}
		if err := f.PerformanceSet("L0", 2, "PortCountersExtended", "PortXmitData", 1<<40); err != nil {
			return err
		}
		return f.PerformanceSet("H0", 1, "PortCounters", "LinkDownedCounter", 3)
	})
	e := exporter.New()
	if err := e.Set(c); err != nil {
		t.Fatal(err)
	}
	text, mfs := scrape(t, e)
	l0 := c.Result.Fabric.Nodes[0]
	for _, n := range c.Result.Fabric.Nodes {
		if n.Description() == "L0" {
			l0 = n
		}
	}
	if l0.Description() != "L0" {
		t.Fatal("no L0 in the fabric")
	}
	guid := "0x" + strings.TrimPrefix(strings.ToLower(strings.TrimLeft(hex(l0.GUID()), "")), "0x")
	sw := func(port string) map[string]string {
		return map[string]string{"guid": guid, "port": port}
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"infiniband_switch_port_symbol_error_total", sw("1"), 7},
		{"infiniband_switch_port_symbol_error_total", sw("2"), 0},
		{"infiniband_hca_port_link_downed_total", map[string]string{"guid": guidOf(t, c, "H0"), "port": "1"}, 3},
		{"infiniband_switch_port_state", sw("1"), 4},
		{"infiniband_switch_port_link_width_lanes", sw("1"), 4},
		{"infiniband_switch_port_link_degraded", sw("1"), 0},
		{"infiniband_switch_uplink_info", map[string]string{"guid": guid, "port": "1", "switch": "L0", "uplink": "H0", "uplink_type": "CA", "uplink_port": "1", "uplink_guid": "0x0000000000100000"}, 1},
		{"infiniband_health_finding", map[string]string{"check": "counters", "kind": "counter", "node": "L0", "port": "1"}, 1},
		{"infiniband_health_check_status", map[string]string{"check": "counters", "status": "failed"}, 1},
		{"infiniband_exporter_nodes", map[string]string{"type": "switch"}, 6},
		{"infiniband_exporter_nodes", map[string]string{"type": "hca"}, 16},
		{"infiniband_exporter_collect_partial", nil, 0},
		{"infiniband_exporter_collect_errors", map[string]string{"collector": "ibcheck"}, 0},
		{"infiniband_exporter_stale", nil, 0},
		{"infiniband_exporter_up", nil, 1},
	}
	for _, tc := range tests {
		got, ok := value(mfs, tc.name, tc.labels)
		if !ok {
			t.Errorf("no %s%v in:\n%s", tc.name, tc.labels, grep(text, tc.name))
			continue
		}
		if got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// 64-bit, in bytes (4 per PortXmitData unit), plus what the sweep's own MADs added
	if got, ok := value(mfs, "infiniband_switch_port_transmit_data_bytes_total", sw("2")); !ok || got < 4<<40 || got > 4<<40+1<<20 {
		t.Errorf("L0 port 2 transmit_data_bytes_total = %v (present %v), want 4<<40 plus a little", got, ok)
	}
	if got, _ := value(mfs, "infiniband_switch_port_counters_64bit", sw("2")); got != 1 {
		t.Errorf("L0 port 2 counters_64bit = %v, want 1", got)
	}
	if got, _ := value(mfs, "infiniband_exporter_collect_smps", nil); got < float64(c.Result.SMPs) || got == 0 {
		t.Errorf("collect_smps %v, discovery alone sent %d", got, c.Result.SMPs)
	}
	if got, _ := value(mfs, "infiniband_exporter_collect_mads", nil); got == 0 {
		t.Error("collect_mads 0: the counters were read with MADs")
	}
	if mfs["infiniband_switch_port_symbol_error_total"].GetType() != dto.MetricType_COUNTER {
		t.Error("symbol_error_total is not a counter")
	}
}

func TestDegradedLink(t *testing.T) {
	c := collectNet(t, "../../testdata/fabrics/dualhomed.net", nil)
	e := exporter.New()
	if err := e.Set(c); err != nil {
		t.Fatal(err)
	}
	text, mfs := scrape(t, e)
	if v, ok := value(mfs, "infiniband_hca_port_link_degraded", map[string]string{"guid": guidOf(t, c, "thin 1x host"), "port": "1"}); !ok || v != 1 {
		t.Errorf("thin port 1 link_degraded = %v (present %v), want 1:\n%s", v, ok, grep(text, "degraded"))
	}
	if v, ok := value(mfs, "infiniband_switch_port_link_degraded", map[string]string{"guid": guidOf(t, c, "swA"), "port": "3"}); !ok || v != 1 {
		t.Errorf("swA port 3 link_degraded = %v (present %v), want 1", v, ok)
	}
	if v, ok := value(mfs, "infiniband_hca_port_link_degraded", map[string]string{"guid": guidOf(t, c, "dual mlx4_0"), "port": "1"}); !ok || v != 0 {
		t.Errorf("dual port 1 link_degraded = %v (present %v), want 0", v, ok)
	}
	if v, ok := value(mfs, "infiniband_hca_port_link_width_lanes", map[string]string{"guid": guidOf(t, c, "thin 1x host"), "port": "1"}); !ok || v != 1 {
		t.Errorf("thin port 1 link_width_lanes = %v (present %v), want 1", v, ok)
	}
}

func TestStaleAndAge(t *testing.T) {
	e := exporter.New()
	_, mfs := scrape(t, e)
	if v, ok := value(mfs, "infiniband_exporter_up", nil); !ok || v != 0 {
		t.Errorf("before any collection: up = %v (present %v), want 0", v, ok)
	}
	if _, ok := mfs["infiniband_switch_port_state"]; ok {
		t.Error("port metrics before any collection")
	}
	c := collect(t, nil)
	now := c.At.Add(90 * time.Second)
	e.SetClock(func() time.Time { return now })
	if err := e.Set(c); err != nil {
		t.Fatal(err)
	}
	e.Failed()
	e.Failed()
	_, mfs = scrape(t, e)
	for name, want := range map[string]float64{
		"infiniband_exporter_stale":                1,
		"infiniband_exporter_result_age_seconds":   90,
		"infiniband_exporter_sweep_failures_total": 2,
		"infiniband_exporter_up":                   1,
	} {
		if v, ok := value(mfs, name, nil); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if _, ok := mfs["infiniband_switch_port_state"]; !ok {
		t.Error("a stale result is no longer served")
	}
	if err := e.Set(c); err != nil {
		t.Fatal(err)
	}
	_, mfs = scrape(t, e)
	if v, _ := value(mfs, "infiniband_exporter_stale", nil); v != 0 {
		t.Error("a fresh result is still stale")
	}
}

// guidOf is the GUID label of the node whose NodeDescription is desc.
func guidOf(t *testing.T, c *exporter.Collection, desc string) string {
	t.Helper()
	for _, n := range c.Result.Fabric.Nodes {
		if n.Description() == desc {
			return hex(n.GUID())
		}
	}
	t.Fatalf("no node %q", desc)
	return ""
}

func hex(g uint64) string {
	const d = "0123456789abcdef"
	b := []byte("0x0000000000000000")
	for i := 17; i >= 2; i-- {
		b[i] = d[g&15]
		g >>= 4
	}
	return string(b)
}

func grep(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	if len(out) > 40 {
		out = out[:40]
	}
	return strings.Join(out, "\n")
}

// BenchmarkScrapeFatTree: one scrape of /metrics (Handler) serving a
// 2,144-node fat tree's collection (embedded simulator, every check but
// credit loops), as Prometheus asks (Accept-Encoding: gzip) and as a
// client that does not take gzip. Issue 26 asks for under 50 ms.
func BenchmarkScrapeFatTree(b *testing.B) {
	f, err := sim.Generate("fattree:levels=2,radix=64", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		b.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	checks := []string{health.CheckLinks, health.CheckIDs, health.CheckMTUVL, health.CheckCounters, health.CheckRoutes}
	c, err := exporter.Collect(context.Background(), exporter.Config{Transport: tr, Checks: checks,
		Discover: discover.Config{MaxHops: -1, Outstanding: 16}})
	if err != nil {
		b.Fatal(err)
	}
	if n := len(c.Result.Fabric.Nodes); n != 2144 {
		b.Fatalf("%d nodes, want 2144", n)
	}
	e := exporter.New()
	if err := e.Set(c); err != nil {
		b.Fatal(err)
	}
	var text countWriter
	if err := exporter.WriteText(&text, e); err != nil {
		b.Fatal(err)
	}
	h := exporter.Handler(e)
	for _, enc := range []string{"gzip", "identity"} {
		b.Run(enc, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept-Encoding", enc)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				w := &discardResponse{h: http.Header{}}
				h.ServeHTTP(w, req)
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
				size = int(w.n)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
			b.ReportMetric(float64(text), "text-bytes")
		})
	}
}

// discardResponse is an http.ResponseWriter counting what is written.
type discardResponse struct {
	h    http.Header
	code int
	n    int64
}

func (w *discardResponse) Header() http.Header         { return w.h }
func (w *discardResponse) WriteHeader(code int)        { w.code = code }
func (w *discardResponse) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

// TestHandler: /metrics serves WriteText's text with the text format's
// content type, and the result encoded by Set, not gathered again: a
// collection changed after Set does not change what is served.
func TestHandler(t *testing.T) {
	c := collect(t, nil)
	e := exporter.New()
	if err := e.Set(c); err != nil {
		t.Fatal(err)
	}
	e.SetClock(func() time.Time { return c.At.Add(time.Second) })
	want, _ := scrape(t, e)
	c.Result.Fabric.Nodes = nil // what a scrape would see if it gathered again
	srv := httptest.NewServer(exporter.Handler(e))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	if string(body) != want {
		t.Errorf("/metrics differs from WriteText:\n%s", body)
	}
}
