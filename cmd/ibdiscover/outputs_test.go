package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// outputFabrics are the fabrics the ibnetdiscover outputs are compared on.
func outputFabrics() []compatFabric {
	ex := ibsimtest.ExampleNet + "/"
	return []compatFabric{
		{file: ex + "net", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca2port", hosts: []string{""}, osmHost: "Hca1"},
		{file: "testdata/group.net", hosts: []string{"", "host3"}, osmHost: "host1"},
		{file: "../../testdata/fabrics/mixed.net", hosts: []string{""}, osmHost: "hostA mlx5_0"},
		{file: "../../testdata/fabrics/router.net", hosts: []string{""}, osmHost: "h1"},
	}
}

var warningLine = regexp.MustCompile(`(?m)^WARNING .*\n`)

// warnings is b's warningLine lines.
func warnings(b []byte) string {
	lines, _ := cutLines(string(b), "WARNING ", nil)
	return lines
}

// TestCompatOutputs compares the lists, the ports report, grouping, the
// node-name map (good and rejected) and the output precedence with
// ibnetdiscover 44 (-o 1 for its node order), byte for byte.
func TestCompatOutputs(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	names := abs(t, "testdata/names.map")
	cases := [][]string{
		{"-l"}, {"-H"}, {"-S"}, {"-R"}, {"-p"}, {"-g"},
		{"-l", "-H"}, {"-H", "-l"}, {"-S", "-R"}, {"-p", "-l"}, {"-lS"}, {"-Sl"}, {"-g", "-S"},
		{"--node-name-map", names}, {"--node-name-map", names, "-l"}, {"--node-name-map", names, "-p"},
		{"--node-name-map", names, "-g", "-f"},
	}
	for _, fab := range outputFabrics() {
		fab := fab
		t.Run(filepath.Base(fab.file), func(t *testing.T) {
			t.Parallel() // each fabric has its own ibsim
			if _, err := os.Stat(fab.file); err != nil {
				clitest.Skip(t, "fabric file missing: %v", err)
			}
			sim := ibsimtest.Start(t, abs(t, fab.file))
			sim.RunOpenSM(t, fab.osmHost, t.TempDir())
			for _, host := range fab.hosts {
				for _, args := range cases {
					ours, oerr, code := runOurs(t, append(ibsimArgs(sim, host), args...)...)
					if code != 0 {
						t.Fatalf("host %q %v: ibdiscover exit %d: %s", host, args, code, oerr)
					}
					theirs, terr, tcode := sim.RunTool(t, host, "ibnetdiscover", append([]string{"-o", "1"}, args...)...)
					if tcode != 0 {
						t.Fatalf("host %q %v: ibnetdiscover exit %d: %s", host, args, tcode, terr)
					}
					if o, th := stripDate(ours), stripDate(theirs); o != th {
						t.Errorf("host %q %v: differs from ibnetdiscover:\n%s", host, args, golden.LineDiff(th, o))
					}
					if o, th := warnings(oerr), warnings(terr); o != th {
						t.Errorf("host %q %v: warnings %q, ibnetdiscover %q", host, args, o, th)
					}
				}
			}
		})
	}
}

func ibsimArgs(sim *ibsimtest.Sim, host string) []string {
	a := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
	if host != "" {
		a = append(a, "--sim-host", host)
	}
	return a
}

// cacheSet runs both tools with --cache on one fabric state.
type cacheSet struct{ ours, theirs string }

func makeCaches(t *testing.T, sim *ibsimtest.Sim, dir, tag string) cacheSet {
	t.Helper()
	cs := cacheSet{filepath.Join(dir, tag+".ours.cache"), filepath.Join(dir, tag+".theirs.cache")}
	if _, e, code := runOurs(t, append(ibsimArgs(sim, ""), "--cache", cs.ours)...); code != 0 {
		t.Fatalf("ibdiscover --cache: exit %d: %s", code, e)
	}
	if _, e, code := sim.RunTool(t, "", "ibnetdiscover", "-o", "1", "--cache", cs.theirs); code != 0 {
		t.Fatalf("ibnetdiscover --cache: exit %d: %s", code, e)
	}
	return cs
}

// TestCompatCache checks the cache both ways with ibnetdiscover 44: the
// files are byte-identical, each tool loads the other's file and prints
// the same topology, ports report and lists, and --diff between fabric
// states prints what ibnetdiscover prints.
func TestCompatCache(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex // guards caches
	caches := map[string]cacheSet{}
	big := []ibsimtest.Option{ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}
	// The fabrics' caches are made in parallel, each fabric on its own
	// ibsim; the group returns when all are written.
	t.Run("caches", func(t *testing.T) {
		for _, fab := range []struct {
			tag, file, osmHost string
			opts               []ibsimtest.Option
		}{
			{"4hca", ibsimtest.ExampleNet + "/net.2sw2path4hca", "Hca1", nil},
			{"2port", ibsimtest.ExampleNet + "/net.2sw2path4hca2port", "Hca1", nil},
			{"mixed", "../../testdata/fabrics/mixed.net", "hostA mlx5_0", nil},
			{"diffa", "testdata/diff-a.net", "Hca1", nil},
			{"diffb", "testdata/diff-b.net", "Hca1", nil},
			// libibnetdisc reaches SwB through the EDR port 5 after reading
			// the QDR port 3's Mellanox ExtendedPortInfo.
			{"mlnxpar", "../../testdata/fabrics/mlnxpar.net", "host1", nil},
			// 1,312 nodes, radix 36, three levels: the port hash buckets hold
			// many switches' ports, interleaved in PortInfo answer order.
			{"ft1312", generated(t, "fattree:levels=3,radix=36,hosts=12,leaves=8,pods=5"), "", big},
		} {
			t.Run(fab.tag, func(t *testing.T) {
				t.Parallel()
				sim := ibsimtest.Start(t, abs(t, fab.file), fab.opts...)
				cs := makeCaches(t, sim, dir, fab.tag+"-nolid")
				mu.Lock()
				caches[fab.tag+"-nolid"] = cs
				mu.Unlock()
				if fab.osmHost == "" {
					return
				}
				sim.RunOpenSM(t, fab.osmHost, t.TempDir())
				cs = makeCaches(t, sim, dir, fab.tag)
				mu.Lock()
				caches[fab.tag] = cs
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	theirs := func(args ...string) string {
		out, e, code := ibnetdiscoverLoad(t, args...)
		if code != 0 {
			t.Fatalf("ibnetdiscover %v: exit %d: %s", args, code, e)
		}
		return stripDate(out)
	}
	ours := func(args ...string) string {
		out, e, code := runOurs(t, args...)
		if code != 0 {
			t.Fatalf("ibdiscover %v: exit %d: %s", args, code, e)
		}
		return stripDate(out)
	}
	for tag, cs := range caches {
		ob, _ := os.ReadFile(cs.ours)
		tb, _ := os.ReadFile(cs.theirs)
		if !bytes.Equal(ob, tb) {
			t.Errorf("%s: our cache (%d bytes) differs from ibnetdiscover's (%d bytes)", tag, len(ob), len(tb))
		}
		for _, extra := range [][]string{{"-m"}, {"-p"}, {"-l"}, {"-g"}} {
			want := theirs(append([]string{"--load-cache", cs.theirs}, extra...)...)
			if got := ours(append([]string{"--load-cache", cs.theirs}, extra...)...); got != want {
				t.Errorf("%s %v: ibdiscover --load-cache <ibnetdiscover cache> differs:\n%s", tag, extra, golden.LineDiff(want, got))
			}
			if got := theirs(append([]string{"--load-cache", cs.ours}, extra...)...); got != want {
				t.Errorf("%s %v: ibnetdiscover --load-cache <our cache> differs:\n%s", tag, extra, golden.LineDiff(want, got))
			}
		}
	}
	// --diff: old = the --diff file, new = the loaded fabric.
	pairs := [][2]string{
		{"diffa", "diffb"}, {"diffb", "diffa"}, {"4hca-nolid", "4hca"}, {"4hca", "2port"},
		{"2port", "4hca"}, {"mixed", "4hca"}, {"4hca", "4hca"},
	}
	keys := []string{"", "sw,ca,router,port,lid,nodedesc", "lid", "nodedesc", "sw,port", "CA,Port,NodeDesc", "router"}
	nonEmpty := 0
	defer func() {
		if nonEmpty < 10 {
			t.Errorf("only %d diffs printed anything", nonEmpty)
		}
	}()
	for _, p := range pairs {
		for _, k := range keys {
			args := []string{"--load-cache", caches[p[1]].theirs, "--diff", caches[p[0]].theirs}
			if k != "" {
				args = append(args, "--diffcheck", k)
			}
			out, e, code := ibnetdiscoverLoad(t, args...)
			got := ours(args...)
			if code != 0 {
				// ibnetdiscover dereferences the missing neighbour of an
				// unlinked port whose LID changed and dies; ours leaves
				// such lines out (see topology.WriteDiff).
				t.Logf("diff %s -> %s keys %q: ibnetdiscover exit %d (%.80s), not compared", p[0], p[1], k, code, e)
				continue
			}
			if len(out) > 0 {
				nonEmpty++
			}
			if want := stripDate(out); got != want {
				t.Errorf("diff %s -> %s keys %q differs from ibnetdiscover:\n%s", p[0], p[1], k, golden.LineDiff(want, got))
			}
		}
	}
	// --diff against a live fabric, and --cache written after the output.
	live := ibsimtest.Start(t, abs(t, "testdata/diff-b.net"))
	out := filepath.Join(dir, "live.cache")
	got, e, code := runOurs(t, append(ibsimArgs(live, ""), "--diff", caches["diffa-nolid"].theirs, "--cache", out)...)
	if code != 0 {
		t.Fatalf("live diff: exit %d: %s", code, e)
	}
	want, _, _ := live.RunTool(t, "", "ibnetdiscover", "-o", "1", "--diff", caches["diffa-nolid"].theirs)
	if string(got) != string(want) {
		t.Errorf("live --diff differs:\n%s", golden.LineDiff(string(want), string(got)))
	}
	if b, _ := os.ReadFile(out); len(b) == 0 {
		t.Errorf("--cache with --diff wrote nothing")
	}
}

// Broken caches give one error line naming the file and exit status 2.
func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../pkg/ibndcache/testdata/2sw2path4hca.osm.cache")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"empty":     {},
		"text":      []byte("#\n# Topology file\n"),
		"truncated": good[:1000],
		"version":   append(append([]byte{}, good[:4]...), append([]byte{9, 0, 0, 0}, good[8:]...)...),
		"magic1":    good[:1],
		"magic3":    good[:3],
		"/dev/zero": nil,
		"dir":       nil,
	}
	want := map[string]string{
		"empty": "empty file", "text": "bad magic", "truncated": "truncated", "version": "unsupported cache version",
		"magic1": "truncated", "magic3": "truncated", "/dev/zero": "bad magic", "dir": "is a directory",
	}
	for name, b := range files {
		p := filepath.Join(dir, name+".cache")
		switch name {
		case "/dev/zero":
			p = name
		case "dir":
			p = t.TempDir()
		default:
			os.WriteFile(p, b, 0o644)
		}
		for _, flag := range []string{"--load-cache", "--diff"} {
			args := []string{flag, p}
			if flag == "--diff" {
				args = append(args, "--load-cache", "../../pkg/ibndcache/testdata/2sw2path4hca.osm.cache")
			}
			out, e, code := runOurs(t, args...)
			if code != 2 || len(out) != 0 {
				t.Errorf("%s %s: exit %d, stdout %q", flag, name, code, out)
			}
			lines := strings.Split(strings.TrimSuffix(string(e), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], p) || !strings.Contains(lines[0], want[name]) {
				t.Errorf("%s %s: stderr %q, want one line naming %s and %q", flag, name, e, p, want[name])
			}
		}
	}
	_, e, code := runOurs(t, "--load-cache", filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(string(e), "missing") {
		t.Errorf("missing file: exit %d %q", code, e)
	}
}

// Outputs of ours that need no ibnetdiscover: -p writes the report to
// stdout and leaves the topology file empty; --json and --dot exclude
// the other outputs; a bad --diffcheck key is a usage error.
func TestOutputRules(t *testing.T) {
	cache := "../../pkg/ibndcache/testdata/2sw2path4hca.osm.cache"
	topo := filepath.Join(t.TempDir(), "topo.txt")
	out, e, code := runOurs(t, "--load-cache", cache, "-p", topo)
	if code != 0 || !bytes.HasPrefix(out, []byte("CA     6  1 0x000000000010000a 4x SDR - SW     3  2")) {
		t.Fatalf("-p: exit %d %q %s", code, out, e)
	}
	if b, err := os.ReadFile(topo); err != nil || len(b) != 0 {
		t.Errorf("-p topology file: %q %v", b, err)
	}
	for _, args := range [][]string{{"--json", "--dot"}, {"--json", "-l"}, {"--dot", "-p"}, {"--diffcheck", "sw,bogus"}} {
		_, e, code := runOurs(t, append([]string{"--load-cache", cache}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d %s", args, code, e)
		}
	}
	out, _, code = runOurs(t, "--load-cache", cache, "--json")
	if code != 0 || !bytes.Contains(out, []byte(`"schema": "ibdiag.fabric/v1"`)) || bytes.Contains(out, []byte("\x1b[")) {
		t.Errorf("--json: exit %d %.200s", code, out)
	}
	out, _, code = runOurs(t, "--load-cache", cache, "--dot")
	if code != 0 || !bytes.HasPrefix(out, []byte(`graph "fabric" {`)) {
		t.Errorf("--dot: exit %d %.200s", code, out)
	}
}
