package fabricdot

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
)

// The testdata caches were written by ibnetdiscover 44.0 --cache on ibsim
// 0.10 running ../../testdata/fabrics/{mixed,parallel,router}.net.
func load(t testing.TB, name string) *model.Fabric {
	t.Helper()
	f, err := ibndcache.Load(filepath.Join("testdata", name+".cache"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"mixed", "parallel", "router"} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			o := Options{}
			if name == "mixed" {
				o.Name = func(n *model.Node) string { return strings.ToUpper(n.Description()) + ` "q"` }
			}
			if err := Write(&b, load(t, name), o); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join("testdata", name+".dot")
			golden.Check(t, p, b.Bytes())
		})
	}
}

// TestParallelLinks: three links between two switches are three edges,
// each with its own port numbers (dot draws them side by side).
func TestParallelLinks(t *testing.T) {
	var b bytes.Buffer
	Write(&b, load(t, "parallel"), Options{})
	s := b.String()
	var ports []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, `"S-0000000000200000" -- "S-0000000000200001"`) || strings.Contains(line, `"S-0000000000200001" -- "S-0000000000200000"`) {
			ports = append(ports, line[strings.Index(line, "taillabel="):])
		}
	}
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Errorf("switch pair edges %q: want 3 edges with distinct port labels:\n%s", ports, s)
	}
	if !strings.Contains(s, "shape=box") || !strings.Contains(s, "shape=ellipse") {
		t.Errorf("switches and CAs not styled apart:\n%s", s)
	}
}

func TestQuote(t *testing.T) {
	if got := quote("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("quote = %s", got)
	}
}
