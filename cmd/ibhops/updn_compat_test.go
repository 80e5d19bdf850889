//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// updnLink is a cable between two switches of a generated updn fabric.
type updnLink struct {
	a, b   string
	pa, pb int
}

// updnFabric is a generated fabric for the updn comparison: switches
// (name, ports, GUID), switch cables, and hosts per switch.
type updnFabric struct {
	name     string
	switches []struct {
		name  string
		ports int
		guid  uint64
	}
	links []updnLink
	hosts map[string]int // switch -> hosts on its highest ports
	// unrouted is the number of routes OpenSM's updn LFTs leave out by
	// the up/down rule (between two roots, which updn joins only with
	// connect_roots): information under --routing-engine updn, never
	// broken routes.
	unrouted int
	// noRoot: updn finds no root and OpenSM falls back to min-hop.
	noRoot bool
}

func (u *updnFabric) sw(name string, ports int, guid uint64) {
	u.switches = append(u.switches, struct {
		name  string
		ports int
		guid  uint64
	}{name, ports, guid})
}

// net writes the fabric as an ibsim net file; the first host of the
// first switch with hosts is returned for OpenSM.
func (u *updnFabric) net() (string, string) {
	peers := map[string]map[int]string{}
	add := func(n string, p int, s string) {
		if peers[n] == nil {
			peers[n] = map[int]string{}
		}
		if _, taken := peers[n][p]; taken {
			panic(fmt.Sprintf("%s port %d cabled twice", n, p))
		}
		peers[n][p] = s
	}
	for _, l := range u.links {
		add(l.a, l.pa, fmt.Sprintf("%q[%d]", l.b, l.pb))
		add(l.b, l.pb, fmt.Sprintf("%q[%d]", l.a, l.pa))
	}
	var b strings.Builder
	var hosts strings.Builder
	first := ""
	guid := uint64(0x0002c90300a00000)
	for _, s := range u.switches {
		for i := 0; i < u.hosts[s.name]; i++ {
			h, p := fmt.Sprintf("h-%s-%d", s.name, i), s.ports-i
			add(s.name, p, fmt.Sprintf("%q[1]", h))
			guid++
			fmt.Fprintf(&hosts, "caguid=%#x\nHca 1 %q\n[1] %q[%d]\n\n", guid, h, s.name, p)
			if first == "" {
				first = h
			}
		}
		fmt.Fprintf(&b, "switchguid=%#x\nSwitch %d %q\n", s.guid, s.ports, s.name)
		for p := 1; p <= s.ports; p++ {
			if r, ok := peers[s.name][p]; ok {
				fmt.Fprintf(&b, "[%d] %s\n", p, r)
			}
		}
		b.WriteString("\n")
	}
	return b.String() + hosts.String(), first
}

// updnFabrics are fabrics where OpenSM's updn depends on what the
// comparison must pin down: equal-rank switch links, whose direction
// updn_get_dir decides by GUID, and roots that only the thresholds of
// updn_find_root_nodes_by_min_hop (one bar of the least-hop histogram
// over the CAs above 90 %, none other above 5 %) find or reject.
func updnFabrics() []*updnFabric {
	return []*updnFabric{
		// C sees 23 of 25 CAs at 1 hop (92 %), 1 at 0 and 1 at 2 hops
		// (4 % each): a root only with thresholds over 90 % and 5 %
		// (not with 95 %, nor with 3 %).
		coreFabric("threshold-root", 1, 23, []int{1}, false),
		// 22 of 25 at 1 hop (88 %), 1 each at 0, 2 and 3 hops: no root
		// (with 85 % C would be one); OpenSM falls back to min-hop.
		coreFabric("under-90", 1, 22, []int{1, 1}, true),
		// 46 of 50 at 1 hop (92 %), 3 at 0 hops (6 %), 1 at 2: no root
		// (with 7 % C would be one); OpenSM falls back to min-hop.
		coreFabric("over-5", 3, 46, []int{1}, true),
		twoRootsRing(),
	}
}

// coreFabric is a core switch C with onCore hosts, eight leaves in
// cabled pairs (equal rank under C, the lower GUID on either side of
// the pairs) holding onLeaves hosts between them, and a chain of
// switches below the last leaf, chain[i] hosts on the switch i+2 hops
// from C.
func coreFabric(name string, onCore, onLeaves int, chain []int, noRoot bool) *updnFabric {
	u := &updnFabric{name: name, hosts: map[string]int{"C": onCore}, noRoot: noRoot}
	u.sw("C", 36, 0x0008f10400000100)
	leafGUIDs := []uint64{0x120, 0x110, 0x130, 0x140, 0x160, 0x150, 0x170, 0x180}
	for i := 1; i <= 8; i++ {
		n := fmt.Sprintf("L%d", i)
		u.sw(n, 16, 0x0008f10400000000|leafGUIDs[i-1])
		u.links = append(u.links, updnLink{"C", n, i, 1})
		u.hosts[n] = onLeaves / 8
		if i <= onLeaves%8 {
			u.hosts[n]++
		}
		if i%2 == 0 {
			u.links = append(u.links, updnLink{fmt.Sprintf("L%d", i-1), n, 2, 2})
		}
	}
	up := "L8"
	for i, h := range chain {
		n := fmt.Sprintf("X%d", i+1)
		u.sw(n, 8, 0x0008f10400000105+uint64(i))
		u.links = append(u.links, updnLink{up, n, 3, 1})
		u.hosts[n] = h
		up = n
	}
	return u
}

// twoRootsRing is two cores (roots) and six leaves cabled to both, the
// leaves in a ring of equal-rank links; a route from one root to the
// other would go down then up, so OpenSM leaves the two without one
// (black holes both ways).
func twoRootsRing() *updnFabric {
	u := &updnFabric{name: "two-roots-ring", hosts: map[string]int{}, unrouted: 2}
	u.sw("C1", 16, 0x0008f10400000201)
	u.sw("C2", 16, 0x0008f10400000202)
	ringGUIDs := []uint64{0x233, 0x211, 0x255, 0x222, 0x266, 0x244}
	for i := 1; i <= 6; i++ {
		n := fmt.Sprintf("R%d", i)
		u.sw(n, 12, 0x0008f10400000000|ringGUIDs[i-1])
		u.links = append(u.links, updnLink{"C1", n, i, 1}, updnLink{"C2", n, i, 2})
		u.links = append(u.links, updnLink{n, fmt.Sprintf("R%d", i%6+1), 3, 4})
		u.hosts[n] = 2
	}
	return u
}

var (
	updnRan   = []byte("updn tables configured on all switches")
	minhopRan = []byte("minhop tables configured on all switches")
)

// TestCompatUpDnGenerated runs OpenSM -R updn on generated fabrics with
// equal-rank switch links and roots found or missed by the thresholds
// alone (missed: OpenSM falls back to min-hop), and compares
// `ibhops --routing-engine updn` with the opensm-lid-matrix.dump it
// wrote, byte for byte; OpenSM's LFTs then have no route longer than
// that matrix and none broken.
func TestCompatUpDnGenerated(t *testing.T) {
	ibsimtest.Require(t)
	for _, u := range updnFabrics() {
		t.Run(u.name, func(t *testing.T) {
			text, host := u.net()
			sim := ibsimtest.Start(t, ibsimtest.WriteNetFile(t, text))
			dir := t.TempDir()
			log := sim.RunOpenSM(t, host, dir, "-R", "updn")
			ran := updnRan
			if u.noRoot {
				ran = minhopRan // updn found no root
			}
			if !bytes.Contains(log, ran) {
				t.Fatalf("OpenSM's log lacks %q:\n%s", ran, log)
			}
			want, err := os.ReadFile(filepath.Join(dir, "opensm-lid-matrix.dump"))
			if err != nil {
				t.Fatal(err)
			}
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--routing-engine", "updn"}
			out, stderr, code := runOurs(t, base...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("updn dump differs from OpenSM's:\n%s", golden.LineDiff(string(want), string(out)))
			}
			out, stderr, _ = runOurs(t, append(base, "--check-routes", "--json")...)
			var doc jsonCheck
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("--check-routes: %v\n%s", err, stderr)
			}
			if doc.Summary.Longer != 0 || doc.Summary.Broken != 0 || doc.Summary.Unrouted != u.unrouted || doc.Summary.LIDs == 0 {
				t.Errorf("--check-routes on OpenSM's updn LFTs: %+v, want no longer or broken route and %d left unrouted by updn", doc.Summary, u.unrouted)
			}
		})
	}
}
