package fabricdot

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// sweep discovers a simulated fabric (a .net file) after the embedded SM
// brought its ports up.
func sweep(t testing.TB, file string) *model.Fabric {
	t.Helper()
	f, err := sim.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1})
	if err != nil {
		t.Fatalf("discover %s: %v", file, err)
	}
	return res.Fabric
}

func fabricFile(name string) string {
	return filepath.Join("..", "..", "testdata", "fabrics", name+".net")
}

// TestGoldenLevels: a 3-level fat tree drawn by level, a dual-homed CA
// with a 1x link (below capability), from the embedded simulator.
func TestGoldenLevels(t *testing.T) {
	for _, name := range []string{"fattree3", "dualhomed"} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, sweep(t, fabricFile(name)), Options{Title: name}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".dot"), b.Bytes())
		})
	}
}

// subgraphOf returns the name of the rank=same subgraph each vertex is
// declared in.
func subgraphOf(s string) map[string]string {
	in := map[string]string{}
	cur := ""
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "subgraph "):
			cur = strings.Fields(line)[1]
		case line == "}":
			cur = ""
		case cur != "" && strings.HasPrefix(line, `"`) && strings.Contains(line, "[label="):
			in[line[:strings.Index(line, " ")]] = cur
		}
	}
	return in
}

// TestRanks: on a 3-level fat tree the core switches are in the top
// subgraph, aggregation and leaf switches below, hosts at the bottom, and
// every edge between levels names its upper end first (dot ranks an
// edge's tail above its head).
func TestRanks(t *testing.T) {
	f := sweep(t, fabricFile("fattree3"))
	var b bytes.Buffer
	if err := Write(&b, f, Options{}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	in := subgraphOf(s)
	want := map[byte]string{'C': `"level3"`, 'A': `"level2"`, 'L': `"level1"`, 'H': `"level0"`}
	rank := map[string]byte{}
	for _, n := range f.Nodes {
		v := `"` + smp.NodeID(n.Type(), n.GUID()) + `"`
		rank[v] = n.Description()[0]
		if got := in[v]; got != want[n.Description()[0]] {
			t.Errorf("%s (%s) in subgraph %s, want %s", n.Description(), v, got, want[n.Description()[0]])
		}
	}
	if i, j := strings.Index(s, `"level3"`), strings.Index(s, `"level0"`); i < 0 || j < i {
		t.Errorf("top level not declared before the hosts")
	}
	order := "HLAC"
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, " -- ") {
			continue
		}
		f := strings.Fields(strings.TrimSpace(line))
		if strings.IndexByte(order, rank[f[0]]) <= strings.IndexByte(order, rank[f[2]]) {
			t.Errorf("edge %s: the lower end is first", line)
		}
	}
}

// TestMarks: a 1x link between ports that support 12x (ibsim's default) is red and says what it could
// run, a port not Active is dashed, a Disabled port is drawn as a red
// stub, and error counts appear at their end.
func TestMarks(t *testing.T) {
	f := sweep(t, fabricFile("dualhomed"))
	thin := f.NodeByGUID(findGUID(t, f, "thin"))
	swA := thin.Ports[1].Remote.Node
	swB := findNode(t, f, "swB")
	// a port of swB the admin disabled, and the dual CA's second link still Initialize
	p := swB.EnsurePort(4, swB.Ports[1].GUID)
	p.HasInfo, p.Info.PortState, p.Info.PortPhysicalState = true, smp.PortStateDown, smp.PhysDisabled
	dual := findNode(t, f, "dual")
	dual.Ports[2].Info.PortState = smp.PortStateInit
	var b bytes.Buffer
	err := Write(&b, f, Options{Errors: func(p *model.PhysPort) (uint64, bool) {
		if p.Node == swA && p.Num == 2 {
			return 7, true
		}
		return 0, p.Node == swA
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		`label="1xSDR (could be 12xSDR)", taillabel="3", headlabel="1", penwidth=2.5, color="#d62728"`,
		`\nport 2 Initialize", taillabel="1", headlabel="2", style=dashed, color="#d62728"`,
		`"S-` + hex16(swB.GUID()) + `-p4" [shape=point`,
		`[label="Disabled", taillabel="4", style=dashed, color="#d62728"`,
		`port 4 down", shape=box`,
		`[xlabel="4xSDR", taillabel="2 (7 err)", headlabel="2", color="#ff7f0e"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s in\n%s", want, s)
		}
	}
	if n := strings.Count(s, `, color="#d62728"`); n != 5 { // the 1x link, the Init link, the stub, its edge, swB
		t.Errorf("%d red marks, want 5:\n%s", n, s)
	}
}

func findNode(t *testing.T, f *model.Fabric, desc string) *model.Node {
	t.Helper()
	for _, n := range f.Nodes {
		if strings.Fields(n.Description())[0] == desc {
			return n
		}
	}
	t.Fatalf("no node %q", desc)
	return nil
}

func findGUID(t *testing.T, f *model.Fabric, desc string) uint64 {
	return findNode(t, f, desc).GUID()
}

// TestDotRenders: every test fabric's graph is drawn by the real
// Graphviz dot without an error or a warning.
func TestDotRenders(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		clitest.Skip(t, "Graphviz dot is not installed (scripts/install-deps.sh installs graphviz)")
	}
	files, err := filepath.Glob(fabricFile("*"))
	if err != nil || len(files) < 10 {
		t.Fatalf("test fabrics: %v %v", files, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".net")
		t.Run(name, func(t *testing.T) {
			var in bytes.Buffer
			if err := Write(&in, sweep(t, file), Options{Title: name}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, dot, "-Tsvg")
			cmd.Stdin = &in
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil || errb.Len() > 0 {
				t.Fatalf("dot -Tsvg: %v (timeout 60 s: %v)\n%s", err, ctx.Err(), errb.String())
			}
			if !bytes.Contains(out.Bytes(), []byte("</svg>")) {
				t.Fatalf("dot wrote no SVG:\n%.200s", out.String())
			}
			if dir := os.Getenv("FABRICDOT_SVG_DIR"); dir != "" {
				os.WriteFile(filepath.Join(dir, name+".svg"), out.Bytes(), 0o644)
			}
		})
	}
}
