package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

// schemaFiles maps each JSON document's "schema" to its file in docs/.
var schemaFiles = map[string]string{
	"ibdiag.lid-matrix/v1":  "lid-matrix.schema.json",
	"ibdiag.hops-query/v1":  "hops-query.schema.json",
	"ibdiag.switch-hops/v2": "switch-hops.schema.json",
	"ibdiag.trace/v1":       "trace.schema.json",
	"ibdiag.lft/v1":         "lft.schema.json",
	"ibdiag.mft/v1":         "mft.schema.json",
	"ibdiag.route-check/v1": "route-check.schema.json",
	"ibdiag.mcast-check/v1": "mcast-check.schema.json",
}

// validateDoc validates one JSON document against the schema its
// "schema" field names.
func validateDoc(t *testing.T, name string, doc []byte) {
	t.Helper()
	var head struct{ Schema string }
	if err := json.Unmarshal(doc, &head); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	file, ok := schemaFiles[head.Schema]
	if !ok {
		t.Fatalf("%s: schema %q has no file in docs/", name, head.Schema)
	}
	s, err := jsonschema.Load(filepath.Join("../../docs", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON(doc); err != nil {
		t.Errorf("%s does not validate against docs/%s: %v", name, file, err)
	}
}

// TestJSONSchemas: every JSON document ibhops prints validates against
// its schema in docs/: every mode, on healthy and broken fabrics.
func TestJSONSchemas(t *testing.T) {
	runs := [][]string{
		{"--sim", fabrics + "fattree2.net"},
		{"--sim", fabrics + "router.net"},
		{"--sim", fabrics + "fattree2.net", "H0", "H7"},
		{"--sim", fabrics + "loop.net", "4", "sw3"},
		{"--sim", fabrics + "fattree2.net", "--switch", "S0"},
		{"--sim", fabrics + "loop.net", "--switch", "sw1"},
		{"--sim", fabrics + "fattree2.net", "--trace", "H0", "H7"},
		{"--sim", fabrics + "loop.net", "--trace", "sw2", "h3"},
		{"--sim", fabrics + "chain10.net", "--trace", "hA", "c9"},
		{"--sim", fabrics + "fattree2.net", "--lft", "S0"},
		{"--sim", fabrics + "demo.net", "--mft", "spine01"},
		{"--sim", fabrics + "fattree2.net", "--check-routes"},
		{"--sim", fabrics + "fattree2.net", "--check-mcast"},
		{"--sim", fabrics + "mixed.net", "--check-routes"},
		{"--sim", fabrics + "fattree3.net", "--check-routes", "--routing-engine", "updn"},
		{"--sim", fabrics + "fattree2.net", "--routing-engine", "dnup"},
		{"--sim", fabrics + "fattree2.net", "--routed", "H0", "H7"},
		{"--sim", fabrics + "fattree2.net", "--routing-engine", "nue", "--switch", "S0"},
		// no SM ran (no LIDs) or no forwarding tables: nothing to check
		// (exit 5) or what there is to show
		{"--sim", fabrics + "loop.net", "--sim-sm=false"},
		{"--sim", fabrics + "loop.net", "--sim-sm=false", "h1", "h2"},
		{"--sim", fabrics + "loop.net", "--sim-sm=false", "--switch", "sw1"},
		{"--sim", fabrics + "loop.net", "--sim-sm=false", "--lft", "sw1"},
		{"--sim", fabrics + "loop.net", "--sim-sm=false", "--trace", "h1", "h2"},
		{"--sim", fabrics + "loop.net", "--sim-sm=false", "--check-routes"},
		{"--sim", fabrics + "nolft.topo", "--sim-sm=false", "--check-routes"},
		{"--sim", fabrics + "nolft.topo", "--sim-sm=false", "--trace", "h1", "h2"},
	}
	seen := map[string]bool{}
	for _, args := range runs {
		out, stderr, code := runOurs(t, append(args, "--json")...)
		if code != 0 && code != exitcode.Problem && code != exitcode.NothingChecked {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		validateDoc(t, strings.Join(args, " "), out)
		var head struct{ Schema string }
		json.Unmarshal(out, &head)
		seen[head.Schema] = true
	}
	// and the goldens (check-broken has every kind of finding)
	files, _ := filepath.Glob("testdata/golden/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// some goldens keep the run's stderr after the document
		b, _, _ = bytes.Cut(b, []byte("\n--- stderr\n"))
		validateDoc(t, f, b)
	}
	for s := range schemaFiles {
		if !seen[s] {
			t.Errorf("no run printed %s", s)
		}
	}
}

// TestJSONSchemasReject: the schemas reject what they forbid.
func TestJSONSchemasReject(t *testing.T) {
	good, _, _ := runOurs(t, "--sim", fabrics+"fattree2.net", "--switch", "S0", "--json")
	s, err := jsonschema.Load("../../docs/switch-hops.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{
		{`"num_ports": 8`, `"num_ports": "8"`},
		{`"destination": {`, `"port": {`},
		{`"type": "switch"`, `"type": "Switch"`},
		{`"lmc": 0`, `"lmc": 0, "extra": 1`},
	} {
		doc := strings.Replace(string(good), bad[0], bad[1], 1)
		if doc == string(good) {
			t.Fatalf("%q not in the output", bad[0])
		}
		if s.ValidateJSON([]byte(doc)) == nil {
			t.Errorf("schema accepts %s", bad[1])
		}
	}
}

// TestUnwritableOutputStatus: an --output file that cannot be created is
// exit status 2 with one line naming it, as ibhops(8) says.
func TestUnwritableOutputStatus(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "out")
	_, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--output", missing)
	if code != 2 || strings.Count(string(stderr), "\n") != 1 || !strings.Contains(string(stderr), missing) {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming the file", code, stderr)
	}
}
