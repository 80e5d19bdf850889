package portcounters

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// TestOverOnly: a report read with Config.OverOnly keeps only the samples
// beyond a threshold and the failed ones, and prints (ibqueryerrors'
// format, with each output option) exactly what the full report prints.
func TestOverOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		th   string
		cfg  Config
		o    IBQueryErrorsOptions
	}{
		{"defaults", "", Config{}, IBQueryErrorsOptions{}},
		{"data and link info", "PortXmitWait=100\n", Config{}, IBQueryErrorsOptions{Data: true, ReportPort: true}},
		{"details", "PortXmitDiscards=1\n", Config{Details: true}, IBQueryErrorsOptions{}},
		{"nothing over", "SymbolErrorCounter=100\nPortXmitDiscards=100\n", Config{}, IBQueryErrorsOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, _, err := ParseThresholds("th", []byte(tc.th))
			if err != nil {
				t.Fatal(err)
			}
			// each read on a fabric of its own: the traffic counters
			// printed with --data count the MADs read before
			read := func(overOnly bool) (*Report, string) {
				_, tr, fab := simFabric(t, testNet)
				// h1 without a LID: its queries fail (ErrNoLID) and stay reported
				for _, n := range fab.Nodes {
					if n.Description() == "h1" {
						n.Port(1).Info.LID = 0
					}
				}
				cfg := tc.cfg
				cfg.Transport, cfg.Outstanding, cfg.Thresholds, cfg.OverOnly = tr, 1, th, overOnly
				rep, err := Read(context.Background(), cfg, fab)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := WriteIBQueryErrorsOptions(&b, rep, tc.o); err != nil {
					t.Fatal(err)
				}
				return rep, b.String()
			}
			full, want := read(false)
			lean, got := read(true)
			if got != want {
				t.Errorf("OverOnly prints\n%s\nthe full report\n%s", got, want)
			}
			if len(lean.Failures) != len(full.Failures) || len(full.Failures) == 0 {
				t.Errorf("failures: %d with OverOnly, %d without (want the same, not 0)", len(lean.Failures), len(full.Failures))
			}
			kept, all := 0, 0
			for i := range lean.Nodes {
				nr := &lean.Nodes[i]
				samples := nr.Ports
				if nr.All != nil {
					samples = append([]Sample{*nr.All}, samples...)
				}
				for _, s := range samples {
					kept++
					if !s.Over && s.Err == nil {
						t.Errorf("%s port %d: clean sample kept", nr.Node.Description(), s.Port)
					}
				}
			}
			for i := range full.Nodes {
				all += len(full.Nodes[i].Ports)
				if full.Nodes[i].All != nil {
					all++
				}
			}
			if kept >= all {
				t.Errorf("OverOnly kept %d of %d samples", kept, all)
			}
		})
	}
}

// TestSampledSeesEverySample: Config.Sampled is given every sample read,
// those OverOnly leaves out of the report included, with the values the
// full report keeps (a switch's AllPortSelect sum too).
func TestSampledSeesEverySample(t *testing.T) {
	for _, perPort := range []bool{false, true} {
		th, _, err := ParseThresholds("th", []byte("SymbolErrorCounter=100\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, tr, fab := simFabric(t, testNet)
		full, err := Read(context.Background(), Config{Transport: tr, Outstanding: 1, Thresholds: th, PerPort: perPort}, fab)
		if err != nil {
			t.Fatal(err)
		}
		type key struct {
			node string
			port int
		}
		want := map[key]Sample{}
		for i := range full.Nodes {
			nr := &full.Nodes[i]
			if nr.All != nil {
				want[key{nr.Node.Description(), nr.All.Port}] = *nr.All
			}
			for _, s := range nr.Ports {
				want[key{nr.Node.Description(), s.Port}] = s
			}
		}
		// the same reads on a fabric of its own (the traffic counters
		// count the MADs read before)
		_, tr, fab = simFabric(t, testNet)
		var mu sync.Mutex
		got := map[key]Sample{}
		lean, err := Read(context.Background(), Config{Transport: tr, Outstanding: 4, Thresholds: th, PerPort: perPort, OverOnly: true,
			Sampled: func(n *model.Node, s *Sample) {
				mu.Lock()
				got[key{n.Description(), s.Port}] = *s
				mu.Unlock()
			}}, fab)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("PerPort %v: Sampled saw %d samples, the full report has %d", perPort, len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Errorf("PerPort %v: %s port %d: not given to Sampled", perPort, k.node, k.port)
				continue
			}
			if g.Errors != w.Errors || g.HasExt != w.HasExt || g.Over != w.Over || (g.Err == nil) != (w.Err == nil) {
				t.Errorf("PerPort %v: %s port %d: Sampled got %+v, the report has %+v", perPort, k.node, k.port, g, w)
			}
		}
		kept := 0
		for i := range lean.Nodes {
			kept += len(lean.Nodes[i].Ports)
		}
		if kept >= len(got) {
			t.Errorf("PerPort %v: OverOnly kept %d of %d samples", perPort, kept, len(got))
		}
	}
}
