package slurmtopo

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// sweep discovers a simulated fabric (a .net file).
func sweep(t testing.TB, file string) *model.Fabric {
	t.Helper()
	f, err := sim.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1})
	if err != nil || res.Partial() {
		t.Fatalf("discover %s: %v %v", file, err, res.Errors)
	}
	return res.Fabric
}

func fabricFile(name string) string {
	if name == "rails" {
		return filepath.Join("testdata", "rails.net")
	}
	return filepath.Join("..", "..", "testdata", "fabrics", name+".net")
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"fattree2", "fattree3", "dualhomed", "mixed", "demo", "torus", "rails"} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			res, err := Write(&b, sweep(t, fabricFile(name)), Options{Source: name + ".net"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range res.Warnings {
				b.WriteString("# warning: " + w + "\n")
			}
			golden.Check(t, filepath.Join("testdata", name+".conf"), b.Bytes())
		})
	}
}

// TestLevelsThreeTiers: on a 3-level fat tree the core switches are level
// 3 and list the aggregation switches, never the leaves, whichever switch
// the sweep started from.
func TestLevelsThreeTiers(t *testing.T) {
	f := sweep(t, fabricFile("fattree3"))
	lv := model.Levels(f)
	for _, n := range f.Nodes {
		want := map[byte]int{'H': 0, 'L': 1, 'A': 2, 'C': 3}[n.Description()[0]]
		if lv[n] != want {
			t.Errorf("%s: level %d, want %d", n.Description(), lv[n], want)
		}
	}
	var b bytes.Buffer
	if _, err := Write(&b, f, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "SwitchName=C") && (!strings.Contains(line, "Switches=A") || strings.Contains(line, "L")) {
			t.Errorf("core switch line %q: want aggregation switches only", line)
		}
	}
}

// TestRails: a host on two rails is listed under a leaf of each rail, once
// per leaf even when one CA has two ports on it, and under both leaves it
// hangs off.
func TestRails(t *testing.T) {
	var b bytes.Buffer
	if _, err := Write(&b, sweep(t, fabricFile("rails")), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SwitchName=rail0-leaf1 Nodes=node[001-003,010]\n",
		"SwitchName=rail0-leaf2 Nodes=node[007,010]\n",
		"SwitchName=rail1-leaf1 Nodes=node[001-003]\n",
		"SwitchName=rail1-leaf2 Nodes=node007\n",
		"SwitchName=spine0 Switches=rail0-leaf[1-2]\n",
		"SwitchName=core Switches=spine[0-1]\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

func TestRule(t *testing.T) {
	for _, c := range []struct {
		rule, name, want, err string
	}{
		{"", "node017 mlx5_0", "node017", ""},
		{"word", "  node017  HCA-1", "node017", ""},
		{"full", "node017", "node017", ""},
		{"full", "node017 mlx5_0", "", "not a Slurm node name"},
		{"re:^([a-z]+[0-9]+)-ib", "cn12-ib0 HCA", "cn12", ""},
		{"re:[0-9]+", "x 42 y", "42", ""},
		{"re:^cn", "node1", "", "does not match"},
		{"word", "", "", "gives no host name"},
		{"word", "n[1-2] x", "", "not a Slurm node name"},
	} {
		r, err := ParseRule(c.rule)
		if err != nil {
			t.Fatalf("%q: %v", c.rule, err)
		}
		got, err := r.Host(c.name)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("rule %q on %q = %q, %v; want %q, %q", c.rule, c.name, got, err, c.want, c.err)
		}
	}
	for _, bad := range []string{"first", "re:(", "Word"} {
		if _, err := ParseRule(bad); !errors.Is(err, ErrRule) {
			t.Errorf("ParseRule(%q) = %v, want ErrRule", bad, err)
		}
	}
}

func TestCheckNames(t *testing.T) {
	if err := CheckNames(map[uint64]string{1: "node001 mlx5_0", 2: "node001 mlx5_1"}); err != nil {
		t.Errorf("distinct names refused: %v", err)
	}
	err := CheckNames(map[uint64]string{7: "a", 3: "node001", 9: "node001", 5: "b"})
	if !errors.Is(err, ErrDuplicateName) || err.Error() != `duplicate name: "node001" is given to 0x0000000000000003 and 0x0000000000000009` {
		t.Errorf("CheckNames = %v", err)
	}
}
