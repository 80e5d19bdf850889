package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestCheckRoutesNueRouted: on fat trees OpenSM routed with nue (and
// dfsssp, sssp), --check-routes --routing-engine of that engine is clean,
// as the plain check is: the routes are judged by the hops they program
// (nue's matrix holds left-over counts for switch LIDs, and its CA LIDs
// are compared with their own rows, not through the switch they hang on).
func TestCheckRoutesNueRouted(t *testing.T) {
	ibsimtest.Require(t)
	for _, net := range []string{"fattree2.net", "fattree3.net"} {
		file, err := filepath.Abs(fabrics + net)
		if err != nil {
			t.Fatal(err)
		}
		for _, engine := range []string{"nue", "dfsssp", "sssp"} {
			sim := ibsimtest.Start(t, file)
			sim.RunOpenSM(t, "H0", t.TempDir(), "-R", engine)
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--check-routes", "--limit", "3"}
			if out, _, code := runOurs(t, base...); code != 0 {
				t.Fatalf("%s %s: plain --check-routes exit %d:\n%s", net, engine, code, out)
			}
			out, stderr, code := runOurs(t, append(base, "--routing-engine", engine)...)
			if code != 0 || !bytes.Contains(out, []byte("Longer than "+engine+" hops: 0\n")) {
				t.Errorf("%s routed by %s: --routing-engine %s exit %d: %s\n%s", net, engine, engine, code, stderr, out)
			}
		}
	}
}
