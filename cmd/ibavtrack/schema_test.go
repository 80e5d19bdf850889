package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

var schemaFiles = map[string]string{
	"ibdiag.links/v1":       "links.schema.json",
	"ibdiag.path/v1":        "path.schema.json",
	"ibdiag.av-event/v1":    "av-event.schema.json",
	"ibdiag.errors/v1":      "errors.schema.json",
	"ibdiag.mcast/v1":       "mcast.schema.json",
	"ibdiag.mcast-event/v1": "mcast-event.schema.json",

	"ibdiag.counter-event/v1": "counter-event.schema.json",
}

// jsonDocs runs ibavtrack's JSON forms and returns every document
// printed (watch prints one per line).
func jsonDocs(t *testing.T) map[string][]byte {
	t.Helper()
	runs := [][]string{
		{"links", "--sim", "testdata/pathmix.net"},
		{"links", "--sim", "testdata/mismatch.net"},
		{"links", "--sim", "../../testdata/fabrics/mixed.net"},
		{"links", "--counters", "--sim", "testdata/pathmix.net"},
		{"links", "--counters", "--check", "--sim", "testdata/mismatch.net"},
		{"path", "--sim", "testdata/pathmix.net", "hA", "hB"},
		{"path", "--sim", "../../testdata/fabrics/demo.net", "10", "15"},
		{"watch", "--sim", "testdata/pathmix.net", "--count", "2", "--interval", "1ms", "hA", "hB"},
		{"errors", "--sim", "testdata/pathmix.net"},
		{"mcast", "--sim", "testdata/pathmix.net"},
		{"mcast", "--members", "--sim", "testdata/pathmix.net"},
		{"watch", "--mcast", "0xc000", "--count", "1", "--interval", "1ms", "--sim", "testdata/pathmix.net"},
		{"errors", "--check", "--switch", "--sim", "testdata/pathmix.net"},
		{"errors", "--ca", "-c", "-s", "PortXmitWait", "--sim", "testdata/pathmix.net"},
		// no SM ran, so no LIDs: nothing to check (exit 5), or every PMA
		// query failed (errors: partial, exit 3)
		{"path", "--sim", fabrics + "loop.net", "--sim-sm=false", "h1", "h2"},
		{"links", "--check", "--sim", fabrics + "loop.net", "--sim-sm=false"},
		// no LIDs: the counters cannot be read
		{"links", "--counters", "--sim", fabrics + "loop.net", "--sim-sm=false"},
		{"errors", "--sim", fabrics + "loop.net", "--sim-sm=false"},
	}
	docs := map[string][]byte{}
	add := func(args []string, out, stderr []byte, code int) {
		if code != 0 && code != 2 && code != exitcode.Partial && code != 4 && code != exitcode.NothingChecked {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if args[0] == "watch" {
			for i, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
				if len(l) > 0 {
					docs[strings.Join(args, " ")+" line "+string(rune('1'+i))] = l
				}
			}
			return
		}
		docs[strings.Join(args, " ")] = out
	}
	for _, args := range runs {
		out, stderr, code := runTool(t, append(args, "--json")...)
		add(args, out, stderr, code)
	}
	// Counter events: the counters go up between sweeps (a hook, not --sim).
	out, stderr, code := runWatchCounters(t, "--json")
	if !bytes.Contains(out, []byte(`"event":"counters"`)) {
		t.Fatalf("watch --counters --json printed no counter event:\n%s%s", out, stderr)
	}
	add([]string{"watch", "--counters"}, out, stderr, code)
	// watch events of every kind: new, change (the 1x link goes), and
	// unreachable (h2 is cut off)
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, fab *attach.Fabric) {
		var err error
		switch sweep {
		case 0:
			err = fab.Sim.Unlink("sw1", 2)
		case 1:
			err = fab.Sim.Unlink("h2", 1)
		}
		if err == nil {
			err = fab.Sim.RunSM("h1")
		}
		if err != nil {
			t.Error(err)
		}
	}
	defer func() { afterSweep = nil }()
	out, stderr, _ = runTool(t, "watch", "--sim", "testdata/watch.net", "--sim-host", "h1",
		"--interval", "1ms", "--count", "3", "--json", "h2")
	kinds := map[string]bool{}
	for i, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		docs[fmt.Sprintf("watch with changes, line %d", i+1)] = l
		var ev struct{ Event string }
		json.Unmarshal(l, &ev)
		kinds[ev.Event] = true
	}
	if !kinds["new"] || !kinds["change"] || !kinds["unreachable"] {
		t.Fatalf("watch printed events %v, want new, change and unreachable:\n%s\n%s", kinds, out, stderr)
	}
	return docs
}

// TestJSONSchemas: every JSON document ibavtrack prints validates against
// its schema in docs/.
func TestJSONSchemas(t *testing.T) {
	seen := map[string]bool{}
	for name, doc := range jsonDocs(t) {
		var head struct{ Schema string }
		if err := json.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		file, ok := schemaFiles[head.Schema]
		if !ok {
			t.Fatalf("%s: schema %q has no file in docs/", name, head.Schema)
		}
		seen[head.Schema] = true
		s, err := jsonschema.Load(filepath.Join("../../docs", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ValidateJSON(doc); err != nil {
			t.Errorf("%s does not validate against docs/%s: %v\n%s", name, file, err, doc)
		}
	}
	for s := range schemaFiles {
		if !seen[s] {
			t.Errorf("no run printed %s", s)
		}
	}
}

// TestJSONFieldTypes: a field name has one JSON type in every document
// of every tool (ibdiscover's fabric, ibhops's and ibavtrack's forms), so
// jq filters mean the same everywhere: rate_gbps is a number, src and dst
// port objects, port a number. Lists are the one exception: a count may
// share its name with the list it counts (summary.links and links[]).
func TestJSONFieldTypes(t *testing.T) {
	kinds := map[string]map[string]bool{}
	where := map[string][]string{}
	add := func(name string, doc []byte) {
		var x any
		if err := json.Unmarshal(doc, &x); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		k := map[string]map[string]bool{}
		jsonschema.FieldKinds(x, k)
		for f, ks := range k {
			if kinds[f] == nil {
				kinds[f] = map[string]bool{}
			}
			for kind := range ks {
				if !kinds[f][kind] {
					where[f] = append(where[f], kind+" in "+name)
				}
				kinds[f][kind] = true
			}
		}
	}
	for name, doc := range jsonDocs(t) {
		add("ibavtrack "+name, doc)
	}
	others, _ := filepath.Glob("../ibhops/testdata/golden/*.json")
	fab, _ := filepath.Glob("../../pkg/fabricjson/testdata/*.json")
	others = append(append(others, fab...), "../../docs/fabric.example.json")
	if len(others) < 10 {
		t.Fatalf("only %d documents of the other tools: %v", len(others), others)
	}
	for _, f := range others {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// some goldens keep the run's stderr after the document
		b, _, _ = bytes.Cut(b, []byte("\n--- stderr\n"))
		add(f, b)
	}
	var bad []string
	for f, ks := range kinds {
		n := len(ks)
		if ks["array"] {
			n--
		}
		if n > 1 {
			sort.Strings(where[f])
			bad = append(bad, f+": "+strings.Join(where[f], "; "))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("field %s", b)
	}
}
