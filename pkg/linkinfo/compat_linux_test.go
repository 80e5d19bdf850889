//go:build linux

package linkinfo_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/linkinfo"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// compatFiles are the fabrics our tests use: every ibsim net file under
// testdata/fabrics and cmd/*/testdata.
func compatFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../../testdata/fabrics/*.net", "../../cmd/*/testdata/*.net"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			abs, err := filepath.Abs(f) // ibsim runs in another directory
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, abs)
		}
	}
	if len(files) == 0 {
		t.Fatal("no net files found")
	}
	return files
}

// discoverIBSim discovers the fabric of sim attached at the net file's
// first node, as the commands do (fabric.Open, discover.Discover).
func discoverIBSim(t *testing.T, sim *ibsimtest.Sim) *model.Fabric {
	t.Helper()
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{IBSim: true, IBSimSockName: sim.SockName})
	if err != nil {
		t.Fatalf("open ibsim: %v", err)
	}
	defer c.Close()
	res, err := discover.Discover(ctx, c, discover.Config{Timeout: 3e9, FixedTimeout: true})
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	return res.Fabric
}

// variant is one iblinkinfo command line and the Options that mirror it.
type variant struct {
	name string
	args []string
	opts linkinfo.Options
}

// variants are the option sets compared on every fabric and stage.
func variants(t *testing.T, f *model.Fabric, mapFile string, names *nodenamemap.Map) []variant {
	t.Helper()
	vs := []variant{
		{"default", nil, linkinfo.Options{}},
		{"-l", []string{"-l"}, linkinfo.Options{Line: true}},
		{"-p", []string{"-p"}, linkinfo.Options{Additional: true}},
		{"-l-p", []string{"-l", "-p"}, linkinfo.Options{Line: true, Additional: true}},
		{"-d", []string{"-d"}, linkinfo.Options{Down: true}},
		{"--down-l", []string{"--down", "-l"}, linkinfo.Options{Down: true, Line: true}},
		{"--switches-only", []string{"--switches-only"}, linkinfo.Options{Only: linkinfo.SwitchesOnly}},
		{"--cas-only", []string{"--cas-only"}, linkinfo.Options{Only: linkinfo.CAsOnly}},
		{"--node-name-map", []string{"--node-name-map", mapFile}, linkinfo.Options{Names: names}},
		{"--node-name-map-l", []string{"--node-name-map", mapFile, "-l"}, linkinfo.Options{Names: names, Line: true}},
		{"-D0,1", []string{"-D", "0,1"}, linkinfo.Options{ByPath: true, Path: mustPath(t, "0,1")}},
		{"-D0", []string{"-D", "0"}, linkinfo.Options{ByPath: true, Path: mustPath(t, "0")}},
	}
	// -S with a switch's and a CA's port GUID (the last of each found)
	var sw, ca *model.PhysPort
	for _, n := range f.Nodes {
		for _, p := range n.Ports {
			if p == nil || !p.HasInfo {
				continue
			}
			if n.IsSwitch() && p.Num == 0 {
				sw = p
			} else if n.Type() == smp.NodeCA {
				ca = p
			}
		}
	}
	// -D to the last CA reached over two hops or more (libibnetdisc's
	// partial scan from a CA links it to the wrong port of its switch)
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		if n := f.Nodes[i]; !n.IsSwitch() && n.Path.Len() >= 2 {
			vs = append(vs, variant{"-D" + n.Path.String(), []string{"-D", n.Path.String()}, linkinfo.Options{ByPath: true, Path: n.Path}})
			break
		}
	}
	for _, p := range []*model.PhysPort{sw, ca} {
		if p == nil {
			continue
		}
		g := fmt.Sprintf("0x%016x", p.GUID)
		vs = append(vs,
			variant{"-S" + g, []string{"-S", g}, linkinfo.Options{ByGUID: true, GUID: p.GUID}},
			variant{"-S" + g + "-switches-only", []string{"-S", g, "--switches-only"}, linkinfo.Options{ByGUID: true, GUID: p.GUID, Only: linkinfo.SwitchesOnly}},
		)
	}
	return vs
}

func mustPath(t *testing.T, s string) smp.DRPath {
	t.Helper()
	p, err := smp.ParseDRPath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeNameMap writes a node name map naming every other node of nf:
// short names, a name longer than 30 bytes (line mode's column) and one
// that overflows iblinkinfo's 256-byte peer buffer in line mode (the line is cut there).
func writeNameMap(t *testing.T, nf *netfile.Fabric) (string, *nodenamemap.Map) {
	t.Helper()
	var b strings.Builder
	for i, n := range nf.Nodes {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "0x%016x \"mapped-%d\"\n", n.GUID, i)
		case 1:
			fmt.Fprintf(&b, "0x%016x \"a rather long mapped name for node %d of the fabric\"\n", n.GUID, i)
		case 2:
			fmt.Fprintf(&b, "0x%016x \"%s\"\n", n.GUID, strings.Repeat("x", 225))
		}
	}
	p := filepath.Join(t.TempDir(), "names.map")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := nodenamemap.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

// render runs Render and turns ErrPortNotFound into iblinkinfo's stderr
// line (its stdout is then empty).
func render(t *testing.T, f *model.Fabric, o linkinfo.Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := linkinfo.Render(&b, f, o); err != nil {
		if b.Len() != 0 {
			t.Errorf("Render failed (%v) after writing %d bytes", err, b.Len())
		}
		return "error: " + err.Error()
	}
	return b.String()
}

// libibnetdiscCrashes are the net files whose chassis libibnetdisc 44
// cannot group: every iblinkinfo run dies in chassis.c (double free), so
// there is nothing to compare (ibdiscover warns on them, see
// pkg/topology).
var libibnetdiscCrashes = map[string]bool{"chassis-fail.net": true, "chassis-vrouter.net": true}

// crashed reports whether iblinkinfo died of a signal (libibnetdisc's
// chassis grouping frees twice on some chassis fabrics, also in the
// partial scans of -D).
func crashed(code int) bool { return code < 0 }

// answer is one iblinkinfo run: stdout, stderr, exit status.
type answer struct {
	stdout, stderr []byte
	code           int
}

// derive answers variant v from the answer to another variant of the
// same iblinkinfo run (same fabric, stage and extra arguments) when
// iblinkinfo's source says the two differ only in what is printed, not
// in what is scanned (iblinkinfo.c, rdma-core 44, main):
//
//   - "-S G --switches-only" from "-S G": the scan does not depend on
//     --switches-only (it sets only only_flag/only_type, which no scan
//     reads); after it, `if (p && (!only_flag || p->node->type ==
//     only_type)) print_node(n, NULL); else fprintf(stderr, "Failed to
//     find port: %s\n", guid_str);` and the exit status stays 0. So when
//     "-S G" printed a switch's block the answer is the same; when it
//     printed another node's block, stdout is empty and stderr gains that
//     line; when it printed nothing it failed the same way.
//   - "--switches-only" and "--cas-only" from the default run: the scan
//     is the same and the output is `ibnd_iter_nodes_type(fabric,
//     print_node, only_type, NULL)` instead of `ibnd_iter_nodes(fabric,
//     print_node, NULL)`. libibnetdisc builds the type lists and the node
//     list together, prepending each node to both as it creates it
//     (create_node in ibnetdisc.c, _rebuild_nodes in ibnetdisc_cache.c for
//     --load-cache), so a type list is the node list restricted to that
//     type, and the answer is the default output's blocks of that type,
//     in order. A block is a header line ("Switch: ...", "CA: ...",
//     print_node_header; not indented) and its port lines (indented).
//   - "-d" from the default run and "--down -l" from the "-l" run: -d
//     sets only down_links_only, which print_node reads: it prints a
//     port only if its PortState is Down, and the node's header (not in
//     line mode) before the first port it prints. print_port writes a
//     Down port's link as "(              %6s/%8s)" (14 spaces: no width
//     or speed, C14-24.2.1) and any other port's with its width first,
//     so the Down ports' lines are those whose link reads
//     "==(                Down/", and the answer is the base run's lines
//     of Down ports, each block's header kept when it has one.
//   - "-l -p" from the "-l" and "-p" runs: print_port builds a port's
//     link_str the same way with or without line_mode, add_sw_settings
//     appending " (HOQ:%d VL_Stall:%d)" when the port is not Down;
//     line_mode changes only what comes before "==" (the port GUID and
//     node name instead of indentation) and after "==>" (the remote
//     GUID), and prints no headers. Both runs print the same ports in
//     the same order (same scan, same ibnd_iter_nodes walk), so a port's
//     -l -p line is its -l line with its -p line's HOQ part put before
//     "==>".
//
// ok is false when no rule applies (then iblinkinfo is run).
func derive(v variant, answers map[string]answer) (a answer, ok bool) {
	if v.opts.Line && v.opts.Additional && !v.opts.Down && v.opts.Only == linkinfo.AllNodes && !v.opts.ByPath && !v.opts.ByGUID && v.opts.Names == nil {
		l, lok := answers["-l"]
		p, pok := answers["-p"]
		if !lok || !pok || l.code != 0 || p.code != 0 {
			return answer{}, false
		}
		return lineAdditional(l, p)
	}
	if v.opts.Down && v.opts.Only == linkinfo.AllNodes && !v.opts.Additional && !v.opts.ByPath && !v.opts.ByGUID && v.opts.Names == nil {
		name := "default"
		if v.opts.Line {
			name = "-l"
		}
		base, found := answers[name]
		if !found || base.code != 0 {
			return answer{}, false
		}
		return downOnly(base), true
	}
	if v.opts.Only == linkinfo.AllNodes || v.opts.Line || v.opts.Additional || v.opts.Down || v.opts.ByPath || v.opts.Names != nil {
		return answer{}, false
	}
	if v.opts.ByGUID {
		if v.opts.Only != linkinfo.SwitchesOnly {
			return answer{}, false
		}
		g := fmt.Sprintf("0x%016x", v.opts.GUID)
		base, found := answers["-S"+g]
		if !found || base.code != 0 {
			return answer{}, false
		}
		switch {
		case len(base.stdout) == 0 && bytes.Contains(base.stderr, []byte("Failed to find port: "+g)):
			return base, true
		case bytes.HasPrefix(base.stdout, []byte("Switch: ")):
			return base, true
		case len(base.stdout) != 0:
			return answer{stderr: append(bytes.Clone(base.stderr), "Failed to find port: "+g+"\n"...)}, true
		}
		return answer{}, false
	}
	base, found := answers["default"]
	if !found || base.code != 0 {
		return answer{}, false
	}
	header := "Switch: "
	if v.opts.Only == linkinfo.CAsOnly {
		header = "CA: "
	}
	var out []byte
	keep := false
	for _, line := range bytes.SplitAfter(base.stdout, []byte("\n")) {
		if len(line) != 0 && line[0] != ' ' {
			keep = bytes.HasPrefix(line, []byte(header))
		}
		if keep {
			out = append(out, line...)
		}
	}
	return answer{stdout: out, stderr: base.stderr}, true
}

// downLink marks the line of a port whose PortState is Down (print_port).
var downLink = []byte("==(                Down/")

// downOnly is the -d answer derived from base's (see derive): its lines
// of Down ports, with the header (an unindented line) of each node that
// has one.
func downOnly(base answer) answer {
	var out, header []byte
	for _, line := range bytes.SplitAfter(base.stdout, []byte("\n")) {
		switch {
		case len(line) == 0:
		case line[0] != ' ' && !bytes.HasPrefix(line, []byte("0x")): // a header (line mode has none)
			header = line
		case bytes.Contains(line, downLink):
			out = append(append(out, header...), line...)
			header = nil
		}
	}
	return answer{stdout: out, stderr: base.stderr}
}

// lineAdditional is the -l -p answer derived from the -l and -p ones
// (see derive); ok is false when their ports do not pair up.
func lineAdditional(l, p answer) (a answer, ok bool) {
	var hoq [][]byte // per port line of -p, its " (HOQ:...)" part or nothing
	for _, line := range bytes.SplitAfter(p.stdout, []byte("\n")) {
		if len(line) == 0 || line[0] != ' ' {
			continue // a header
		}
		i := bytes.Index(line, []byte("==("))
		j := bytes.Index(line, []byte("==>"))
		if i < 0 || j < i {
			return answer{}, false
		}
		var extra []byte
		if k := bytes.Index(line[i:j], []byte(" (HOQ:")); k >= 0 {
			extra = line[i+k : j]
		}
		hoq = append(hoq, extra)
	}
	var out []byte
	n := 0
	for _, line := range bytes.SplitAfter(l.stdout, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		i := bytes.Index(line, []byte("==("))
		j := bytes.Index(line, []byte("==>"))
		if n == len(hoq) || i < 0 || j < i {
			return answer{}, false
		}
		out = append(append(append(out, line[:j]...), hoq[n]...), line[j:]...)
		n++
	}
	if n != len(hoq) {
		return answer{}, false
	}
	return answer{stdout: out, stderr: l.stderr}, true
}

// checkEvery is how often a derived answer is checked against its own
// iblinkinfo run: the k-th derived answer of a stage is checked when
// (rot+k) % checkEvery == 0, rot being 5*fabric+stage, so on a fabric with
// three stages or more each derived variant is checked in at least one
// stage, and the checks rotate over fabrics, stages and variants.
const checkEvery = 3

// compare runs every variant with iblinkinfo (attached at the net
// file's first node) and with Render on f, the fabric discovered there.
// A variant that derive answers from an earlier run is not run, except
// one in checkEvery (by rot, which the caller varies per fabric and
// stage), where the derived answer must equal iblinkinfo's own.
func compare(t *testing.T, sim *ibsimtest.Sim, file, stage string, rot int, f *model.Fabric, vs []variant, extra ...string) {
	t.Helper()
	answers := map[string]answer{}
	k := 0 // derived answers so far
	for _, v := range vs {
		args := append(append([]string{}, extra...), v.args...)
		var theirs, terr []byte
		var code int
		if d, ok := derive(v, answers); ok {
			theirs, terr, code = d.stdout, d.stderr, d.code
			k++
			if (rot+k-1)%checkEvery == 0 {
				out, errb, c := sim.RunTool(t, "", "iblinkinfo", args...)
				if !bytes.Equal(out, theirs) || c != code || bytes.Contains(errb, []byte("Failed to find port")) != bytes.Contains(terr, []byte("Failed to find port")) {
					t.Errorf("%s %s: the answer derived from an earlier run differs from iblinkinfo %s (exit %d, want %d; stderr %q, derived %q):\n%s",
						stage, v.name, strings.Join(args, " "), c, code, errb, terr, golden.LineDiff(string(out), string(theirs)))
				}
				theirs, terr, code = out, errb, c
			}
		} else {
			theirs, terr, code = sim.RunTool(t, "", "iblinkinfo", args...)
		}
		answers[v.name] = answer{theirs, terr, code}
		if crashed(code) && v.opts.ByPath {
			t.Logf("%s %s: iblinkinfo's partial scan crashed, nothing to compare: %s", stage, v.name, terr)
			continue
		}
		if code != 0 {
			t.Errorf("%s %s: iblinkinfo exit %d: %s", stage, v.name, code, terr)
			continue
		}
		ours := render(t, f, v.opts)
		if strings.HasPrefix(ours, "error: ") {
			if len(theirs) != 0 || !bytes.Contains(terr, []byte("Failed to find port")) {
				t.Errorf("%s %s: ours %s; iblinkinfo printed:\n%s\nstderr: %s", stage, v.name, ours, theirs, terr)
			}
			continue
		}
		if ours != string(theirs) {
			t.Errorf("%s %s: differs from iblinkinfo %s:\n%s", stage, v.name, strings.Join(args, " "), golden.LineDiff(string(theirs), ours))
		}
	}
}

// TestIBLinkInfoRejectsR: iblinkinfo 44 has a case for -R in its source
// but not in its option table, so it rejects -R (the drop-in must too).
func TestIBLinkInfoRejectsR(t *testing.T) {
	ibsimtest.Require(t)
	file, err := filepath.Abs("../../testdata/fabrics/loop.net")
	if err != nil {
		t.Fatal(err)
	}
	sim := ibsimtest.Start(t, file)
	out, errb, code := sim.RunTool(t, "", "iblinkinfo", "-R")
	if code != 2 || len(out) != 0 || !bytes.Contains(errb, []byte("invalid option -- 'R'")) {
		t.Errorf("iblinkinfo -R: exit %d, stdout %q, stderr %q; want exit 2, usage on stderr", code, out, errb)
	}
}

// lastCA is the id of the last CA of nf that is not its first node.
func lastCA(nf *netfile.Fabric) string {
	for i := len(nf.Nodes) - 1; i > 0; i-- {
		if nf.Nodes[i].Type == netfile.CA {
			return nf.Nodes[i].ID
		}
	}
	return ""
}

// TestCompatIBLinkInfo compares Render with iblinkinfo under the
// umad2sim shim on the same ibsim, for every option, on every net file
// our tests use: before OpenSM (ports Initialize, LIDs 0), after one
// OpenSM sweep (Active), with a CA unplugged (its switch port
// Down/Polling, the CA gone) and plugged back (Initialize among Active
// ports), and on a cache written by ibnetdiscover (--load-cache).
func TestCompatIBLinkInfo(t *testing.T) {
	ibsimtest.Require(t)
	for i, file := range compatFiles(t) {
		file, rot := file, 5*i
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(file)))+"/"+filepath.Base(file), func(t *testing.T) {
			t.Parallel() // each fabric has its own ibsim
			nf, err := netfile.ParseFile(file)
			if err != nil {
				clitest.Skip(t, "net file: %v", err)
			}
			sim := ibsimtest.Start(t, file, ibsimtest.WithConsole(), ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536))
			mapFile, names := writeNameMap(t, nf)
			if libibnetdiscCrashes[filepath.Base(file)] {
				if _, terr, code := sim.RunTool(t, "", "iblinkinfo"); !crashed(code) {
					t.Errorf("iblinkinfo no longer crashes here (exit %d): compare it: %s", code, terr)
				}
				return
			}

			f := discoverIBSim(t, sim)
			compare(t, sim, file, "before OpenSM", rot, f, variants(t, f, mapFile, names))

			var osmHost string
			for _, n := range nf.Nodes {
				if n.Type == netfile.CA {
					osmHost = n.ID
					break
				}
			}
			if osmHost == "" {
				return
			}
			sim.RunOpenSM(t, osmHost, t.TempDir())
			f = discoverIBSim(t, sim)
			compare(t, sim, file, "after OpenSM", rot+1, f, variants(t, f, mapFile, names))

			// --load-cache: a cache written by ibnetdiscover, loaded by both
			cache := filepath.Join(t.TempDir(), "fabric.cache")
			if _, terr, code := sim.RunTool(t, "", "ibnetdiscover", "--cache", cache); code != 0 {
				t.Fatalf("ibnetdiscover --cache: exit %d: %s", code, terr)
			}
			cf, err := ibndcache.Load(cache)
			if err != nil {
				t.Fatalf("load cache: %v", err)
			}
			var cvs []variant
			for _, v := range variants(t, cf, mapFile, names) {
				if !v.opts.ByPath { // iblinkinfo refuses a cache with -D
					cvs = append(cvs, v)
				}
			}
			compare(t, sim, file, "--load-cache", rot+2, cf, cvs, "--load-cache", cache)

			ca := lastCA(nf)
			if ca == "" || ca == osmHost {
				return
			}
			sim.Console(t, fmt.Sprintf("Unlink %q", ca))
			f = discoverIBSim(t, sim)
			compare(t, sim, file, "unlinked "+ca, rot+3, f, variants(t, f, mapFile, names))
			sim.Console(t, fmt.Sprintf("ReLink %q", ca))
			f = discoverIBSim(t, sim)
			compare(t, sim, file, "relinked "+ca, rot+4, f, variants(t, f, mapFile, names))
		})
	}
}
