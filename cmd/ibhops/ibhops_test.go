package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

const fabrics = "../../testdata/fabrics/"

// runOurs runs ibhops in-process and returns stdout, stderr and the status.
func runOurs(t testing.TB, args ...string) ([]byte, []byte, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &out, &errb, append([]string{"ibhops"}, clitest.WithPeerTimeout(args)...))
	return out.Bytes(), errb.Bytes(), code
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got)
}

// TestGolden runs every form, text and JSON, on testdata fabrics in the
// embedded simulator (routed by its SM) and compares with golden files.
// The text forms were checked by hand against the tools they imitate; the
// ibsim comparisons in compat_test.go check them against the real ones.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"dump-fattree2", []string{"--sim", fabrics + "fattree2.net"}, 0},
		{"dump-loop", []string{"--sim", fabrics + "loop.net"}, 0},
		{"dump-router", []string{"--sim", fabrics + "router.net"}, 0},
		{"query-fattree2", []string{"--sim", fabrics + "fattree2.net", "H0", "H7"}, 0},
		{"query-lid", []string{"--sim", fabrics + "loop.net", "4", "sw3"}, 0},
		{"switch-fattree2", []string{"--sim", fabrics + "fattree2.net", "--switch", "S0"}, 0},
		{"trace-ca-ca", []string{"--sim", fabrics + "fattree2.net", "--trace", "H0", "H7"}, 0},
		{"trace-sw-ca", []string{"--sim", fabrics + "loop.net", "--trace", "sw2", "h3"}, 0},
		{"trace-ca-sw", []string{"--sim", fabrics + "chain10.net", "--trace", "hA", "c9"}, 0},
		{"lft-fattree2", []string{"--sim", fabrics + "fattree2.net", "--lft", "S0"}, 0},
		{"mft-demo", []string{"--sim", fabrics + "demo.net", "--mft", "spine01"}, 0},
		{"check-fattree2", []string{"--sim", fabrics + "fattree2.net", "--check-routes"}, 0},
	}
	for _, c := range cases {
		for _, js := range []bool{false, true} {
			name := c.name + ".txt"
			args := c.args
			if js {
				name = c.name + ".json"
				args = append([]string{"--json"}, args...)
			}
			t.Run(name, func(t *testing.T) {
				out, stderr, code := runOurs(t, args...)
				if code != c.code {
					t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
				}
				if len(stderr) != 0 {
					t.Errorf("stderr: %s", stderr)
				}
				if js && !json.Valid(out) {
					t.Errorf("invalid JSON:\n%s", out)
				}
				checkGolden(t, name, out)
			})
		}
	}
}

// TestDumpOutputFile: --output writes to a file the same bytes the
// default output prints.
func TestDumpOutputFile(t *testing.T) {
	out, _, code := runOurs(t, "--sim", fabrics+"fattree2.net")
	if code != 0 {
		t.Fatal(code)
	}
	p := filepath.Join(t.TempDir(), "m.dump")
	o2, stderr, code := runOurs(t, "--sim", fabrics+"fattree2.net", "--output", p)
	if code != 0 || len(o2) != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, o2, stderr)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, out) {
		t.Error("--output file differs from stdout")
	}
}

func TestUsage(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"--sim", fabrics + "loop.net", "h1"}, "ibhops: h1: give two ports (SRC DST) or none\n"},
		{[]string{"--sim", fabrics + "loop.net", "--trace", "h1"}, "ibhops: --trace: needs two arguments: SRC DST\n"},
		{[]string{"--sim", fabrics + "loop.net", "--check-routes", "--lft", "sw1"}, "ibhops: --lft and --check-routes: choose one mode\n"},
		{[]string{"--sim", fabrics + "loop.net", "--switch", "h1"}, "ibhops: --switch h1: a CA, not a switch\n"},
		{[]string{"--sim", fabrics + "loop.net", "--switch", "4"}, "ibhops: --switch 4: \"h1\" is a CA, not a switch\n"},
		{[]string{"--sim", fabrics + "loop.net", "--lft", "nosuch"}, "ibhops: --lft \"nosuch\": not a node name or description in the fabric\n"},
		{[]string{"--sim", fabrics + "loop.net", "h1", "99"}, "ibhops: LID 99: not in the fabric\n"},
		{[]string{"--sim", fabrics + "loop.net", "--check-routes", "x"}, "ibhops: x: no arguments with --check-routes\n"},
		{[]string{"--sim", fabrics + "loop.net", "--limit", "-1", "--check-routes"}, "ibhops: --limit -1: must be 0 or more\n"},
		{[]string{"--sim", "/nonexistent.net"}, ""},
	}
	for _, c := range cases {
		out, stderr, code := runOurs(t, c.args...)
		if code != exitcode.Usage {
			t.Errorf("%q: exit %d, want 2 (stderr %s)", c.args, code, stderr)
		}
		if len(out) != 0 {
			t.Errorf("%q: stdout %q", c.args, out)
		}
		if c.msg != "" && string(stderr) != c.msg {
			t.Errorf("%q: stderr %q, want %q", c.args, stderr, c.msg)
		}
		if bytes.Count(stderr, []byte("\n")) != 1 {
			t.Errorf("%q: stderr is not one line: %q", c.args, stderr)
		}
	}
}

// TestNoSM: without LIDs there is nothing to dump; ibhops says why.
func TestNoSM(t *testing.T) {
	out, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--sim-sm=false")
	if code != 0 || len(out) != 0 || !strings.Contains(string(stderr), "no switch has a LID") {
		t.Errorf("exit %d stdout %q stderr %q", code, out, stderr)
	}
}

// brokenSim is loop.net routed by the embedded SM, with LFT entries then
// changed by SMP Sets sent by the test (the tool itself only reads).
type brokenSim struct {
	sf *sim.Fabric
	tr transport.Transport
	f  *model.Fabric
}

func newBrokenSim(t *testing.T, file string) *brokenSim {
	t.Helper()
	sf, err := sim.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := sf.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Timeout: time.Second})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v %v", err, res.Errors)
	}
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		tr, err := sf.Attach(s.SimHost)
		if err != nil {
			return nil, err
		}
		return &attach.Fabric{Transport: tr, Desc: "test simulator", Sim: sf}, nil
	}
	t.Cleanup(func() { openFabric = old })
	return &brokenSim{sf: sf, tr: tr, f: res.Fabric}
}

func (b *brokenSim) lid(t *testing.T, name string) uint16 {
	t.Helper()
	p, err := b.f.ResolvePort(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.BaseLID()
}

// smpExchange sends one DR SMP (Get or Set of an LFT block) and returns
// the response data.
func (b *brokenSim) smpExchange(t *testing.T, path smp.DRPath, method uint8, blk uint32, data []byte) []byte {
	t.Helper()
	m := smp.NewGet(path, smp.AttrLinearForwardingTable, blk)
	m.Method = method
	copy(m.Data[:], data)
	req, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, smp.MADSize)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.tr.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != 0 {
		t.Fatalf("SMP status %#x", r.StatusCode())
	}
	return r.Data[:]
}

// setLFT sets switch sw's LFT entry for lid with an SMP Set of its block.
func (b *brokenSim) setLFT(t *testing.T, sw string, lid uint16, port uint8) {
	t.Helper()
	p, err := b.f.ResolvePort(sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := p.Node.Path
	blk := uint32(lid / 64)
	data := append([]byte(nil), b.smpExchange(t, path, smp.MethodGet, blk, nil)...)
	data[lid%64] = port
	got := b.smpExchange(t, path, smp.MethodSet, blk, data)
	if got[lid%64] != port {
		t.Fatalf("LFT Set did not take: %d", got[lid%64])
	}
}

// TestCheckRoutesFindsLoopAndBlackHole programs a loop and a black hole
// into the simulator's LFTs; --check-routes reports both and exits 4.
func TestCheckRoutesFindsLoopAndBlackHole(t *testing.T) {
	b := newBrokenSim(t, fabrics+"loop.net")
	out, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--check-routes")
	if code != 0 {
		t.Fatalf("before: exit %d\n%s%s", code, out, stderr)
	}
	h1, h3 := b.lid(t, "h1"), b.lid(t, "h3")
	b.setLFT(t, "sw1", h3, 2) // sw1 -> sw2
	b.setLFT(t, "sw2", h3, 3) // sw2 -> sw1: a loop for h3
	b.setLFT(t, "sw3", h1, 0xFF)

	out, stderr, code = runOurs(t, "--sim", fabrics+"loop.net", "--check-routes")
	if code != exitcode.Problem {
		t.Fatalf("exit %d, want 4\n%s%s", code, out, stderr)
	}
	checkGolden(t, "check-broken.txt", out)
	for _, want := range []string{
		fmt.Sprintf("black-hole: to ca \"h1\" lid %d: switch \"sw3\" (0x0000000000200002) has no route (entry 255); 1 route ends there", h1),
		fmt.Sprintf("loop: to ca \"h3\" lid %d: switches \"sw1\" -> \"sw2\" -> \"sw1\" forward it in a circle; 2 routes caught", h3),
		"Broken routes: 3 (black holes 1, down ports 0, loops 1, missing tables 0, through a CA 0, links not Active 0)",
		"Result: PROBLEMS FOUND",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = runOurs(t, "--sim", fabrics+"loop.net", "--check-routes", "--json")
	if code != exitcode.Problem {
		t.Fatalf("--json: exit %d", code)
	}
	checkGolden(t, "check-broken.json", out)
	var jc jsonCheck
	if err := json.Unmarshal(out, &jc); err != nil {
		t.Fatal(err)
	}
	if jc.Summary.Clean || jc.Summary.Loops != 1 || jc.Summary.BlackHoles != 1 || jc.Summary.Broken != 3 || len(jc.Findings) != 2 {
		t.Errorf("summary %+v, %d findings", jc.Summary, len(jc.Findings))
	}
	if f := jc.Findings[1]; f.Kind != "loop" || len(f.Cycle) != 2 || f.Cycle[0].Name != "sw1" || f.Cycle[1].Name != "sw2" {
		t.Errorf("loop finding %+v", f)
	}

	// --trace into the black hole: ibtracert stops before the hop into
	// the switch with the bad entry; exit 4.
	out, stderr, code = runOurs(t, "--sim", fabrics+"loop.net", "--trace", "h3", "h1")
	if code != exitcode.Problem {
		t.Fatalf("--trace: exit %d\n%s%s", code, out, stderr)
	}
	want := fmt.Sprintf("From ca {0x0000000000100004} portnum 1 lid %d-%d \"h3\"\n", h3, h3)
	if string(out) != want {
		t.Errorf("--trace stdout:\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(string(stderr), "no route (black hole)") {
		t.Errorf("--trace stderr: %s", stderr)
	}
	// --trace into the loop shows the hops up to the repeated switch.
	out, _, code = runOurs(t, "--sim", fabrics+"loop.net", "--trace", "h1", "h3")
	if code != exitcode.Problem {
		t.Fatalf("--trace loop: exit %d", code)
	}
	checkGolden(t, "trace-loop.txt", out)

	// The tool sent no Set: the tables are as the test left them.
	out, _, _ = runOurs(t, "--sim", fabrics+"loop.net", "--lft", "sw3")
	if !strings.Contains(string(out), "5 valid lids dumped") {
		t.Errorf("sw3 LFT:\n%s", out)
	}
}

// TestGoldenEngines: the routing engines' matrices and the routed one on
// the embedded simulator's routes, with their notes on stderr (the
// ibsim comparisons in engines_test.go check them against OpenSM).
func TestGoldenEngines(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"routed-loop", []string{"--sim", fabrics + "loop.net", "--routed"}},
		{"routed-query", []string{"--sim", fabrics + "chain10.net", "--routed", "hA", "c9"}},
		{"updn-fattree2", []string{"--sim", fabrics + "fattree2.net", "--routing-engine", "updn"}},
		{"dnup-fattree2", []string{"--sim", fabrics + "fattree2.net", "--routing-engine", "dnup"}},
		{"dfsssp-dualhomed", []string{"--sim", fabrics + "dualhomed.net", "--routing-engine", "dfsssp"}},
		{"nue-dualhomed", []string{"--sim", fabrics + "dualhomed.net", "--routing-engine", "nue"}},
		{"torus-dualhomed", []string{"--sim", fabrics + "dualhomed.net", "--routing-engine", "torus-2QoS"}},
	}
	for _, c := range cases {
		for _, js := range []bool{false, true} {
			name := "engine-" + c.name
			args := c.args
			if js {
				name += ".json"
				args = append([]string{"--json"}, args...)
			} else {
				name += ".txt"
			}
			t.Run(name, func(t *testing.T) {
				out, stderr, code := runOurs(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if js && !json.Valid(out) {
					t.Errorf("invalid JSON:\n%s", out)
				}
				checkGolden(t, name, append(out, append([]byte("--- stderr\n"), stderr...)...))
			})
		}
	}
}

// TestHelpOperand: "ibhops help" prints the help, as -h does (and as
// "ibavtrack help" does).
func TestHelpOperand(t *testing.T) {
	stdout, stderr, code := runOurs(t, "help")
	if code != exitcode.OK || len(stderr) != 0 || !strings.Contains(string(stdout), "USAGE:") {
		t.Errorf("ibhops help: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}
