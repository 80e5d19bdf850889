package topology_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// The testdata caches were written by ibnetdiscover 44.0 --cache on ibsim
// 0.10 (mixed: ../../testdata/fabrics/mixed.net; 2sw2path4hca: ibsim's
// example, before and after OpenSM). The golden files were produced by
// this package and checked against ibnetdiscover --load-cache on the same
// caches (cmd/ibdiscover TestCompatCache compares them live).
func load(t *testing.T, name string) *model.Fabric {
	t.Helper()
	f, err := ibndcache.Load(filepath.Join("testdata", name+".cache"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mapped(n *model.Node) string {
	if n.GUID() == 0x7cfe900300a0c000 {
		return "leaf B"
	}
	return n.Description()
}

func TestGolden(t *testing.T) {
	when := time.Date(2026, 11, 29, 11, 2, 50, 0, time.Local)
	tests := []struct {
		golden string
		fn     func(w *bytes.Buffer) error
	}{
		{"mixed.topo", func(w *bytes.Buffer) error {
			return topology.WriteTopology(w, load(t, "mixed"), topology.Options{Generated: when, Name: mapped, Full: true, MaxHops: true, HopsDiscovered: 2, MADs: 45})
		}},
		{"mixed.group.topo", func(w *bytes.Buffer) error {
			return topology.WriteTopology(w, load(t, "mixed"), topology.Options{Generated: when, Group: true})
		}},
		{"mixed.list", func(w *bytes.Buffer) error { return topology.WriteList(w, load(t, "mixed"), topology.ListAll, mapped) }},
		{"mixed.switches", func(w *bytes.Buffer) error {
			return topology.WriteList(w, load(t, "mixed"), topology.ListSwitches, nil)
		}},
		{"mixed.ports", func(w *bytes.Buffer) error { return topology.WritePorts(w, load(t, "mixed"), mapped) }},
		{"2sw2path4hca.diff", func(w *bytes.Buffer) error {
			return topology.WriteDiff(w, load(t, "2sw2path4hca.nolid"), load(t, "mixed"), topology.DiffDefault|topology.DiffNodeDesc, nil)
		}},
		{"2sw2path4hca.lid.diff", func(w *bytes.Buffer) error {
			return topology.WriteDiff(w, load(t, "2sw2path4hca.osm"), load(t, "2sw2path4hca.nolid"), topology.DiffSwitch|topology.DiffLID, nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.fn(&b); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join("testdata", tt.golden)
			golden.Check(t, p, b.Bytes())
		})
	}
}

func TestParseDiffCheck(t *testing.T) {
	tests := []struct {
		in   string
		want topology.DiffKeys
		bad  bool
	}{
		{"sw,ca,router,port", topology.DiffDefault, false},
		{"SW,Lid", topology.DiffSwitch | topology.DiffLID, false},
		{"nodedesc,,port", topology.DiffNodeDesc | topology.DiffPort, false},
		{"", 0, false},
		{"sw,bogus", 0, true},
	}
	for _, tt := range tests {
		k, err := topology.ParseDiffCheck(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && k != tt.want) {
			t.Errorf("ParseDiffCheck(%q) = %v, %v", tt.in, k, err)
		}
	}
	if _, err := topology.ParseDiffCheck("x"); err == nil || err.Error() != "invalid diff check key: x" {
		t.Errorf("error text %v", err)
	}
	if s := topology.DiffDefault.String(); s != "sw,ca,router,port" {
		t.Errorf("String = %q", s)
	}
}

func BenchmarkWritePorts(b *testing.B) {
	f, err := ibndcache.Load("testdata/mixed.cache")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		topology.WritePorts(&bytes.Buffer{}, f, nil)
	}
}
