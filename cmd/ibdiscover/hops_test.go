package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestHopsFrom: `ibdiscover -hops 2 -from 0,1,3 -o 16` on a testdata
// fabric returns exactly the nodes within two hops of the switch at DR
// path 0,1,3 (computed from a full discovery), in every one of 20 runs.
func TestHopsFrom(t *testing.T) {
	const fabric = "../../testdata/fabrics/fattree3.net"
	f, err := sim.Load(fabric, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	full, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := full.Fabric.From
	for _, port := range []int{1, 3} {
		start = start.Port(port).Remote.Node
	}
	if !start.IsSwitch() {
		t.Fatalf("0,1,3 is %s, not a switch", start.Description())
	}
	want := map[string]bool{}
	far := 0
	for n, d := range discover.Distances(full.Fabric, start) {
		if d <= 2 {
			want[fmt.Sprintf("0x%016x", n.GUID())] = true
		} else {
			far++
		}
	}
	if far == 0 {
		t.Fatal("every node is within 2 hops: the test would prove nothing")
	}
	for run := 0; run < 20; run++ {
		out, stderr, code := runOurs(t, "--sim", fabric, "-hops", "2", "-from", "0,1,3", "-o", "16", "--json")
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr)
		}
		var doc struct {
			Nodes []struct {
				GUID string `json:"guid"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, n := range doc.Nodes {
			got[n.GUID] = true
		}
		if len(got) != len(want) {
			t.Fatalf("run %d: %d nodes, want %d", run, len(got), len(want))
		}
		for g := range want {
			if !got[g] {
				t.Fatalf("run %d: node %s (within 2 hops) missing", run, g)
			}
		}
	}
}

// TestFromShortestRoutes: under -hops 2 -from 0,1,3 --json every node's
// dr_path is its shortest directed route from the local port: the local
// switch is "0" (it was "0,1,37", the route back through the start node).
func TestFromShortestRoutes(t *testing.T) {
	stdout, stderr, code := runOurs(t, "--sim", "../../testdata/fabrics/demo.net", "-hops", "2", "-from", "0,1,3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Nodes []struct {
			Description string `json:"description"`
			DRPath      string `json:"dr_path"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node003 mlx5_0": "0,1,3", "leaf01": "0,1", "node001 mlx5_0": "0,1,1", "node002 mlx5_0": "0,1,2", "spine01": "0", "spine02": "0,1,38"}
	got := map[string]string{}
	for _, n := range doc.Nodes {
		got[n.Description] = n.DRPath
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dr_path: %v, want %v", got, want)
	}
}
