package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

const fabrics = "../../testdata/fabrics/"

// ring5 is a ring of five switches with a host each: min-hop routes make
// a credit loop.
const ring5 = `Switch 3 "r0"
[1] "r1"[2]
[2] "r4"[1]
[3] "h0"[1]
Switch 3 "r1"
[1] "r2"[2]
[2] "r0"[1]
[3] "h1"[1]
Switch 3 "r2"
[1] "r3"[2]
[2] "r1"[1]
[3] "h2"[1]
Switch 3 "r3"
[1] "r4"[2]
[2] "r2"[1]
[3] "h3"[1]
Switch 3 "r4"
[1] "r0"[2]
[2] "r3"[1]
[3] "h4"[1]
Hca 1 "h0"
[1] "r0"[3]
Hca 1 "h1"
[1] "r1"[3]
Hca 1 "h2"
[1] "r2"[3]
Hca 1 "h3"
[1] "r3"[3]
Hca 1 "h4"
[1] "r4"[3]
`

// symbols is two hosts on a switch, 12 symbol errors on the switch's
// port 1.
const symbols = `Switch 4 "sw1"
[1] "h1"[1]
[2] "h2"[1]

Hca 1 "h1"
[1] "sw1"[1]

Hca 1 "h2"
[1] "sw1"[2]

do PerformanceSet "sw1"[1] PortCounters.SymbolErrorCounter=12
`

func init() { defaultThresholdFile = "/nonexistent/error_thresholds" }

func runTool(t *testing.T, args ...string) ([]byte, []byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, &out, &errb, append([]string{"ibcheck"}, clitest.WithPeerTimeout(args)...))
	if ctx.Err() != nil {
		t.Fatalf("ibcheck %v: did not end within 2 minutes", args)
	}
	return out.Bytes(), errb.Bytes(), code
}

// cache writes the fabric of net file spec (its SM run, faults applied)
// as an ibnetdiscover cache and returns its path.
func cache(t *testing.T, spec string, faults ...func(*sim.Fabric) error) string {
	t.Helper()
	sf, err := sim.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		if err := f(sf); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := sf.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ibndcache.Write(&b, res.Fabric); err != nil {
		t.Fatal(err)
	}
	return clitest.WriteFile(t, t.TempDir(), "f.cache", b.String())
}

type doc struct {
	Summary struct {
		Clean, Partial bool
		NothingChecked bool `json:"nothing_checked"`
		Problems       int
	}
	Checks []struct {
		Name, Status, Reason string
		Where                []string
	}
	Findings []struct {
		Check, Kind, Severity, Message string
		Place                          struct {
			Node string
			Port *int
		}
	}
}

func (d *doc) status(check string) string {
	for _, c := range d.Checks {
		if c.Name == check {
			return c.Status
		}
	}
	return "absent"
}

// cases are runs with the exit status, and check statuses, each must give.
func cases(t *testing.T) []struct {
	name   string
	args   []string
	code   int
	status map[string]string
} {
	dir := t.TempDir()
	ring := clitest.WriteFile(t, dir, "ring5.net", ring5)
	counters := clitest.WriteFile(t, dir, "symbols.net", symbols)
	th20 := clitest.WriteFile(t, dir, "th20", "SymbolErrorCounter=20\n")
	th10 := clitest.WriteFile(t, dir, "th10", "SymbolErrorCounter=10\n")
	good := cache(t, fabrics+"fattree2.net")
	changed := cache(t, fabrics+"fattree2.net", func(f *sim.Fabric) error { return f.Unlink("H0", 1) })
	return []struct {
		name   string
		args   []string
		code   int
		status map[string]string
	}{
		{"clean fat tree", []string{"--sim", fabrics + "fattree2.net"}, exitcode.OK,
			map[string]string{"links": "passed", "ids": "passed", "mtu-vl": "passed", "sm": "nothing-to-check", "counters": "passed", "routes": "passed", "credit-loops": "passed", "baseline": "absent"}},
		{"credit loop on a min-hop ring", []string{"--sim", ring}, exitcode.Problem,
			map[string]string{"credit-loops": "failed", "routes": "passed"}},
		{"only credit loops", []string{"--sim", ring, "--checks", "credit-loops"}, exitcode.Problem,
			map[string]string{"credit-loops": "failed", "routes": "absent", "links": "absent"}},
		{"skip credit loops", []string{"--sim", ring, "--skip", "credit-loops"}, exitcode.OK,
			map[string]string{"credit-loops": "absent", "routes": "passed"}},
		{"no SM: stuck ports", []string{"--sim", fabrics + "fattree2.net", "--sim-sm=false"}, exitcode.Problem,
			map[string]string{"links": "failed", "sm": "failed", "routes": "nothing-to-check", "counters": "not-run"}},
		{"no SM, nothing checkable", []string{"--sim", fabrics + "fattree2.net", "--sim-sm=false", "--checks", "routes,credit-loops,mtu-vl"}, exitcode.NothingChecked,
			map[string]string{"routes": "nothing-to-check"}},
		{"degraded link", []string{"--sim", fabrics + "dualhomed.net", "--checks", "links"}, exitcode.Problem,
			map[string]string{"links": "failed"}},
		{"counter errors", []string{"--sim", counters, "--checks", "counters"}, exitcode.Problem,
			map[string]string{"counters": "failed"}},
		{"counter errors below the threshold file's", []string{"--sim", counters, "--threshold-file", th20}, exitcode.OK,
			map[string]string{"counters": "passed"}},
		{"counter errors beyond the threshold file's", []string{"--sim", counters, "--threshold-file", th10}, exitcode.Problem,
			map[string]string{"counters": "failed", "links": "passed"}},
		{"overlapping LIDs (a topology file's)", []string{"--sim", fabrics + "overlap.topo", "--sim-sm=false", "--checks", "ids"}, exitcode.Problem,
			map[string]string{"ids": "failed"}},
		{"part of the fabric unreachable", []string{"--sim", fabrics + "faults.net", "--checks", "links,counters"}, exitcode.Partial,
			map[string]string{"links": "incomplete", "counters": "incomplete"}},
		{"loaded cache: partial", []string{"--load-cache", good}, exitcode.Partial,
			map[string]string{"links": "passed", "ids": "passed", "sm": "not-run", "routes": "not-run", "counters": "not-run", "credit-loops": "not-run"}},
		{"loaded cache, routes only: nothing checked", []string{"--load-cache", good, "--checks", "routes"}, exitcode.NothingChecked,
			map[string]string{"routes": "not-run"}},
		{"baseline unchanged", []string{"--load-cache", good, "--baseline", good, "--checks", "baseline,ids"}, exitcode.OK,
			map[string]string{"baseline": "passed"}},
		{"baseline changed", []string{"--sim", fabrics + "fattree2.net", "--baseline", changed, "--checks", "baseline"}, exitcode.Problem,
			map[string]string{"baseline": "failed"}},
	}
}

// TestExitStatus: each run's exit status and the status of each check,
// as JSON says them, and the text result line.
func TestExitStatus(t *testing.T) {
	for _, tc := range cases(t) {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runTool(t, append(tc.args, "--json")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, stderr)
			}
			var d doc
			if err := json.Unmarshal(out, &d); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for c, want := range tc.status {
				if got := d.status(c); got != want {
					t.Errorf("check %s: %s, want %s\n%s", c, got, want, out)
				}
			}
			if d.Summary.Clean != (code == 0) {
				t.Errorf("clean %v with exit %d", d.Summary.Clean, code)
			}
			text, _, tcode := runTool(t, tc.args...)
			if tcode != code {
				t.Errorf("text: exit %d, json exit %d", tcode, code)
			}
			want := map[int]string{exitcode.OK: "Result: clean\n", exitcode.Problem: "Result: PROBLEMS FOUND\n",
				exitcode.Partial: "Result: partial", exitcode.NothingChecked: "Result: nothing checked\n"}[code]
			if !strings.Contains(string(text), want) {
				t.Errorf("text lacks %q:\n%s", want, text)
			}
		})
	}
}

// TestCreditLoopText: the text names the loop's channels and the place,
// the worst finding first.
func TestCreditLoopText(t *testing.T) {
	ring := clitest.WriteFile(t, t.TempDir(), "ring5.net", ring5)
	out, _, _ := runTool(t, "--sim", ring)
	first := strings.SplitN(string(out), "\n", 2)[0]
	if !strings.HasPrefix(first, "CRITICAL credit-loops/credit-loop: credit loop of 5 channels on its VLs: ") {
		t.Fatalf("first line %q", first)
	}
	if !strings.Contains(string(out), "    at switch \"r") || !strings.Contains(string(out), " DR 0") {
		t.Fatalf("no place:\n%s", out)
	}
}

// TestJSONSchema: every document of the runs above validates against
// docs/health.schema.json.
func TestJSONSchema(t *testing.T) {
	s, err := jsonschema.Load("../../docs/health.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, tc := range cases(t) {
		out, _, _ := runTool(t, append(tc.args, "--json")...)
		if err := s.ValidateJSON(out); err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		}
		var d doc
		json.Unmarshal(out, &d)
		for _, f := range d.Findings {
			kinds[f.Check] = true
			kinds[f.Check+"/"+f.Kind] = true
		}
	}
	for _, c := range []string{"links", "ids/duplicate-lid", "sm", "counters", "credit-loops", "baseline"} {
		if !kinds[c] {
			t.Errorf("no document had a finding of %s", c)
		}
	}
}

// TestColor: colour only when asked for or on a terminal (a buffer is not).
func TestColor(t *testing.T) {
	ring := clitest.WriteFile(t, t.TempDir(), "ring5.net", ring5)
	out, _, _ := runTool(t, "--sim", ring)
	if bytes.Contains(out, []byte("\x1b[")) {
		t.Fatalf("colour into a pipe:\n%q", out)
	}
	out, _, _ = runTool(t, "--sim", ring, "--color=always")
	if !bytes.Contains(out, []byte("\x1b[31mCRITICAL")) {
		t.Fatalf("no colour with --color=always:\n%q", out)
	}
}

// TestBadInput: one line naming the input, exit 2, nothing on stdout.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	notCache := clitest.WriteFile(t, dir, "x.cache", "not a cache")
	for _, tc := range []struct {
		args       []string
		input, msg string
	}{
		{[]string{"--sim", fabrics + "demo.net", "--checks", "link"}, "--checks", "unknown check"},
		{[]string{"--sim", fabrics + "demo.net", "--skip", "routes,nope"}, "--skip", "unknown check"},
		{[]string{"--sim", fabrics + "demo.net", "--checks", "baseline"}, "--checks baseline", "needs --baseline"},
		{[]string{"--sim", fabrics + "demo.net", "--max-op-vls", "0"}, "--max-op-vls 0", "1 to 15"},
		{[]string{"--load-cache", filepath.Join(dir, "missing.cache")}, "--load-cache", "missing.cache"},
		{[]string{"--sim", fabrics + "demo.net", "--baseline", notCache}, "--baseline", "x.cache"},
		{[]string{"--sim", fabrics + "demo.net", "extra"}, "extra", "no arguments"},
	} {
		out, stderr, code := runTool(t, tc.args...)
		clitest.BadInput(t, "ibcheck", out, stderr, code, tc.input, tc.msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.cache")); err == nil {
		t.Fatal("a missing cache was created")
	}
}
