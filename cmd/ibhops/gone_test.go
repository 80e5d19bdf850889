package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

// TestCheckRoutesGoneLIDs: after OpenSM routed the fabric, a port is
// unplugged (ibsim's Unlink, no new sweep): the switches still forward
// its LID towards a port without a link. The LID is no discovered port's
// any more, but --check-routes reports every route to it as broken
// (exit 4) where it was clean before, as ibtracert to that LID fails;
// the JSON says the destination is null and validates against the
// schema. Cases: a single-port CA at the end of a 10-switch chain (gone
// from the discovery) and one port of a dual-homed CA (still discovered
// through its other port).
func TestCheckRoutesGoneLIDs(t *testing.T) {
	ibsimtest.Require(t)
	schema, err := jsonschema.Load("../../docs/route-check.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		net, osmHost, gone, unlink, from string
		routes                           int // routes to the gone LID
	}{
		{"chain10.net", "hA", "hB", `Unlink "hB"[1]`, "hA", 10},
		{"dualhomed.net", "thin", "dual", `Unlink "dual"[2]`, "thin", 2},
	} {
		t.Run(c.net, func(t *testing.T) {
			file, err := filepath.Abs(fabrics + c.net)
			if err != nil {
				t.Fatal(err)
			}
			sim := ibsimtest.Start(t, file, ibsimtest.WithConsole())
			sim.RunOpenSM(t, c.osmHost, t.TempDir())
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", c.from}
			f, _ := ibsimFabric(t, sim.SockName)
			var goneLID uint16
			for _, n := range f.Nodes {
				if n.Description() == c.gone || strings.HasPrefix(n.Description(), c.gone+" ") {
					goneLID = n.Port(len(n.Ports) - 1).BaseLID() // its last port
				}
			}
			if goneLID == 0 {
				t.Fatalf("no LID for %s", c.gone)
			}
			if out, _, code := runOurs(t, append(base, "--check-routes")...); code != 0 {
				t.Fatalf("before the unplug: exit %d\n%s", code, out)
			}
			sim.Console(t, c.unlink)
			from := ""
			for _, n := range f.Nodes {
				if n.Description() == c.from || strings.HasPrefix(n.Description(), c.from+" ") {
					from = strconv.Itoa(int(n.Port(1).BaseLID()))
				}
			}
			if _, _, tcode := sim.RunTool(t, c.from, "ibtracert", from, strconv.Itoa(int(goneLID))); tcode == 0 {
				t.Errorf("ibtracert %s %d succeeds after the unplug: the LID is not a black hole", from, goneLID)
			}
			out, stderr, code := runOurs(t, append(base, "--check-routes")...)
			if code != exitcode.Problem {
				t.Errorf("after the unplug: exit %d, want %d: %s\n%s", code, exitcode.Problem, stderr, out)
			}
			want := "down-port: to "
			if !bytes.Contains(out, []byte(want)) || !bytes.Contains(out, []byte("lid "+strconv.Itoa(int(goneLID)))) {
				t.Errorf("after the unplug: no down-port finding for LID %d:\n%s", goneLID, out)
			}
			js, _, code := runOurs(t, append(base, "--check-routes", "--json")...)
			if code != exitcode.Problem {
				t.Errorf("--json: exit %d", code)
			}
			if err := schema.ValidateJSON(js); err != nil {
				t.Errorf("--json does not validate against docs/route-check.schema.json: %v\n%s", err, js)
			}
			var doc struct {
				Findings []struct {
					LID    uint16 `json:"lid"`
					Kind   string `json:"kind"`
					Routes int    `json:"routes"`
				} `json:"findings"`
			}
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatal(err)
			}
			routes := 0
			for _, fd := range doc.Findings {
				if fd.LID == goneLID {
					routes += fd.Routes
				}
			}
			if routes != c.routes {
				t.Errorf("%d broken routes to LID %d, want %d (every switch's):\n%s", routes, goneLID, c.routes, out)
			}
		})
	}
}
