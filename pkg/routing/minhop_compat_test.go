//go:build linux

package routing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// minhopFabric is a fabric OpenSM's minhop is compared on: a net file
// (or a generator spec written out), the CA OpenSM runs on, its options.
type minhopFabric struct {
	name, file, host string
	smArgs           []string
	ibsimArgs        []string
	// noDirect says why the embedded SM's LIDs cannot equal OpenSM's.
	noDirect string
}

// minhopFabrics: the test fabrics of the repository, ibsim's example,
// generated fat trees, random irregular graphs (parallel links, chassis
// sharing a system GUID, GUIDs out of order; with LMC 2 their routes
// reach OpenSM's least-forwarded-to tie-break), a chassis fabric and a
// fabric with one slow link, with LMC 0, 1 and 2.
func minhopFabrics(t *testing.T) []minhopFabric {
	t.Helper()
	var out []minhopFabric
	for _, name := range []string{"fattree2", "fattree3", "chain10", "loop", "mixed", "parallel",
		"dualhomed", "router", "torus", "mlnxpar", "demo", "ext", "lmc"} {
		file, err := filepath.Abs(fabrics + name + ".net")
		if err != nil {
			t.Fatal(err)
		}
		fab := minhopFabric{name: name, file: file}
		if name == "router" {
			fab.noDirect = "OpenSM gives the router's port no LID and does not cross it; the embedded SM does both"
		}
		out = append(out, fab)
	}
	lmc, _ := filepath.Abs(fabrics + "lmc.net")
	// switch A's enhanced port 0 gets the LMC too
	esp0, _ := filepath.Abs("../../cmd/ibhops/testdata/lmc_esp0.conf")
	out = append(out,
		minhopFabric{name: "lmc-l1", file: lmc, smArgs: []string{"-l", "1"}},
		minhopFabric{name: "lmc-l2", file: lmc, smArgs: []string{"-l", "2"}},
		minhopFabric{name: "lmc-l2-esp0", file: lmc, smArgs: []string{"-l", "2", "-F", esp0}},
		minhopFabric{name: "example", file: ibsimtest.ExampleNet + "/net", host: "Hca1"})
	dir := t.TempDir()
	for _, spec := range []string{"fattree:levels=2,radix=12", "fattree:levels=2,radix=8,links=2",
		"fattree:levels=3,radix=8", "fattree:levels=3,radix=6,links=2,hosts=2"} {
		nf, err := netfile.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, strings.NewReplacer(":", "-", ",", "-", "=", "").Replace(spec)+".net")
		w, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nf.WriteTo(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
		nodes, sws, ports := nf.Counts()
		out = append(out, minhopFabric{name: spec, file: file, ibsimArgs: []string{
			"-N", strconv.Itoa(nodes), "-S", strconv.Itoa(max(sws, 1)), "-P", strconv.Itoa(ports)}})
	}
	for seed := uint64(1); seed <= 6; seed++ {
		file := filepath.Join(dir, fmt.Sprintf("random%d.net", seed))
		if err := os.WriteFile(file, []byte(randomNet(seed)), 0o644); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("random%d", seed)
		out = append(out, minhopFabric{name: name, file: file})
		if seed <= 2 {
			out = append(out, minhopFabric{name: name + "-l1", file: file, smArgs: []string{"-l", "1"}})
		}
		out = append(out, minhopFabric{name: name + "-l2", file: file, smArgs: []string{"-l", "2"}})
	}
	file := filepath.Join(dir, "slowlink.net")
	if err := os.WriteFile(file, []byte(slowLinkNet), 0o644); err != nil {
		t.Fatal(err)
	}
	out = append(out, minhopFabric{name: "slowlink", file: file})
	file = filepath.Join(dir, "chassis.net")
	if err := os.WriteFile(file, []byte(chassisNet), 0o644); err != nil {
		t.Fatal(err)
	}
	out = append(out, minhopFabric{name: "chassis", file: file},
		minhopFabric{name: "chassis-l1", file: file, smArgs: []string{"-l", "1"}},
		minhopFabric{name: "chassis-l2", file: file, smArgs: []string{"-l", "2"}})
	for i := range out {
		if out[i].host == "" {
			out[i].host = firstCA(t, out[i].file)
		}
	}
	return out
}

func firstCA(t *testing.T, file string) string {
	t.Helper()
	nf, err := netfile.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nf.Nodes {
		if n.Type == netfile.CA {
			return n.ID
		}
	}
	t.Fatalf("%s: no CA", file)
	return ""
}

// slowLinkNet: two leaves and two spines, every link 4xEDR but one
// leaf-spine link 4xDDR, as the cluster of issue 27 (item 12).
var slowLinkNet = `
switchguid=0x3000000000000100
Switch 8 "leaf1"
[1] "h1"[1] w=2 s=7 e=3
[2] "h2"[1] w=2 s=7 e=3
[3] "h3"[1] w=2 s=7 e=3
[5] "spine1"[1] w=2 s=3
[6] "spine2"[1] w=2 s=7 e=3

switchguid=0x1000000000000200
Switch 8 "leaf2"
[1] "h4"[1] w=2 s=7 e=3
[2] "h5"[1] w=2 s=7 e=3
[3] "h6"[1] w=2 s=7 e=3
[5] "spine1"[2] w=2 s=7 e=3
[6] "spine2"[2] w=2 s=7 e=3

switchguid=0x2000000000000300
Switch 8 "spine1"
[1] "leaf1"[5] w=2 s=3
[2] "leaf2"[5] w=2 s=7 e=3

switchguid=0x0500000000000400
Switch 8 "spine2"
[1] "leaf1"[6] w=2 s=7 e=3
[2] "leaf2"[6] w=2 s=7 e=3
` + slowLinkHosts

// chassisNet: switch x reaches switch d through y1, y2 (blades of one
// chassis: one system image GUID), y3 and a second link to y3, all at
// equal hops, so with LMC > 0 OpenSM spreads a port's LIDs over other
// systems, then other nodes, before reusing one.
var chassisNet = `
switchguid=0x2000000000000001
Switch 8 "x"
[1] "y1"[1]
[2] "y2"[1]
[3] "y3"[1]
[4] "y3"[3]
[5] "hx1"[1]
[6] "hx2"[1]

sysimgguid=0x2000000000000100
switchguid=0x2000000000000011
Switch 8 "y1"
[1] "x"[1]
[2] "d"[1]

sysimgguid=0x2000000000000100
switchguid=0x2000000000000012
Switch 8 "y2"
[1] "x"[2]
[2] "d"[2]

switchguid=0x2000000000000013
Switch 8 "y3"
[1] "x"[3]
[2] "d"[3]
[3] "x"[4]
[4] "d"[4]

switchguid=0x2000000000000020
Switch 8 "d"
[1] "y1"[2]
[2] "y2"[2]
[3] "y3"[2]
[4] "y3"[4]
[5] "hd1"[1]
[6] "hd2"[1]
[7] "hd3"[1]

Hca 1 "hx1"
[1] "x"[5]

Hca 1 "hx2"
[1] "x"[6]

Hca 1 "hd1"
[1] "d"[5]

Hca 1 "hd2"
[1] "d"[6]

Hca 1 "hd3"
[1] "d"[7]
`

var slowLinkHosts = func() string {
	var b strings.Builder
	for i := 1; i <= 6; i++ {
		leaf, port := "leaf1", i
		if i > 3 {
			leaf, port = "leaf2", i-3
		}
		fmt.Fprintf(&b, "\ncaguid=0x%x\nHca 1 \"h%d\"\n[1] %q[%d] w=2 s=7 e=3\n", 0x0a00000000000000+uint64(i)<<8, i, leaf, port)
	}
	return b.String()
}()

// randomNet returns an irregular fabric: 5 to 12 switches of 8 to 16
// ports joined by a random spanning tree and random extra links
// (parallel ones too), each switch with 0 to 3 CAs (some with two
// ports on different switches), random node GUIDs, and some switches
// sharing a system image GUID as the blades of a chassis do.
func randomNet(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	nsw := 5 + rng.IntN(8)
	type sw struct {
		ports int
		links map[int]string // port -> "peer"[port]
		guid  uint64
		sys   uint64
	}
	sws := make([]*sw, nsw)
	for i := range sws {
		sws[i] = &sw{ports: 8 + rng.IntN(9), links: map[int]string{}, guid: rng.Uint64() &^ 0xff}
		sws[i].sys = sws[i].guid
		if i > 0 && rng.IntN(3) == 0 {
			sws[i].sys = sws[i-1].sys
		}
	}
	free := func(s *sw) int {
		var f []int
		for p := 1; p <= s.ports; p++ {
			if _, ok := s.links[p]; !ok {
				f = append(f, p)
			}
		}
		if len(f) == 0 {
			return 0
		}
		return f[rng.IntN(len(f))]
	}
	link := func(a, b int) {
		pa, pb := free(sws[a]), free(sws[b])
		if pa == 0 || pb == 0 || a == b {
			return
		}
		sws[a].links[pa] = fmt.Sprintf("%q[%d]", fmt.Sprintf("s%d", b), pb)
		sws[b].links[pb] = fmt.Sprintf("%q[%d]", fmt.Sprintf("s%d", a), pa)
	}
	for i := 1; i < nsw; i++ {
		link(i, rng.IntN(i))
	}
	for k := rng.IntN(2 * nsw); k > 0; k-- {
		a := rng.IntN(nsw)
		b := rng.IntN(nsw)
		link(a, b)
		if rng.IntN(4) == 0 {
			link(a, b) // parallel
		}
	}
	var cas strings.Builder
	nca := 0
	for i := range sws {
		for k := rng.IntN(4); k > 0; k-- {
			p := free(sws[i])
			if p == 0 {
				break
			}
			nca++
			id := fmt.Sprintf("h%d", nca)
			sws[i].links[p] = fmt.Sprintf("%q[1]", id)
			fmt.Fprintf(&cas, "\ncaguid=0x%x\n", rng.Uint64()&^0xff)
			if j := rng.IntN(nsw); rng.IntN(4) == 0 {
				if q := free(sws[j]); q != 0 {
					sws[j].links[q] = fmt.Sprintf("%q[2]", id)
					fmt.Fprintf(&cas, "Hca 2 %q\n[1] %q[%d]\n[2] %q[%d]\n", id, fmt.Sprintf("s%d", i), p, fmt.Sprintf("s%d", j), q)
					continue
				}
			}
			fmt.Fprintf(&cas, "Hca 1 %q\n[1] %q[%d]\n", id, fmt.Sprintf("s%d", i), p)
		}
	}
	if nca == 0 {
		p := free(sws[0])
		sws[0].links[p] = `"h1"[1]`
		fmt.Fprintf(&cas, "\nHca 1 \"h1\"\n[1] \"s0\"[%d]\n", p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# random irregular fabric, seed %d\n", seed)
	for i, s := range sws {
		fmt.Fprintf(&b, "\nsysimgguid=0x%x\nswitchguid=0x%x\nSwitch %d \"s%d\"\n", s.sys, s.guid, s.ports, i)
		for p := 1; p <= s.ports; p++ {
			if l, ok := s.links[p]; ok {
				fmt.Fprintf(&b, "[%d] %s\n", p, l)
			}
		}
	}
	b.WriteString(cas.String())
	return b.String()
}

// discoverLive discovers the ibsim fabric from host and reads every
// switch's LFT.
func discoverLive(t *testing.T, s *ibsimtest.Sim, host string) (*model.Fabric, *routing.Tables) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName, Host: host, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := discover.Discover(ctx, cl, discover.Config{MaxHops: -1, Outstanding: 16, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial() {
		t.Fatalf("partial discovery: %v %v", res.Errors, res.Err)
	}
	tabs, err := routing.Read(ctx, &discover.Querier{Transport: cl, Timeout: 5 * time.Second}, res.Fabric, 8)
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, tabs
}

// TestCompatMinHopLFTs runs OpenSM once with -R minhop on every fabric of
// minhopFabrics, reads every switch's LFT and compares it byte for byte
// with routing.MinHopTables on the discovered fabric (OpenSM's LIDs).
// Then (LMC 0) it routes the same net file with the embedded SM
// (sim.RunSM, its own LIDs) and checks that every switch sends every
// port's LIDs out of the port OpenSM's LFT sends them: minhop's choice
// depends on the order of the ports, not on their LIDs. Last, with
// sim.Options.OpenSMLIDs and the SM on OpenSM's host, every port's LID
// and every switch's LFT must equal OpenSM's byte for byte.
func TestCompatMinHopLFTs(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	for _, fab := range minhopFabrics(t) {
		t.Run(fab.name, func(t *testing.T) {
			t.Parallel()
			s := ibsimtest.Start(t, fab.file, ibsimtest.Args(fab.ibsimArgs...))
			log := s.RunOpenSM(t, fab.host, t.TempDir(), append([]string{"-R", "minhop"}, fab.smArgs...)...)
			if !strings.Contains(string(log), "minhop tables configured on all switches") {
				t.Fatalf("OpenSM did not route with minhop:\n%s", log)
			}
			f, tabs := discoverLive(t, s, fab.host)
			ours, err := routing.MinHopTables(f)
			if err != nil {
				t.Fatal(err)
			}
			diffs := 0
			for _, sw := range f.Switches() {
				want, got := tabs.Table(sw), ours.Table(sw)
				if len(want) != len(got) {
					t.Errorf("%s: LFT of %d entries, OpenSM's has %d", sw.Description(), len(got), len(want))
					continue
				}
				for lid := range want {
					if want[lid] != got[lid] {
						if diffs < 20 {
							t.Errorf("%s (%#x) LID %d: port %d, OpenSM's %d", sw.Description(), sw.Info.NodeGUID, lid, got[lid], want[lid])
						}
						diffs++
					}
				}
			}
			if diffs > 0 {
				t.Fatalf("%d LFT entries differ from OpenSM's", diffs)
			}
			if len(fab.smArgs) > 0 {
				return // the embedded SM runs with LMC 0
			}
			compareEmbeddedSM(t, fab.file, f, tabs)
			if fab.noDirect != "" {
				t.Logf("LIDs and LFTs not compared with OpenSM's: %s", fab.noDirect)
				return
			}
			compareEmbeddedSMLIDs(t, fab.file, fab.host, f, tabs)
		})
	}
}

// compareEmbeddedSM routes file with sim.RunSM and compares, on every
// switch, the port each CA/router port's LID and each switch's LID
// leaves by with the OpenSM-routed fabric f's tables.
func compareEmbeddedSM(t *testing.T, file string, f *model.Fabric, tabs *routing.Tables) {
	t.Helper()
	simFab, stabs := embeddedRouted(t, file, "", nil)
	// LID of each port GUID, both ways.
	lids := func(f *model.Fabric) map[uint64]uint16 {
		m := map[uint64]uint16{}
		for _, n := range f.Nodes {
			for p, pp := range n.Ports {
				if pp != nil && pp.HasInfo && (p == 0) == (n.Info.NodeType == 2) && pp.Info.LID != 0 {
					m[pp.GUID] = pp.Info.LID
				}
			}
		}
		return m
	}
	osmLIDs, simLIDs := lids(f), lids(simFab)
	for guid := range osmLIDs {
		if _, ok := simLIDs[guid]; !ok {
			t.Errorf("port %#x has a LID under OpenSM, none under the embedded SM", guid)
		}
	}
	checked := 0
	for _, sw := range simFab.Switches() {
		osw := f.NodeByGUID(sw.Info.NodeGUID)
		if osw == nil {
			t.Fatalf("switch %#x not in OpenSM's fabric", sw.Info.NodeGUID)
		}
		for guid, slid := range simLIDs {
			olid, ok := osmLIDs[guid]
			if !ok {
				// A router's port: OpenSM does not cross routers when it
				// discovers the subnet, the embedded SM does.
				t.Logf("port %#x has a LID under the embedded SM only", guid)
				continue
			}
			if got, want := stabs.Port(sw, slid), tabs.Port(osw, olid); got != want {
				t.Errorf("embedded SM: %s sends port %#x's LID %d out of port %d, OpenSM its LID %d out of port %d",
					sw.Description(), guid, slid, got, olid, want)
			}
			checked++
		}
	}
	t.Logf("%d switch×port routes of the embedded SM as OpenSM's", checked)
}

// embeddedRouted routes file with sim.RunSM (SM at host, "" for the
// default, with opt), discovers it and reads its LFTs.
func embeddedRouted(t *testing.T, file, host string, opt *sim.Options) (*model.Fabric, *routing.Tables) {
	t.Helper()
	sf, err := sim.Load(file, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(host); err != nil {
		t.Fatal(err)
	}
	tr, err := sf.Attach(host)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tabs, err := routing.Read(ctx, &discover.Querier{Transport: tr, Timeout: 5 * time.Second}, res.Fabric, 4)
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, tabs
}

// compareEmbeddedSMLIDs routes file with the embedded SM at OpenSM's
// host numbering the ports as OpenSM does (sim.Options.OpenSMLIDs) and
// compares every port's LID and every switch's LFT with the
// OpenSM-routed fabric f's, byte for byte.
func compareEmbeddedSMLIDs(t *testing.T, file, host string, f *model.Fabric, tabs *routing.Tables) {
	t.Helper()
	ef, etabs := embeddedRouted(t, file, host, &sim.Options{OpenSMLIDs: true})
	for _, n := range f.Nodes {
		en := ef.NodeByGUID(n.Info.NodeGUID)
		if en == nil {
			t.Errorf("OpenSM's %s (%#x) not found under the embedded SM", n.Description(), n.Info.NodeGUID)
			continue
		}
		for p, pp := range n.Ports {
			if pp == nil || !pp.HasInfo || p >= len(en.Ports) || en.Ports[p] == nil {
				continue
			}
			if (p == 0) == (n.Info.NodeType == 2) && pp.Info.LID != en.Ports[p].Info.LID {
				t.Errorf("%s port %d: LID %d under the embedded SM, %d under OpenSM", n.Description(), p, en.Ports[p].Info.LID, pp.Info.LID)
			}
		}
		if n.Info.NodeType != 2 {
			continue
		}
		if got, want := etabs.Table(en), tabs.Table(n); string(got) != string(want) {
			t.Errorf("%s: the embedded SM's LFT\n%v\nOpenSM's\n%v", n.Description(), got, want)
		}
	}
}
