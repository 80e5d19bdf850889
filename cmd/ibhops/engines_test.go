//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// engineFabrics are the fabrics the routing engines are compared on: fat
// trees, irregular ones (a chain, a loop of switches, mixed speeds), LMC
// 1 and 2 over parallel links, and ibsim's example.
func engineFabrics(t *testing.T) []engineFabric {
	var out []engineFabric
	for _, f := range []struct {
		file, host string
		args       []string
	}{
		{"fattree2.net", "H0", nil},
		{"fattree3.net", "H0", nil},
		{"chain10.net", "hA", nil},
		{"loop.net", "h1", nil},
		{"mixed.net", "H-0c42a10300000a00", nil},
		{"lmc.net", "h1", []string{"-l", "1"}},
		{"lmc.net", "h1", []string{"-l", "2"}},
	} {
		abs, err := filepath.Abs(fabrics + f.file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, engineFabric{compatFabric: compatFabric{file: abs, osmHost: f.host, smArgs: f.args}})
	}
	out = append(out, engineFabric{compatFabric: compatFabric{file: ibsimtest.ExampleNet + "/net", osmHost: "Hca1"}})
	// The torus, with QoS and the torus-2QoS configuration, which only
	// torus-2QoS reads.
	torus, err := filepath.Abs(fabrics + "torus.net")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := filepath.Abs("testdata/torus-2QoS.conf")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, engineFabric{compatFabric: compatFabric{file: torus, osmHost: "h00", smArgs: []string{"-Q", "--torus_config", conf}}})
	// LMC 2 with lmc_esp0: switch A's enhanced port 0 has four LIDs.
	esp0, err := filepath.Abs("testdata/lmc_esp0.conf")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, engineFabric{compatFabric: compatFabric{file: out[6].file, osmHost: "h1", smArgs: []string{"-l", "2", "-F", esp0}},
		skip: map[routing.Engine]string{routing.Nue: "OpenSM 3.3.23's nue segfaults on this fabric (lmc_esp0 with LMC 2)"}})
	return out
}

// engineFabric is a fabric for the engine comparisons and the engines
// OpenSM cannot run on it, with the reason.
type engineFabric struct {
	compatFabric
	skip map[routing.Engine]string
}

var engineUsed = regexp.MustCompile(`(\S+) tables configured on all switches`)

// TestCompatRoutingEngines runs OpenSM once with every routing engine it
// ships on each fabric of engineFabrics and compares `ibhops
// --routing-engine NAME` with the opensm-lid-matrix.dump it wrote, byte
// for byte. After dfsssp, `--routed` gives its dump too.
func TestCompatRoutingEngines(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	var mu sync.Mutex // guards used: the fabrics run in parallel
	used := map[string]int{}
	// After every fabric's subtest, parallel ones included.
	t.Cleanup(func() {
		t.Logf("engine → engine OpenSM used: %v", used)
		// Every engine must have routed some fabric itself, or the
		// comparison proves little.
		for _, e := range routing.Engines {
			if used[string(e)+"→"+string(e)] == 0 {
				t.Errorf("OpenSM never routed with %s", e)
			}
		}
	})
	for _, fab := range engineFabrics(t) {
		name := filepath.Base(fab.file)
		for _, a := range fab.smArgs {
			name += filepath.Base(a)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each engine runs on its own ibsim
			for _, e := range routing.Engines {
				if why, ok := fab.skip[e]; ok {
					t.Logf("%s not compared: %s", e, why)
					continue
				}
				sim := ibsimtest.Start(t, fab.file)
				dir := t.TempDir()
				log := sim.RunOpenSM(t, fab.osmHost, dir, append([]string{"-R", string(e)}, fab.smArgs...)...)
				want, err := os.ReadFile(filepath.Join(dir, "opensm-lid-matrix.dump"))
				if err != nil {
					t.Fatal(err)
				}
				ran := "?"
				if m := engineUsed.FindSubmatch(log); m != nil {
					ran = string(m[1])
				}
				mu.Lock()
				used[string(e)+"→"+ran]++
				mu.Unlock()
				base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
				// The runs only read this ibsim after OpenSM's sweep: they
				// share one discovery of it.
				shared := newDiscoveries(t)
				ours := e
				if e == routing.Torus2QoS && ran == string(routing.MinHop) {
					// OpenSM fell back to min-hop, which SMPs cannot
					// tell; ibhops's torus-2QoS is torus-2QoS routing.
					ours = routing.MinHop
				}
				out, stderr, code := runShared(t, shared, append(base, "--routing-engine", string(ours))...)
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", e, code, stderr)
				}
				if !bytes.Equal(out, want) {
					t.Errorf("%s (OpenSM used %s): dump differs from OpenSM's:\n%s", e, ran, golden.LineDiff(string(want), string(out)))
				}
				// The engine's routes are no longer than its own matrix
				// says (nue's: than the hops they program; torus-2QoS has
				// no matrix).
				if e != routing.Torus2QoS && e == routing.Engine(ran) {
					out, stderr, _ := runShared(t, shared, append(base, "--check-routes", "--json", "--routing-engine", string(e))...)
					var doc jsonCheck
					if err := json.Unmarshal(out, &doc); err != nil {
						t.Fatalf("%s --check-routes: %v\n%s", e, err, stderr)
					}
					if doc.Summary.Longer != 0 || doc.Summary.LIDs == 0 {
						t.Errorf("%s --check-routes: %+v", e, doc.Summary)
					}
				}
				if e == routing.DFSSSP {
					out, stderr, code := runShared(t, shared, append(base, "--routed")...)
					if code != 0 || !bytes.Equal(out, want) {
						t.Errorf("--routed after dfsssp: exit %d %s\n%s", code, stderr, golden.LineDiff(string(want), string(out)))
					}
				}
			}
		})
	}
}
