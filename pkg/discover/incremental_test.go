package discover_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

func renderFabric(t *testing.T, res *discover.Result) string {
	t.Helper()
	var b strings.Builder
	if err := fabricjson.Write(&b, res.Fabric, fabricjson.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sameAnswers compares what the JSON leaves out: every node's path,
// NodeInfo and each port's PortInfo as decoded (LocalPortNum included),
// in discovery order.
func sameAnswers(got, want *discover.Result) string {
	if len(got.Fabric.Nodes) != len(want.Fabric.Nodes) {
		return fmt.Sprintf("%d nodes, want %d", len(got.Fabric.Nodes), len(want.Fabric.Nodes))
	}
	for i, w := range want.Fabric.Nodes {
		g := got.Fabric.Nodes[i]
		if g.Path != w.Path || g.Info != w.Info {
			return fmt.Sprintf("node %d (%s): path %s NodeInfo %+v, want %s %+v", i, w.Description(), g.Path, g.Info, w.Path, w.Info)
		}
		for num := 0; num <= w.NumPorts(); num++ {
			gp, wp := g.Port(num), w.Port(num)
			if (gp == nil) != (wp == nil) || (wp != nil && (gp.HasInfo != wp.HasInfo || gp.Info != wp.Info)) {
				return fmt.Sprintf("%s port %d: PortInfo differs", w.Description(), num)
			}
		}
	}
	return ""
}

// TestRediscoverEqualsDiscover: after each change, a light sweep over the
// fabric discovered before and Rediscover build the fabric a full
// discovery builds (its JSON, byte for byte), sending to the fabric only
// the changed nodes' reads and what is behind the changed links (the
// rest is answered from the Memo). Where the result cannot be trusted
// (no Memo, the local port's link changed) it says ErrUntrusted.
func TestRediscoverEqualsDiscover(t *testing.T) {
	f, err := sim.Generate("fattree:levels=2,radix=8", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM("H0"); err != nil {
		t.Fatal(err)
	}
	raw, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tr := getsOnly{raw, t}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	memo := &discover.Memo{}
	cfg := discover.Config{Timeout: 100 * time.Millisecond, Retries: 1, Outstanding: 16, Memo: memo}
	cur, err := discover.Discover(ctx, tr, cfg)
	if err != nil || cur.Partial() {
		t.Fatalf("discover: %v %v", err, cur.Errors)
	}
	if memo.Fabric() != cur.Fabric {
		t.Fatal("the Memo does not hold the discovery's fabric")
	}
	q := &discover.Querier{Transport: tr, Timeout: 100 * time.Millisecond, Retries: 1}

	for _, c := range []struct {
		name, cmd string
		sm        bool
		nodes     int // nodes found after
	}{
		{"link down", `Unlink "H12"[1]`, false, 43},
		{"link up", `ReLink "H12"[1]`, false, 44},
		{"link up, SM ran", "", true, 44},
		{"subtree cut off", `Unlink "L3"[5];Unlink "L3"[6];Unlink "L3"[7];Unlink "L3"[8]`, false, 39},
		{"subtree back", `ReLink "L3"[5];ReLink "L3"[6];ReLink "L3"[7];ReLink "L3"[8]`, false, 44},
		{"subtree back, SM ran", "", true, 44},
		{"LID moved", `Baselid "H20"[1] 300`, false, 44},
	} {
		for _, cmd := range strings.Split(c.cmd, ";") {
			if cmd == "" {
				continue
			}
			if err := f.Exec(cmd); err != nil {
				t.Fatal(err)
			}
		}
		if c.sm {
			if err := f.RunSM("H0"); err != nil {
				t.Fatal(err)
			}
		}
		lr, err := discover.LightSweep(ctx, q, cur.Fabric, nil, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !lr.Changed {
			if c.name == "LID moved" {
				// no bit, no probe: a change a light sweep cannot see
				continue
			}
			t.Fatalf("%s: the light sweep saw no change", c.name)
		}
		res, rd, err := discover.Rediscover(ctx, tr, cfg, lr)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := discover.Discover(ctx, tr, discover.Config{Timeout: 100 * time.Millisecond, Retries: 1, Outstanding: 16})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := renderFabric(t, res), renderFabric(t, want); a != b {
			t.Errorf("%s: the rediscovered fabric differs from a full discovery's", c.name)
		}
		if diff := sameAnswers(res, want); diff != "" {
			t.Errorf("%s: %s", c.name, diff)
		}
		if n := len(res.Fabric.Nodes); n != c.nodes {
			t.Errorf("%s: %d nodes, want %d", c.name, n, c.nodes)
		}
		// Sent: the reads of the nodes changed or new, at most a NodeInfo,
		// NodeDescription and SwitchInfo, and a PortInfo and an
		// ExtendedPortInfo a port, each.
		var bound int64
		for _, n := range res.Fabric.Nodes {
			if old := cur.Fabric.NodeByGUID(n.GUID()); old == nil || lr.ChangedNode(old) {
				bound += 3 + 2*int64(n.NumPorts()+1)
			}
		}
		if rd.Sent > bound || rd.Served+rd.Sent != res.SMPs {
			t.Errorf("%s: %d SMPs sent, %d served of %d: want at most %d sent (a full discovery sends %d)", c.name, rd.Sent, rd.Served, res.SMPs, bound, want.SMPs)
		}
		t.Logf("%s: %d dirty, %d cut; %d sent, %d served (full discovery %d)", c.name, lr.Dirty, lr.Cut, rd.Sent, rd.Served, want.SMPs)
		cur = res
	}

	// Untrusted: a Memo of another fabric, none at all.
	lr, err := discover.LightSweep(ctx, q, cur.Fabric, nil, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := discover.Rediscover(ctx, tr, discover.Config{Memo: &discover.Memo{}}, lr); !errors.Is(err, discover.ErrUntrusted) {
		t.Errorf("empty Memo: %v, want ErrUntrusted", err)
	}
	if _, _, err := discover.Rediscover(ctx, tr, discover.Config{}, lr); !errors.Is(err, discover.ErrUntrusted) {
		t.Errorf("no Memo: %v, want ErrUntrusted", err)
	}
}
