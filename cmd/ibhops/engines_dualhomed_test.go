//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestCompatEnginesDualHomed: the engines whose goldens are on
// dualhomed.net (engine-{dfsssp,nue,torus}-dualhomed, TestGoldenEngines)
// against OpenSM on the same fabric: `ibhops --routing-engine NAME` on
// ibsim after OpenSM ran -R NAME equals the opensm-lid-matrix.dump it
// wrote, byte for byte. dualhomed.net is not a torus: OpenSM's
// torus-2QoS falls back to min-hop there, so ibhops's min-hop is compared
// with its dump, and ibhops's torus-2QoS with the dump's "Switch:" lines
// (all a torus-2QoS dump has; torus.net in TestCompatRoutingEngines
// compares one written by a torus-2QoS that routed).
func TestCompatEnginesDualHomed(t *testing.T) {
	ibsimtest.Require(t)
	file, err := filepath.Abs(fabrics + "dualhomed.net")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []routing.Engine{routing.DFSSSP, routing.Nue, routing.Torus2QoS} {
		t.Run(string(e), func(t *testing.T) {
			sim := ibsimtest.Start(t, file)
			dir := t.TempDir()
			log := sim.RunOpenSM(t, "dual", dir, "-R", string(e))
			want, err := os.ReadFile(filepath.Join(dir, "opensm-lid-matrix.dump"))
			if err != nil {
				t.Fatal(err)
			}
			ran := "?"
			if m := engineUsed.FindSubmatch(log); m != nil {
				ran = string(m[1])
			}
			t.Logf("OpenSM -R %s routed with %s", e, ran)
			ours := e
			if e == routing.Torus2QoS {
				if ran != string(routing.MinHop) {
					t.Fatalf("OpenSM's torus-2QoS routed with %s, want its min-hop fallback", ran)
				}
				var sw []byte
				for _, l := range bytes.SplitAfter(want, []byte("\n")) {
					if bytes.HasPrefix(l, []byte("Switch: ")) {
						sw = append(sw, l...)
					}
				}
				out, stderr, code := runOurs(t, "--ibsim", "--ibsim-sockname", sim.SockName, "--routing-engine", string(e))
				if code != 0 || !bytes.Equal(out, sw) {
					t.Errorf("torus-2QoS: exit %d %s, want the dump's Switch: lines:\n%s", code, stderr, golden.LineDiff(string(sw), string(out)))
				}
				ours = routing.MinHop
			}
			out, stderr, code := runOurs(t, "--ibsim", "--ibsim-sockname", sim.SockName, "--routing-engine", string(ours))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("%s (OpenSM used %s): dump differs from OpenSM's:\n%s", ours, ran, golden.LineDiff(string(want), string(out)))
			}
		})
	}
}
