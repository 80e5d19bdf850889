package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/pkg/avwatch"
)

// hookMu serialises tests that set the package's test hooks.
var hookMu sync.Mutex

// runMu serialises runTool's in-process runs: urfave/cli's help command
// is one global *cli.Command that every run of a tool with subcommands
// writes to (its separator), a data race between the parallel tests
// (whose ibsim, OpenSM and saquery still overlap).
var runMu sync.Mutex

// runTool runs ibavtrack in-process and returns stdout, stderr and the status.
func runTool(t *testing.T, args ...string) ([]byte, []byte, int) {
	t.Helper()
	var out, errb bytes.Buffer
	runMu.Lock()
	defer runMu.Unlock()
	code := run(context.Background(), &out, &errb, append([]string{"ibavtrack"}, clitest.WithPeerTimeout(args)...))
	return out.Bytes(), errb.Bytes(), code
}

func TestLinksMarksMismatches(t *testing.T) {
	stdout, stderr, code := runTool(t, "links", "--sim", "testdata/mismatch.net", "--check")
	if code != exitcode.Problem {
		t.Fatalf("links --check: exit %d, want %d\n%s%s", code, exitcode.Problem, stdout, stderr)
	}
	out := string(stdout)
	// Marked rows start with "| * |"; the clean ones do not.
	marked := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "|")
		if len(f) > 6 && strings.TrimSpace(f[1]) == "*" {
			marked[strings.TrimSpace(f[2])+"["+strings.TrimSpace(f[3])+"]"] = true
		}
	}
	want := map[string]bool{"sw1[2]": true, "sw1[3]": true, "sw2[2]": true}
	if fmt.Sprint(marked) != fmt.Sprint(want) {
		t.Errorf("marked rows %v, want %v\n%s", marked, want, out)
	}
	for _, reason := range []string{
		"sw1[2] - h2[1]: width: 1x link: both ends support 12x",
		"sw1[3] - h3[1]: mtu-cap: MTU mismatch between ports: MTUCap 4096 on sw1[3], 2048 on h3[1]; link MTU 2048",
		"sw2[2] - h4[1]: vl-cap: OP_VLS mismatch between ports: VLCap VL0-7 on sw2[2], VL0-3 on h4[1]; operational VLs VL0-3",
		"sw2[2] - h4[1]: op-vls: sw2[2] runs OperationalVLs VL0-7, OpenSM would set VL0-3",
		"5 links, 3 marked:",
	} {
		if !strings.Contains(out, reason) {
			t.Errorf("missing %q in\n%s", reason, out)
		}
	}
	if !strings.Contains(string(stderr), "ibavtrack: 3 of 5 links marked") {
		t.Errorf("stderr %q", stderr)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes on a non-terminal")
	}
	// The row of the 1x link shows the widths and the MTU row the caps.
	for _, re := range []string{
		`\| \* +\| sw1 +\| 2 +\| \d+ +\| h2 .*\| 1x +\| 12x +\| SDR +\| QDR +\|`,
		`\| \* +\| sw1 +\| 3 +\| \d+ +\| h3 +\| 1 +\| \d+ +\| 4096/2048 +\| 2048 +\| 2048/2048 +\|`,
		`\| +\| sw1 +\| 1 +\| \d+ +\| h1 `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no row matching %s in\n%s", re, out)
		}
	}

	// Without --check the table is the same and the status 0.
	if _, _, code := runTool(t, "links", "--sim", "testdata/mismatch.net"); code != 0 {
		t.Errorf("links without --check: exit %d", code)
	}
	// A clean fabric passes --check.
	if o, e, code := runTool(t, "links", "--sim", "../../testdata/fabrics/mixed.net", "--check"); code != 0 {
		t.Errorf("mixed.net --check: exit %d\n%s%s", code, o, e)
	}
}

func TestLinksJSON(t *testing.T) {
	stdout, _, code := runTool(t, "links", "--sim", "testdata/mismatch.net", "--json", "--max-op-vls", "2")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Links []struct {
			A, B     endJSON
			LinkMTU  int   `json:"link_mtu"`
			OpVLs    uint8 `json:"op_vls"`
			Width    string
			Mismatch bool
			Problems []problemJSON
		}
		Mismatches int
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Links) != 5 {
		t.Fatalf("%d links", len(doc.Links))
	}
	kinds := map[string][]string{}
	for _, l := range doc.Links {
		key := fmt.Sprintf("%s[%d]", l.A.Node, l.A.Port)
		for _, p := range l.Problems {
			kinds[key] = append(kinds[key], p.Kind)
		}
		// max-op-vls 2 caps every link at VL0-1, which every port (VL0-7,
		// VL0-3 running) now exceeds.
		if l.OpVLs != 2 || l.A.LinkOpVLs != 2 {
			t.Errorf("%s: op VLs %d/%d, want 2", key, l.OpVLs, l.A.LinkOpVLs)
		}
	}
	if got := fmt.Sprint(kinds["sw1[3]"]); got != "[mtu-cap op-vls op-vls]" {
		t.Errorf("sw1[3] problems %s", got)
	}
	if got := fmt.Sprint(kinds["sw1[2]"]); got != "[op-vls op-vls width]" {
		t.Errorf("sw1[2] problems %s", got)
	}
	if doc.Mismatches != 5 || doc.Links[1].Width != "1x" || doc.Links[2].LinkMTU != 2048 || doc.Links[2].A.MTUCap != 4096 {
		t.Errorf("doc %+v", doc)
	}
}

func TestPathEmbedded(t *testing.T) {
	// pathmix.net, embedded SM: LIDs in file order (swA 1, swB 2, swC 3,
	// hA 4, hB 5, hC 6, hD 7).
	tests := []struct {
		src, dst string
		want     []string
	}{
		{"hA", "hB", []string{
			"DLID 5  SLID 4  SL 0",
			"MTU  2048 (code 4), set by hA[1]",
			"Rate 25 Gb/s (code 15), set by swB[3]", // 1x EDR
			"Hops 3",
		}},
		{"4", "7", []string{
			"Rate 2.5 Gb/s (code 2), set by swC[4]", // 1x SDR
			"Hops 3",
		}},
		{"hC", "hA", []string{
			// 12x SDR (30G) is the lowest rank: below 4x DDR's 20G? No:
			// 20 Gb/s ranks below 30 Gb/s, so hC's own link limits.
			"Rate 20 Gb/s (code 6), set by hC[1]",
		}},
		{"0x0000000000200000", "hC", []string{ // switch source: port 0
			"From \"swA\"[0] (LID 1",
			"DLID 6  SLID 1",
		}},
	}
	for _, tt := range tests {
		stdout, stderr, code := runTool(t, "path", "--sim", "testdata/pathmix.net", tt.src, tt.dst)
		if code != 0 {
			t.Fatalf("path %s %s: exit %d\n%s", tt.src, tt.dst, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(stdout), w) {
				t.Errorf("path %s %s: missing %q in\n%s", tt.src, tt.dst, w, stdout)
			}
		}
	}
	// The per-port table of hA→hB: source, then ingress/egress per switch.
	stdout, _, _ := runTool(t, "path", "--sim", "testdata/pathmix.net", "--json", "hA", "hB")
	var doc struct {
		AV    avJSON
		Ports []pathPortJSON
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, p := range doc.Ports {
		roles = append(roles, fmt.Sprintf("%s[%d]:%s:%g", p.Node, p.Port, p.Role, p.RateGbps))
	}
	want := "[hA[1]:source:100 swA[1]:ingress:100 swA[2]:egress:40 swB[1]:ingress:40 swB[3]:egress:25 hB[1]:destination:25]"
	if got := fmt.Sprint(roles); got != want {
		t.Errorf("ports %s\nwant  %s", got, want)
	}
	if doc.AV.Rate != 15 || doc.AV.MTUBytes != 2048 || doc.AV.Hops != 3 || doc.AV.RateLimit != "swB[3]" {
		t.Errorf("av %+v", doc.AV)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitcode.Usage, "a command is required"},
		{[]string{"frob"}, exitcode.Usage, "frob: unknown command"},
		{[]string{"path", "--sim", "testdata/pathmix.net", "hA"}, exitcode.Usage, "path needs SRC and DST"},
		{[]string{"path", "--sim", "testdata/pathmix.net", "hA", "nosuch"}, exitcode.Usage, `DST "nosuch": not a node name or description in the fabric`},
		{[]string{"links", "--sim", "testdata/pathmix.net", "--max-op-vls", "9"}, exitcode.Usage, "--max-op-vls 9: must be 1..5"},
		{[]string{"watch", "--sim", "testdata/pathmix.net"}, exitcode.Usage, "at least one DST"},
		{[]string{"watch", "--interval", "0s", "--sim", "testdata/pathmix.net", "hA"}, exitcode.Usage, "--interval 0s: must be positive"},
		{[]string{"links", "--sim", "testdata/nosuch.net"}, exitcode.Usage, "--sim testdata/nosuch.net"},
	}
	for _, tt := range tests {
		_, stderr, code := runTool(t, tt.args...)
		if code != tt.code || !strings.Contains(string(stderr), tt.msg) {
			t.Errorf("%v: exit %d %q, want %d with %q", tt.args, code, stderr, tt.code, tt.msg)
		}
		if n := strings.Count(string(stderr), "\n"); n != 1 {
			t.Errorf("%v: %d stderr lines, want 1: %q", tt.args, n, stderr)
		}
	}
}

// TestWatchReportsLinkChanges: between sweeps the test changes the
// embedded simulator: the 1x link the route uses goes down and the SM
// reroutes over the parallel 4x link, then it comes back, then h2 is cut
// off. Each change is one line; the AV retired by a change is still
// referenced (held one sweep) when the line is printed.
func TestWatchReportsLinkChanges(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	var steps []string
	afterSweep = func(sweep int, fab *attach.Fabric) {
		if fab.Sim == nil {
			t.Error("no simulator")
			return
		}
		var err error
		switch sweep {
		case 0:
			steps = append(steps, "unlink sw1[2]")
			if err = fab.Sim.Unlink("sw1", 2); err == nil {
				err = fab.Sim.RunSM("h1")
			}
		case 1:
			steps = append(steps, "relink sw1[2]")
			if err = fab.Sim.ReLink("sw1", 2); err == nil {
				err = fab.Sim.RunSM("h1")
			}
		case 2:
			// no change: no line
		case 3:
			steps = append(steps, "unlink sw2[3]")
			err = fab.Sim.Unlink("sw2", 3)
		}
		if err != nil {
			t.Error(err)
		}
	}
	defer func() { afterSweep = nil }()
	stdout, stderr, code := runTool(t, "watch", "--sim", "testdata/watch.net", "--sim-host", "h1",
		"--interval", "1ms", "--count", "5", "h2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := scanLines(stdout)
	ts := `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* h2: `
	want := []string{
		ts + `AV dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3 via h1\[1\] sw1\[2\] sw2\[3\] \(from the SA\)$`,
		ts + `rate 2.5 Gb/s → 10 Gb/s, rate set by sw1\[2\] → h1\[1\], route h1\[1\] sw1\[2\] sw2\[3\] → h1\[1\] sw1\[3\] sw2\[3\]; ` +
			`retired, still referenced: \[dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3: 1 ref\]$`,
		ts + `rate 10 Gb/s → 2.5 Gb/s, rate set by h1\[1\] → sw1\[2\], route h1\[1\] sw1\[3\] sw2\[3\] → h1\[1\] sw1\[2\] sw2\[3\]; ` +
			`retired, still referenced: \[dlid 4 slid 3 sl 0 mtu 2048 rate 10 Gb/s hops 3: 1 ref\]$`,
		ts + `unreachable: not in the fabric; retired, still referenced: \[dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3: 1 ref\]$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("steps %v: %d lines, want %d:\n%s", steps, len(lines), len(want), stdout)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], w)
		}
	}
}

func TestWatchJSONAndHoldZero(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, fab *attach.Fabric) {
		if sweep == 0 {
			if err := fab.Sim.Unlink("sw1", 2); err != nil {
				t.Error(err)
			}
			if err := fab.Sim.RunSM("h1"); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { afterSweep = nil }()
	stdout, stderr, code := runTool(t, "watch", "--sim", "testdata/watch.net", "--sim-host", "h1",
		"--interval", "1ms", "--count", "2", "--hold", "0", "--json", "h2", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var events []eventJSON
	for _, l := range scanLines(stdout) {
		var ev eventJSON
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		events = append(events, ev)
	}
	// h2 new, LID 3 (h1 itself: loopback) new, h2 change; no retired AVs
	// without held references.
	if len(events) != 3 {
		t.Fatalf("%d events:\n%s", len(events), stdout)
	}
	if events[0].Target != "h2" || events[0].Event != "new" || events[0].AV.Rate != 2 ||
		events[1].Target != "3" || events[1].Event != "new" || events[1].AV.Hops != 0 ||
		events[2].Event != "change" || events[2].AV.Rate != 3 || len(events[2].Retired) != 0 {
		t.Errorf("events %+v", events)
	}
	if c := events[2].Changes; len(c) == 0 || c[0] != (avwatch.Change{Field: "rate", Old: "2.5 Gb/s", New: "10 Gb/s"}) {
		t.Errorf("changes %+v", c)
	}
}

// TestSharedOptionsEitherSide: the shared fabric options work before the
// command name as well as after it, with the same output.
func TestSharedOptionsEitherSide(t *testing.T) {
	net := "testdata/pathmix.net"
	tests := []struct{ after, before []string }{
		{[]string{"links", "--sim", net}, []string{"--sim", net, "links"}},
		{[]string{"links", "--sim", net, "--json", "-t", "500"}, []string{"--sim=" + net, "-t", "500", "links", "--json"}},
		{[]string{"path", "--sim", net, "hA", "hB"}, []string{"-o", "4", "--sim", net, "--retries", "1", "path", "hA", "hB"}},
		{[]string{"path", "--sim", net, "hA", "hB", "--json"}, []string{"--sim", net, "path", "--json", "hA", "hB"}},
	}
	for _, tt := range tests {
		want, _, wcode := runTool(t, tt.after...)
		got, stderr, code := runTool(t, tt.before...)
		if code != wcode || !bytes.Equal(got, want) {
			t.Errorf("%v: exit %d (stderr %q), want exit %d and the output of %v", tt.before, code, stderr, wcode, tt.after)
		}
	}
	// Options but no command: the command is what is missing.
	_, stderr, code := runTool(t, "--sim", net, "-t", "100")
	if code != exitcode.Usage || string(stderr) != "ibavtrack: a command is required: links, path, watch, errors or mcast\n" {
		t.Errorf("no command: exit %d %q", code, stderr)
	}
}

// TestOneLIDPlan: the LIDs a fabric file gives are the LIDs ibavtrack's
// embedded SM uses, as ibdiscover shows them (node001 10, node006 15 in
// demo.net).
func TestOneLIDPlan(t *testing.T) {
	stdout, stderr, code := runTool(t, "path", "--sim", "../../testdata/fabrics/demo.net", "10", "15")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`From "node001 mlx5_0"[1] (LID 10,`, `To   "node006 mlx5_0"[1] (LID 15,`} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
}

// TestPathNamesWithSpaces: SRC and DST are matched exactly first (spaces
// included), then trimmed.
func TestPathNamesWithSpaces(t *testing.T) {
	file := "../../testdata/fabrics/spaces.net"
	for _, tc := range []struct{ src, dst, from, to string }{
		{" host one", "host two ", `From " host one"[1]`, `To   "host two "[1]`},
		{"host one", " host two", `From "host one"[1]`, `To   "host two "[1]`},
		{"spine one", "host one", `From " spine one "[0]`, `To   "host one"[1]`},
	} {
		stdout, stderr, code := runTool(t, "path", "--sim", file, tc.src, tc.dst)
		if code != 0 {
			t.Errorf("path %q %q: exit %d\n%s", tc.src, tc.dst, code, stderr)
			continue
		}
		if !strings.Contains(string(stdout), tc.from) || !strings.Contains(string(stdout), tc.to) {
			t.Errorf("path %q %q:\n%s\nwant %s / %s", tc.src, tc.dst, stdout, tc.from, tc.to)
		}
	}
	if _, stderr, code := runTool(t, "path", "--sim", file, "host one ", "h2"); code != exitcode.Usage || !strings.Contains(string(stderr), "ambiguous") {
		t.Errorf("ambiguous name: exit %d %s", code, stderr)
	}
}

// scanLines returns the non-empty lines of b.
func scanLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestMaxNodesNamed: a sweep stopped by --max-nodes names the limit.
func TestMaxNodesNamed(t *testing.T) {
	// --sim refuses a file beyond --max-nodes before building it: open
	// the fabric without the limit, so that discovery meets it.
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		s.MaxNodes = 0
		return attach.Open(ctx, s)
	}
	defer func() { openFabric = old }()
	_, stderr, code := runTool(t, "links", "--sim", "../../testdata/fabrics/demo.net", "--max-nodes", "3")
	want := "ibavtrack: partial result printed: discovery stopped at the --max-nodes limit of 3 nodes (the fabric has more)\n"
	if code != exitcode.Partial || string(stderr) != want {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitcode.Partial, want)
	}
}

// TestHelpCommand: "ibavtrack help" and "ibavtrack help CMD" print the
// help of the tool and of each command on stdout.
func TestHelpCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "COMMANDS:"},
		{[]string{"help", "links"}, "ibavtrack links - "},
		{[]string{"help", "path"}, "ibavtrack path - "},
		{[]string{"help", "watch"}, "ibavtrack watch - "},
		{[]string{"help", "errors"}, "ibavtrack errors - "},
		{[]string{"links", "--help"}, "ibavtrack links - "},
	} {
		stdout, stderr, code := runTool(t, tc.args...)
		if code != exitcode.OK || len(stderr) != 0 || !strings.Contains(string(stdout), tc.want) {
			t.Errorf("ibavtrack %v: exit %d, stderr %q, stdout:\n%s", tc.args, code, stderr, stdout)
		}
	}
}
