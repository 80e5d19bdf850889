package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// compatFabric is a fabric compared with OpenSM and the C tools.
type compatFabric struct {
	file    string
	hosts   []string // where ibhops attaches ("" = the first node)
	osmHost string   // a CA for OpenSM
	code    int      // ibhops's expected exit status
	opts    []ibsimtest.Option
	smArgs  []string // more opensm arguments (-l N)
}

func compatFabrics(t *testing.T) []compatFabric {
	ex := ibsimtest.ExampleNet + "/"
	fabs := []compatFabric{
		{file: ex + "net", hosts: []string{"", "Switch2"}, osmHost: "Hca1"},
		{file: ex + "net.1", hosts: []string{""}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path", hosts: []string{"", "Switch2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca2port", hosts: []string{""}, osmHost: "Hca1"},
	}
	big := []ibsimtest.Option{ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}
	for _, f := range []compatFabric{
		{file: "chain10.net", hosts: []string{"", "c5"}, osmHost: "hA"},
		{file: "dualhomed.net", hosts: []string{""}, osmHost: "dual"},
		{file: "fattree2.net", hosts: []string{"", "S0"}, osmHost: "H0"},
		{file: "faults.net", hosts: []string{""}, osmHost: "h1", code: exitcode.Partial},
		{file: "loop.net", hosts: []string{"", "sw2"}, osmHost: "h1"},
		{file: "mixed.net", hosts: []string{""}, osmHost: "H-0c42a10300000a00"},
		{file: "parallel.net", hosts: []string{""}, osmHost: "h1"},
		{file: "router.net", hosts: []string{""}, osmHost: "h1"},
	} {
		abs, err := filepath.Abs(fabrics + f.file)
		if err != nil {
			t.Fatal(err)
		}
		f.file, f.opts = abs, big
		fabs = append(fabs, f)
	}
	return fabs
}

// ibsimFabric discovers the ibsim fabric as ibhops does.
func ibsimFabric(t *testing.T, sock string) (*model.Fabric, *attach.Fabric) {
	t.Helper()
	fab, err := attach.Open(context.Background(), attach.Settings{IBSim: true, IBSimSock: sock, Timeout: 3 * time.Second, Retries: 3, Outstanding: 8, AllowSet: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fab.Close() })
	res, err := discover.Discover(context.Background(), fab, discover.Config{MaxHops: -1, Timeout: 3 * time.Second, Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, fab
}

// tracePairs picks source and destination LIDs covering CA→CA,
// CA→switch, switch→CA, switch→switch and a port to itself.
func tracePairs(f *model.Fabric) [][2]uint16 {
	var cas, sws []uint16
	for _, p := range logicalPorts(f) {
		if p.Phys.Remote == nil && !p.Node.IsSwitch() {
			continue
		}
		if p.Node.IsSwitch() {
			sws = append(sws, p.BaseLID())
		} else if p.Node.Type() == smp.NodeCA {
			cas = append(cas, p.BaseLID())
		}
	}
	var pairs [][2]uint16
	add := func(a, b []uint16, i, j int) {
		if len(a) > 0 && len(b) > 0 {
			pairs = append(pairs, [2]uint16{a[i%len(a)], b[j%len(b)]})
		}
	}
	add(cas, cas, 0, len(cas)-1)
	add(cas, cas, len(cas)-1, 0)
	add(cas, cas, 1, len(cas)/2)
	add(cas, sws, 0, len(sws)-1)
	add(sws, cas, 0, len(cas)-1)
	add(sws, sws, len(sws)-1, 0)
	add(cas, cas, 0, 0)
	return pairs
}

// TestCompatOpenSM runs OpenSM once on each ibsim fabric and compares:
// ibhops's dump with OpenSM's opensm-lid-matrix.dump, --trace with
// ibtracert, --lft with ibroute; --check-routes is clean on OpenSM's
// routes.
func TestCompatOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	for _, fab := range compatFabrics(t) {
		t.Run(filepath.Base(fab.file), func(t *testing.T) {
			t.Parallel() // each fabric has its own ibsim
			if _, err := os.Stat(fab.file); err != nil {
				clitest.Skip(t, "fabric file missing: %v", err)
			}
			sim := ibsimtest.Start(t, fab.file, fab.opts...)
			dir := t.TempDir()
			sim.RunOpenSM(t, fab.osmHost, dir)
			want, err := os.ReadFile(filepath.Join(dir, "opensm-lid-matrix.dump"))
			if err != nil {
				t.Fatal(err)
			}
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
			// Every run only reads this ibsim after OpenSM's sweep: the
			// runs attached at the same port share one discovery.
			shared := newDiscoveries(t)
			for _, host := range fab.hosts {
				args := base
				if host != "" {
					args = append(args[:len(args):len(args)], "--sim-host", host)
				}
				out, stderr, code := runShared(t, shared, args...)
				if code != fab.code {
					t.Fatalf("host %q: exit %d, want %d: %s", host, code, fab.code, stderr)
				}
				if !bytes.Equal(out, want) {
					t.Errorf("host %q: dump differs from OpenSM's:\n%s", host, golden.LineDiff(string(want), string(out)))
				}
			}
			if fab.code != 0 {
				return // SMPs to part of the fabric are dropped: no routes to compare
			}
			out, stderr, code := runShared(t, shared, append(base, "--check-routes")...)
			if code != 0 {
				t.Errorf("--check-routes on OpenSM's routes: exit %d\n%s%s", code, out, stderr)
			}

			f, _ := ibsimFabric(t, sim.SockName)
			for _, p := range tracePairs(f) {
				a, b := strconv.Itoa(int(p[0])), strconv.Itoa(int(p[1]))
				theirs, terr, tcode := sim.RunTool(t, "", "ibtracert", a, b)
				ours, oerr, ocode := runShared(t, shared, append(base, "--trace", a, b)...)
				if tcode != 0 || ocode != 0 {
					t.Errorf("trace %s %s: ibtracert exit %d (%s), ibhops exit %d (%s)", a, b, tcode, terr, ocode, oerr)
				}
				if !bytes.Equal(ours, theirs) {
					t.Errorf("trace %s %s differs from ibtracert:\n%s", a, b, golden.LineDiff(string(theirs), string(ours)))
				}
			}
			n := 0
			for _, sw := range f.Switches() {
				if n == 3 {
					break
				}
				lid := strconv.Itoa(int(sw.SMALID()))
				theirs, terr, tcode := sim.RunTool(t, "", "ibroute", lid)
				ours, oerr, ocode := runShared(t, shared, append(base, "--lft", lid)...)
				if tcode != 0 || ocode != 0 {
					t.Errorf("lft %s: ibroute exit %d (%s), ibhops exit %d (%s)", lid, tcode, terr, ocode, oerr)
				}
				if !bytes.Equal(ours, theirs) {
					t.Errorf("lft %s differs from ibroute:\n%s", lid, golden.LineDiff(string(theirs), string(ours)))
				}
				n++
			}
		})
	}
}

// TestCompatBlackHole sets one LFT entry of OpenSM's routes to 0xFF with
// an SMP Set (sent by the test) and compares broken traces with
// ibtracert's: the same lines on stdout, both fail; --lft matches ibroute
// and --check-routes reports the black hole.
//
// ibtracert reads the end ports by LID-routed SMPs, so it runs attached at
// c10, whose SMPs to hA and hB (and their answers) do not cross the
// broken entry: c5's for hB's LID, on the chain hA-c1-...-c10-hB.
func TestCompatBlackHole(t *testing.T) {
	ibsimtest.Require(t)
	file, err := filepath.Abs(fabrics + "chain10.net")
	if err != nil {
		t.Fatal(err)
	}
	sim := ibsimtest.Start(t, file)
	sim.RunOpenSM(t, "hA", t.TempDir())
	f, fab := ibsimFabric(t, sim.SockName)
	port := func(name string) *model.Port {
		p, err := f.ResolvePort(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	exchange := func(m smp.MAD) smp.MAD {
		req, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, smp.MADSize)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := fab.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
			t.Fatal(err)
		}
		var r smp.MAD
		if err := r.UnmarshalBinary(resp); err != nil || r.StatusCode() != 0 {
			t.Fatalf("LFT SMP: %v status %#x", err, r.StatusCode())
		}
		return r
	}
	// Get c5's block, change hB's entry, Set it.
	sw, dlid := port("c5").Node, port("hB").BaseLID()
	m := smp.NewGet(sw.Path, smp.AttrLinearForwardingTable, uint32(dlid/64))
	r := exchange(m)
	m.Method = smp.MethodSet
	m.Data = r.Data
	m.Data[dlid%64] = 0xFF
	if r = exchange(m); r.Data[dlid%64] != 0xFF {
		t.Fatal("Set did not take")
	}

	base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
	for _, pair := range [][2]string{{"hA", "hB"}, {"c5", "hB"}, {"c2", "hB"}, {"hB", "hA"}} {
		a, b := strconv.Itoa(int(port(pair[0]).BaseLID())), strconv.Itoa(int(port(pair[1]).BaseLID()))
		theirs, terr, tcode := sim.RunTool(t, "c10", "ibtracert", a, b)
		theirs = dropIBError(theirs)
		if len(theirs) == 0 {
			t.Fatalf("%s -> %s: ibtracert printed nothing: %s", pair[0], pair[1], terr)
		}
		ours, oerr, ocode := runOurs(t, append(base, "--trace", a, b)...)
		wantCode := exitcode.Problem
		if pair[1] == "hA" {
			wantCode = 0
		}
		if (tcode == 0) != (wantCode == 0) || ocode != wantCode {
			t.Errorf("%s -> %s: ibtracert exit %d, ibhops exit %d (%s)", pair[0], pair[1], tcode, ocode, oerr)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s -> %s: trace differs from ibtracert:\n%s", pair[0], pair[1], golden.LineDiff(string(theirs), string(ours)))
		}
	}
	// ibroute leaves the entry out; so do we.
	lid := strconv.Itoa(int(sw.SMALID()))
	theirs, _, _ := sim.RunTool(t, "c10", "ibroute", lid)
	ours, _, _ := runOurs(t, append(base, "--lft", lid)...)
	if !bytes.Equal(ours, theirs) {
		t.Errorf("lft differs from ibroute:\n%s", golden.LineDiff(string(theirs), string(ours)))
	}
	out, _, code := runOurs(t, append(base, "--check-routes")...)
	if code != exitcode.Problem || !bytes.Contains(out, []byte(`black-hole: to ca "hB"`)) {
		t.Errorf("--check-routes: exit %d\n%s", code, out)
	}
}

// dropIBError removes the "iberror" line ibtracert prints on stdout when
// it fails (ibhops prints its error on stderr).
func dropIBError(b []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(l, []byte(": iberror: ")) {
			out = append(out, l...)
		}
	}
	return out
}

// TestCompatPortState: links unplugged and plugged back with ibsim's
// console and no SM, so their ends sit in Initialize (they carry SMPs,
// no data). With hB's link, then a switch-to-switch link (c5-c6), in
// Initialize, ibtracert fails to trace hA to hB (its LID-routed SMPs to
// the end ports do not cross the link: "can't reach to/from ports"), and
// --trace fails as well (exit 4), naming the port by the suite's
// port-state rule; --check-routes reports the routes to hB as
// not-active (it said "clean"). ibtracert prints no route lines there;
// --trace prints the route up to the port.
func TestCompatPortState(t *testing.T) {
	ibsimtest.Require(t)
	file, err := filepath.Abs(fabrics + "chain10.net")
	if err != nil {
		t.Fatal(err)
	}
	sim := ibsimtest.Start(t, file, ibsimtest.WithConsole())
	sim.RunOpenSM(t, "hA", t.TempDir())
	f, _ := ibsimFabric(t, sim.SockName)
	lid := func(name string) string {
		p, err := f.ResolvePort(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(int(p.BaseLID()))
	}
	a, b := lid("hA"), lid("hB")
	base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", "hA"}

	trace := func(what, wantWhy string) {
		t.Helper()
		_, terr, tcode := sim.RunTool(t, "hA", "ibtracert", a, b)
		if tcode == 0 {
			t.Errorf("%s: ibtracert exit 0 (%s)", what, terr)
		}
		_, oerr, ocode := runOurs(t, append(base, "--trace", a, b)...)
		if ocode != exitcode.Problem || !strings.Contains(strings.ToLower(string(oerr)), strings.ToLower(wantWhy)) {
			t.Errorf("%s: --trace exit %d, stderr %q; want %d naming %q", what, ocode, oerr, exitcode.Problem, wantWhy)
		}
	}

	sim.Console(t, `Unlink "hB"[1]`)
	sim.Console(t, `ReLink "hB"[1]`)
	trace("hB's link in Initialize", `port 1 of CA "hB" is Initialize, not Active`)
	out, stderr, code := runOurs(t, append(base, "--check-routes")...)
	if code != exitcode.Problem || !bytes.Contains(out, []byte("not-active: to ")) || !bytes.Contains(out, []byte("links not Active 1)")) {
		t.Errorf("--check-routes with hB's link in Initialize: exit %d\n%s%s", code, out, stderr)
	}

	sim.RunOpenSM(t, "hA", t.TempDir())
	if out, stderr, code := runOurs(t, append(base, "--check-routes")...); code != 0 {
		t.Fatalf("--check-routes after OpenSM activated the ports: exit %d\n%s%s", code, out, stderr)
	}
	sim.Console(t, `Unlink "c5"[2]`)
	sim.Console(t, `ReLink "c5"[2]`)
	trace("c5-c6 in Initialize", `port 2 of switch "c5" is Initialize, not Active`)
}
