package fabricjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// The testdata caches were written by ibnetdiscover 44.0 --cache on ibsim
// 0.10 running ../../testdata/fabrics/{mixed,router}.net.
func load(t testing.TB, name string) *model.Fabric {
	t.Helper()
	f, err := ibndcache.Load(filepath.Join("testdata", name+".cache"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

func schema(t *testing.T) *validator {
	t.Helper()
	b, err := os.ReadFile("../../docs/fabric.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return &validator{root: root}
}

func validate(t *testing.T, doc []byte) {
	t.Helper()
	var x any
	if err := json.Unmarshal(doc, &x); err != nil {
		t.Fatal(err)
	}
	v := schema(t)
	if err := v.validate(v.root, x, "$"); err != nil {
		t.Fatalf("output does not validate against docs/fabric.schema.json: %v", err)
	}
}

func TestGoldenAndSchema(t *testing.T) {
	names := func(n *model.Node) string {
		if n.GUID() == 0x7cfe900300a0b000 {
			return "leaf-01"
		}
		return n.Description()
	}
	p1, _ := smp.ParseDRPath("0,1,3")
	p2, _ := smp.ParseDRPath("0,2")
	tests := []struct {
		name string
		fab  string
		o    Options
	}{
		{"mixed.json", "mixed", Options{Name: names, Summary: Summary{Source: "cache", CacheFile: "mixed.cache", MaxHops: 2}}},
		{"router.json", "router", Options{Summary: Summary{
			SMPs: 40, Retries: 6, MaxHops: 3,
			Errors:   []SMPError{{Path: p1, Attr: smp.AttrNodeInfo, Err: "timeout"}},
			Problems: []Problem{{Kind: "duplicate-guid", Msg: "node 0x0000000000100000 seen twice", Paths: []smp.DRPath{p1, p2}}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			f := load(t, tt.fab)
			if tt.o.Summary.Source != "cache" {
				// As if discovered from h1: the routes discovery would record.
				for i, p := range []string{"0", "0,1", "0,1,2"} {
					f.Nodes[i].Path, _ = smp.ParseDRPath(p)
				}
			}
			if err := Write(&b, f, tt.o); err != nil {
				t.Fatal(err)
			}
			validate(t, b.Bytes())
			checkGolden(t, tt.name, b.Bytes())
		})
	}
}

// Values scripts rely on, checked field by field.
func TestValues(t *testing.T) {
	d := Build(load(t, "mixed"), Options{Summary: Summary{Source: "cache"}})
	if d.Schema != "ibdiag.fabric/v1" || d.Summary.NumNodes != 7 || d.Summary.NumSwitches != 2 || d.Summary.NumLinks != 7 {
		t.Fatalf("summary %+v", d.Summary)
	}
	var hostA *Node
	for i := range d.Nodes {
		if d.Nodes[i].Description == "hostA mlx5_0" {
			hostA = &d.Nodes[i]
		}
	}
	if hostA == nil || len(hostA.Ports) != 1 {
		t.Fatalf("hostA %+v", hostA)
	}
	p := hostA.Ports[0]
	if p.WidthActive != "4x" || p.SpeedActive != "EDR" || p.RateGbps != 100 || p.Remote == nil || p.Remote.Name != "SwA" {
		t.Errorf("hostA port %+v", p)
	}
	if hostA.DRPath != nil {
		t.Errorf("cache-loaded node has a DR path %q", *hostA.DRPath)
	}
	b, _ := json.Marshal(hostA.GUID)
	if string(b) != `"0x0c42a10300000a00"` {
		t.Errorf("GUID encodes as %s", b)
	}
}

// The validator really rejects what the schema forbids.
func TestValidatorRejects(t *testing.T) {
	var b bytes.Buffer
	Write(&b, load(t, "router"), Options{})
	good := b.String()
	for _, bad := range []struct{ from, to string }{
		{`"schema": "ibdiag.fabric/v1"`, `"schema": "ibdiag.fabric/v2"`},
		{`"guid": "0x`, `"guid": "0X`},
		{`"type": "switch"`, `"type": "Switch"`},
		{`"smps_sent": 0`, `"smps_sent": -1`},
		{`"complete": true`, `"complete": "yes"`},
		{`"links": [`, `"extra": 1, "links": [`},
	} {
		doc := strings.Replace(good, bad.from, bad.to, 1)
		if doc == good {
			t.Fatalf("%q not in output", bad.from)
		}
		var x any
		if err := json.Unmarshal([]byte(doc), &x); err != nil {
			t.Fatal(err)
		}
		v := schema(t)
		if err := v.validate(v.root, x, "$"); err == nil {
			t.Errorf("schema accepted %s", bad.to)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	f := load(b, "mixed")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Write(&bytes.Buffer{}, f, Options{})
	}
}

// TestCompleteAndPartial: a result is partial when something is missing
// (failed SMPs, an incomplete problem, an interruption, a fatal error),
// not when it is merely inconsistent.
func TestCompleteAndPartial(t *testing.T) {
	dup := Problem{Kind: "duplicate-guid", Msg: "twice"}
	far := Problem{Kind: "path-too-long", Msg: "beyond 63 hops", Incomplete: true}
	tests := []struct {
		name    string
		s       Summary
		partial bool
	}{
		{"clean", Summary{}, false},
		{"inconsistent", Summary{Problems: []Problem{dup}}, false},
		{"incomplete problem", Summary{Problems: []Problem{dup, far}}, true},
		{"SMP failed", Summary{Errors: []SMPError{{Err: "timeout"}}}, true},
		{"interrupted", Summary{Interrupted: true}, true},
		{"fatal", Summary{Fatal: "gone"}, true},
	}
	f := load(t, "mixed")
	for _, tc := range tests {
		d := Build(f, Options{Summary: tc.s})
		if d.Summary.Partial != tc.partial || d.Summary.Complete == tc.partial {
			t.Errorf("%s: partial %v complete %v, want partial %v", tc.name, d.Summary.Partial, d.Summary.Complete, tc.partial)
		}
	}
}
