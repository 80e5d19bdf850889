//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestOpenSMDecidesMixedCaps: on links whose ends have different MTU and
// VL capabilities (set through ibsimtest.CapsProxy, since ibsim's net
// files cannot), a live OpenSM programs NeighborMTU and OperationalVLs on
// every linked port; ibavtrack links computes the same values for every
// end, and reads back what OpenSM set.
func TestOpenSMDecidesMixedCaps(t *testing.T) {
	ibsimtest.Require(t)
	net, err := filepath.Abs("testdata/capsmix.net")
	if err != nil {
		t.Fatal(err)
	}
	sim := ibsimtest.Start(t, net)
	const (
		sw1 = 0x300000
		sw2 = 0x300100
	)
	caps := map[ibsimtest.PortKey]ibsimtest.Caps{
		{GUID: 0x310000, Port: 1}: {MTUCap: 1, VLCap: 1}, // h1: 256, VL0
		{GUID: sw1, Port: 1}:      {MTUCap: 5, VLCap: 5}, // sw1[1]: 4096, VL0-14
		{GUID: 0x310100, Port: 1}: {MTUCap: 5, VLCap: 2}, // h2: 4096, VL0-1
		{GUID: sw1, Port: 2}:      {MTUCap: 3, VLCap: 4}, // sw1[2]: 1024, VL0-7
		{GUID: sw1, Port: 3}:      {MTUCap: 2, VLCap: 3}, // ISL 1: 512, VL0-3 against 2048, VL0-7
		{GUID: sw1, Port: 4}:      {MTUCap: 5, VLCap: 5}, // ISL 2: 4096 / VL0-14 both
		{GUID: sw2, Port: 4}:      {MTUCap: 5, VLCap: 5},
		{GUID: 0x310200, Port: 1}: {MTUCap: 4, VLCap: 5}, // h3: 2048, VL0-14
		{GUID: sw2, Port: 1}:      {MTUCap: 5, VLCap: 3}, // sw2[1]: 4096, VL0-3
		// h4 and sw2[2]: ibsim's template (2048, VL0-7)
	}
	proxy := sim.StartCapsProxy(t, caps)
	proxy.Sim.RunOpenSM(t, "h1", t.TempDir())
	sets := proxy.Sets()

	for _, maxVLs := range []string{"", "2", "3"} {
		if maxVLs != "" {
			// OpenSM again with its max_op_vls option lower than the
			// default (VL0-14)
			cfg := filepath.Join(t.TempDir(), "opensm.conf")
			if err := os.WriteFile(cfg, []byte("max_op_vls "+maxVLs+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			proxy.Sim.RunOpenSM(t, "h1", t.TempDir(), "-F", cfg)
			sets = proxy.Sets()
		}
		args := []string{"links", "--json", "--ibsim", "--ibsim-sockname", proxy.Sim.SockName, "--sim-host", "h1"}
		if maxVLs != "" {
			args = append(args, "--max-op-vls", maxVLs)
		}
		out, stderr, code := runTool(t, args...)
		if code != 0 && code != 4 {
			t.Fatalf("links: exit %d: %s", code, stderr)
		}
		var doc struct {
			Links []struct{ A, B endJSON }
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Links) != 6 {
			t.Fatalf("%d links, want 6:\n%s", len(doc.Links), out)
		}
		mixed := 0
		for _, l := range doc.Links {
			if l.A.MTUCap != l.B.MTUCap || l.A.VLCap != l.B.VLCap {
				mixed++
			}
			for _, e := range []endJSON{l.A, l.B} {
				guid, _ := strconv.ParseUint(e.NodeGUID, 0, 64)
				set, ok := sets[ibsimtest.PortKey{GUID: guid, Port: uint8(e.Port)}]
				where := fmt.Sprintf("max_op_vls %q: %s[%d]", maxVLs, e.Node, e.Port)
				if !ok {
					t.Errorf("%s: OpenSM set no PortInfo", where)
					continue
				}
				if want := 128 << set.NeighborMTU; e.LinkMTU != want || e.NeighborMTU != want {
					t.Errorf("%s: link MTU %d (NeighborMTU read %d), OpenSM set NeighborMTU %d", where, e.LinkMTU, e.NeighborMTU, want)
				}
				t.Logf("%s: caps %d/%d, OpenSM set NeighborMTU %d OperationalVLs %d", where, e.MTUCap, e.VLCap, set.NeighborMTU, set.OperationalVLs)
				if e.Node == "h1" && (set.NeighborMTU != 1 || set.OperationalVLs != 1) {
					t.Errorf("%s: OpenSM set NeighborMTU %d OperationalVLs %d, want 1 (256) and 1 (VL0): the capabilities did not reach it", where, set.NeighborMTU, set.OperationalVLs)
				}
				if e.LinkOpVLs != set.OperationalVLs || e.OpVLs != set.OperationalVLs {
					t.Errorf("%s: link op VLs %d (read %d), OpenSM set OperationalVLs %d", where, e.LinkOpVLs, e.OpVLs, set.OperationalVLs)
				}
			}
		}
		if mixed < 4 {
			t.Errorf("only %d links with mixed capabilities", mixed)
		}
	}
}
