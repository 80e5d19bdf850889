package portcounters

import (
	"bytes"
	"context"
	"testing"
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
