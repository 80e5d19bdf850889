package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

// TestJSONSchema: ibdiscover --json validates against docs/
// fabric.schema.json on healthy fabrics and on the ones where there is
// less to show: a partial discovery (a dead port), no LIDs (no SM ran),
// inconsistent LIDs, a one-hop discovery (--hops 1), and a cache holding
// a partial discovery loaded back.
func TestJSONSchema(t *testing.T) {
	s, err := jsonschema.Load("../../docs/fabric.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	const fabrics = "../../testdata/fabrics/"
	partialCache := filepath.Join(t.TempDir(), "faults.cache")
	if _, stderr, code := runOurs(t, "--sim", fabrics+"faults.net", "--cache", partialCache); code != exitcode.Partial {
		t.Fatalf("--cache of a partial discovery: exit %d: %s", code, stderr)
	}
	runs := []struct {
		args []string
		code int
	}{
		{[]string{"--sim", fabrics + "demo.net"}, exitcode.OK},
		{[]string{"--sim", fabrics + "faults.net"}, exitcode.Partial},
		{[]string{"--sim", fabrics + "loop.net", "--sim-sm=false"}, exitcode.OK},
		{[]string{"--sim", fabrics + "overlap.topo", "--sim-sm=false"}, exitcode.OK},
		{[]string{"--sim", fabrics + "fattree2.net", "--hops", "1"}, exitcode.OK},
		// ibnetdiscover's cache format cannot say a discovery was partial
		{[]string{"--load-cache", partialCache}, exitcode.OK},
	}
	for _, r := range runs {
		name := strings.Join(r.args, " ")
		out, stderr, code := runOurs(t, append(r.args, "--json")...)
		if code != r.code {
			t.Errorf("%s: exit %d, want %d: %s", name, code, r.code, stderr)
			continue
		}
		if err := s.ValidateJSON(out); err != nil {
			t.Errorf("%s does not validate against docs/fabric.schema.json: %v\n%s", name, err, out)
		}
	}
}
