package exporter_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/pkg/exporter"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestPromtoolCheckMetrics: Prometheus' own linter accepts our text, with
// findings, degraded links and a stale result in it.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		clitest.Skip(t, "promtool not installed (Debian package prometheus; scripts/install-deps.sh)")
	}
	for _, net := range []string{fattree2, "../../testdata/fabrics/dualhomed.net"} {
		c := collectNet(t, net, func(f *sim.Fabric) error {
			return f.PerformanceSet(map[bool]string{true: "L0", false: "swA"}[net == fattree2], 1, "PortCounters", "SymbolErrorCounter", 9)
		})
		e := exporter.New()
		if err := e.Set(c); err != nil {
			t.Fatal(err)
		}
		e.Failed()
		var b bytes.Buffer
		if err := exporter.WriteText(&b, e); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
		cmd.Stdin = &b
		out, err := cmd.CombinedOutput()
		late := ctx.Err() != nil
		cancel()
		if late {
			t.Fatalf("%s: promtool check metrics did not finish in 60 s", net)
		}
		if err != nil || len(out) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s", net, err, out)
		}
	}
}
