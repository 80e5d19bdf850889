package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestCheckRoutesUnroutedByEngine: OpenSM's updn, dnup and ftree leave
// the LIDs between spine switches unrouted (0xFF) by design. With
// --routing-engine naming the engine, --check-routes reports those
// entries apart, as information with the rule that explains them, and
// exits 0 on the healthy fabrics (a two- and a three-level fat tree);
// without it (min-hop routes everything) they stay black holes (exit 4).
// A black hole the engine should have routed (a leaf's entry for a CA,
// set to 0xFF by an SMP) is still a problem (exit 4) under every engine.
func TestCheckRoutesUnroutedByEngine(t *testing.T) {
	ibsimtest.Require(t)
	schema, err := jsonschema.Load("../../docs/route-check.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, net := range []string{"fattree2.net", "fattree3.net"} {
		for _, engine := range []string{"updn", "dnup", "ftree"} {
			t.Run(net+"/"+engine, func(t *testing.T) {
				file, err := filepath.Abs(fabrics + net)
				if err != nil {
					t.Fatal(err)
				}
				sim := ibsimtest.Start(t, file)
				sim.RunOpenSM(t, "H0", t.TempDir(), "-R", engine)
				base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--check-routes", "--limit", "0"}

				out, _, code := runOurs(t, base...)
				if code != exitcode.Problem || !bytes.Contains(out, []byte("black-hole: ")) {
					t.Fatalf("min-hop: exit %d, want %d with black holes: the fabric does not test the rule\n%s", code, exitcode.Problem, out)
				}
				withEngine := append(base, "--routing-engine", engine)
				out, stderr, code := runOurs(t, withEngine...)
				if code != 0 || bytes.Contains(out, []byte("black-hole: ")) || !bytes.Contains(out, []byte("unrouted-by-engine: ")) ||
					!bytes.Contains(out, []byte("Result: clean")) {
					t.Errorf("--routing-engine %s: exit %d: %s\n%s", engine, code, stderr, out)
				}
				js, _, _ := runOurs(t, append(withEngine, "--json")...)
				if err := schema.ValidateJSON(js); err != nil {
					t.Errorf("--json does not validate: %v\n%s", err, js)
				}
				var doc struct {
					Summary struct {
						Clean    bool `json:"clean"`
						Broken   int  `json:"broken_routes"`
						Unrouted int  `json:"unrouted_by_engine"`
					} `json:"summary"`
				}
				if err := json.Unmarshal(js, &doc); err != nil {
					t.Fatal(err)
				}
				if !doc.Summary.Clean || doc.Summary.Broken != 0 || doc.Summary.Unrouted == 0 {
					t.Errorf("--json summary %+v, want clean, no broken route, routes unrouted by %s", doc.Summary, engine)
				}

				// A hole the engine should have routed: L0's entry for H2.
				f, fab := ibsimFabric(t, sim.SockName)
				sw, err := f.ResolvePort("L0", nil)
				if err != nil {
					t.Fatal(err)
				}
				ca, err := f.ResolvePort("H2", nil)
				if err != nil {
					t.Fatal(err)
				}
				dlid := ca.BaseLID()
				exchange := func(m smp.MAD) smp.MAD {
					req, err := m.MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					resp := make([]byte, smp.MADSize)
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					if err := fab.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
						t.Fatal(err)
					}
					var r smp.MAD
					if err := r.UnmarshalBinary(resp); err != nil || r.StatusCode() != 0 {
						t.Fatalf("LFT SMP: %v status %#x", err, r.StatusCode())
					}
					return r
				}
				m := smp.NewGet(sw.Node.Path, smp.AttrLinearForwardingTable, uint32(dlid/64))
				r := exchange(m)
				m.Method = smp.MethodSet
				m.Data = r.Data
				m.Data[dlid%64] = 0xFF
				exchange(m)
				out, _, code = runOurs(t, withEngine...)
				if code != exitcode.Problem || !bytes.Contains(out, []byte(`black-hole: to ca "H2"`)) || !bytes.Contains(out, []byte("unrouted-by-engine: ")) {
					t.Errorf("a hole %s should have routed: exit %d\n%s", engine, code, out)
				}
			})
		}
	}
}
