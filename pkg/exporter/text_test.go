package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// collectSpec sweeps the embedded simulator's fabric spec under its SM
// (every check but credit loops and the baseline) after set changed it.
func collectSpec(tb testing.TB, spec string, set func(*sim.Fabric) error) *Collection {
	tb.Helper()
	var f *sim.Fabric
	var err error
	if strings.HasSuffix(spec, ".net") {
		f, err = sim.Load(spec, nil)
	} else {
		f, err = sim.Generate(spec, nil)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		tb.Fatal(err)
	}
	if set != nil {
		if err := set(f); err != nil {
			tb.Fatal(err)
		}
	}
	tr, err := f.Attach("")
	if err != nil {
		tb.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	checks := []string{health.CheckLinks, health.CheckIDs, health.CheckMTUVL, health.CheckCounters, health.CheckRoutes}
	c, err := Collect(ctx, Config{Transport: tr, Checks: checks, Discover: discover.Config{MaxHops: -1, Outstanding: 16}})
	if ctx.Err() != nil {
		tb.Fatal("Collect took more than 5 minutes")
	}
	if err != nil {
		tb.Fatalf("Collect: %v", err)
	}
	return c
}

// series flattens parsed families to "name{labels} type value" lines,
// sorted, and checks each family's help.
func series(t *testing.T, text []byte) []string {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("does not parse: %v", err)
	}
	var out []string
	for name, mf := range mfs {
		out = append(out, fmt.Sprintf("%s HELP %q TYPE %v", name, mf.GetHelp(), mf.GetType()))
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			out = append(out, fmt.Sprintf("%s{%s} %v", name, strings.Join(ls, ","), value(m)))
		}
	}
	slices.Sort(out)
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// TestWriteMatchesClientGolang: the hand-written encoder writes the same
// families, help, types, series and values as client_golang (a pedantic
// registry, expfmt) did for the same collection, on fabrics with counters
// raised, a down port, a degraded link and a failed check; and the same
// bytes, family by family, where client_golang's sorting of series does
// not differ from ours.
func TestWriteMatchesClientGolang(t *testing.T) {
	for _, net := range []string{"../../testdata/fabrics/fattree2.net", "../../testdata/fabrics/dualhomed.net"} {
		t.Run(net, func(t *testing.T) {
			c := collectSpec(t, net, func(f *sim.Fabric) error {
				if strings.HasSuffix(net, "fattree2.net") {
					if err := f.PerformanceSet("L0", 1, "PortCounters", "SymbolErrorCounter", 7); err != nil {
						return err
					}
					return f.PerformanceSet("L0", 2, "PortCountersExtended", "PortXmitData", 1<<40)
				}
				return nil
			})
			var ours, ref bytes.Buffer
			if err := Write(&ours, c); err != nil {
				t.Fatal(err)
			}
			if err := encode(&ref, constCollector(clientGolangMetrics(c))); err != nil {
				t.Fatalf("client_golang: %v", err)
			}
			got, want := series(t, ours.Bytes()), series(t, ref.Bytes())
			if !slices.Equal(got, want) {
				for _, l := range want {
					if !slices.Contains(got, l) {
						t.Errorf("missing: %s", l)
					}
				}
				for _, l := range got {
					if !slices.Contains(want, l) {
						t.Errorf("extra: %s", l)
					}
				}
			}
			if len(got) < 100 {
				t.Errorf("only %d lines compared", len(got))
			}
		})
	}
}

// TestEscaping: label values and help with backslashes, quotes and
// newlines are escaped as the text format says (the parser gets them back).
func TestEscaping(t *testing.T) {
	f := newFamily("x_info", gauge, "a \\ help\nline", "name", "guid")
	var b bytes.Buffer
	tx := newText(&b)
	odd := "sw \"1\" \\ a\nb"
	tx.sample(f, 1, odd, "0x1")
	tx.sample(f, 0.5, "plain", "0x2")
	if err := tx.flush(); err != nil {
		t.Fatal(err)
	}
	want := "# HELP x_info a \\\\ help\\nline\n# TYPE x_info gauge\n" +
		"x_info{guid=\"0x1\",name=\"sw \\\"1\\\" \\\\ a\\nb\"} 1\nx_info{guid=\"0x2\",name=\"plain\"} 0.5\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	s := series(t, b.Bytes())
	if !slices.Contains(s, "x_info{guid=0x1,name="+odd+"} 1") {
		t.Errorf("parsed back: %q", s)
	}
}

// BenchmarkEncodeFatTree: the metrics of one collection of the 2,144-node
// fat tree in the text format, by client_golang (const metrics, a
// pedantic registry's Gather, expfmt, as Set did up to issue 26's cost
// work) and by Write. docs/performance.md has the figures.
func BenchmarkEncodeFatTree(b *testing.B) {
	c := collectSpec(b, "fattree:levels=2,radix=64", nil)
	if n := len(c.Result.Fabric.Nodes); n != 2144 {
		b.Fatalf("%d nodes, want 2144", n)
	}
	b.Run("client_golang", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := encode(io.Discard, constCollector(clientGolangMetrics(c))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Write(io.Discard, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMADsCountedOnce: collect_mads counts the counters' MADs once,
// whether the counters check read them (the health report counts them)
// or Collect did.
func TestMADsCountedOnce(t *testing.T) {
	c := collectSpec(t, "../../testdata/fabrics/fattree2.net", nil)
	if c.Health == nil || c.Counters == nil || c.Health.Counters != c.Counters || c.Counters.MADs == 0 {
		t.Fatal("the counters check did not read the counters")
	}
	mads := func(c *Collection) float64 {
		var b bytes.Buffer
		if err := Write(&b, c); err != nil {
			t.Fatal(err)
		}
		for _, l := range series(t, b.Bytes()) {
			if v, ok := strings.CutPrefix(l, "infiniband_exporter_collect_mads{} "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		t.Fatal("no infiniband_exporter_collect_mads")
		return 0
	}
	if got, want := mads(c), float64(c.Health.MADs); got != want {
		t.Errorf("counters read by the check: collect_mads %v, want the report's %v", got, want)
	}
	// as Collect leaves it when the counters check does not run
	own := *c.Counters
	c.Counters = &own
	if got, want := mads(c), float64(c.Health.MADs+own.MADs); got != want {
		t.Errorf("counters read by Collect: collect_mads %v, want %v", got, want)
	}
}
