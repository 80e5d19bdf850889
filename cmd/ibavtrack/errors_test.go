package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// validateErrorsJSON checks doc against docs/errors.schema.json.
func validateErrorsJSON(t *testing.T, doc []byte) {
	t.Helper()
	s, err := jsonschema.Load("../../docs/errors.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON(doc); err != nil {
		t.Errorf("JSON does not match docs/errors.schema.json: %v\n%s", err, doc)
	}
}

func TestErrorsSim(t *testing.T) {
	net := writeFile(t, "net", string(mustRead(t, errorsNet))+`
do PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12
do PerformanceSet "H-h3"[1] PortCounters.PortXmitWait=7
`)
	none := writeFile(t, "none", "")
	out, stderr, code := runTool(t, "errors", "--sim", net, "--threshold-file", none)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	want := `Errors for "h3 mlx5_0"
   GUID 0x100005 port 1: [PortXmitWait == 7]
Errors for 0x200000 "sw1"
   GUID 0x200000 port ALL: [SymbolErrorCounter == 12]
   GUID 0x200000 port 1: [SymbolErrorCounter == 12]

## Summary: 6 nodes checked, 2 bad nodes found
##          21 ports checked, 2 ports have errors beyond threshold
## Thresholds: 
## Suppressed:
`
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	if _, _, code := runTool(t, "errors", "--sim", net, "--threshold-file", none, "--check"); code != exitcode.Problem {
		t.Errorf("--check: exit %d", code)
	}
	th := writeFile(t, "th", "SymbolErrorCounter=12\nPortXmitWait=0x10\n")
	out, _, code = runTool(t, "errors", "--sim", net, "--threshold-file", th, "--check")
	if code != exitcode.OK || !bytes.Contains(out, []byte("0 ports have errors beyond threshold")) ||
		!bytes.Contains(out, []byte("## Thresholds: [SymbolErrorCounter = 12][PortXmitWait = 16]\n")) {
		t.Errorf("thresholds: exit %d\n%s", code, out)
	}
	js, _, code := runTool(t, "errors", "--sim", net, "--threshold-file", none, "--json")
	if code != exitcode.OK {
		t.Fatalf("--json: exit %d", code)
	}
	validateErrorsJSON(t, js)
}

// TestErrorsClear: reading never clears; --clear-errors does (a Set), and
// only then.
func TestErrorsClear(t *testing.T) {
	net := writeFile(t, "net", string(mustRead(t, errorsNet))+`
do PerformanceSet "S-sw2"[3] PortCounters.PortXmitDiscards=4
do PerformanceSet "H-h2"[1] PortCounters.SymbolErrorCounter=2
`)
	hookMu.Lock()
	defer hookMu.Unlock()
	none := writeFile(t, "none", "")
	// One simulator for all runs: the tests' openFabric keeps it.
	keepSim(t, net)
	for range 2 {
		out, _, _ := runTool(t, "errors", "--sim", net, "--threshold-file", none)
		if !bytes.Contains(out, []byte("2 ports have errors beyond threshold")) {
			t.Fatalf("reading changed the counters:\n%s", out)
		}
	}
	out, stderr, code := runTool(t, "errors", "--sim", net, "--threshold-file", none, "--clear-errors")
	if code != exitcode.OK || !bytes.Contains(out, []byte("2 ports have errors beyond threshold")) {
		t.Fatalf("--clear-errors: exit %d\n%s%s", code, out, stderr)
	}
	out, _, _ = runTool(t, "errors", "--sim", net, "--threshold-file", none)
	if !bytes.Contains(out, []byte("0 ports have errors beyond threshold")) {
		t.Errorf("after --clear-errors:\n%s", out)
	}
}

func TestErrorsBadInput(t *testing.T) {
	bad := writeFile(t, "bad", "SymbolErrorCounter=ten\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--threshold-file", "/nonexistent/th"}, "--threshold-file /nonexistent/th: no such file or directory"},
		{[]string{"--threshold-file", bad}, bad + ":1: SymbolErrorCounter: bad value"},
		{[]string{"extra"}, "errors takes no arguments"},
	} {
		out, stderr, code := runTool(t, append([]string{"errors", "--sim", errorsNet}, tc.args...)...)
		if code != exitcode.Usage || len(out) != 0 || !strings.Contains(string(stderr), tc.want) || strings.Count(string(stderr), "\n") != 1 {
			t.Errorf("%v: exit %d stdout %q stderr %q", tc.args, code, out, stderr)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keepSim makes the commands of this test use one embedded simulator
// built from net (with its SM run), so state survives between runs; the
// transport is read-only unless the settings allow Sets, as attach.Open.
func keepSim(t *testing.T, net string) *sim.Fabric {
	t.Helper()
	f, err := sim.Load(net, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		ep, err := f.Attach(s.SimHost)
		if err != nil {
			return nil, err
		}
		if !s.AllowSet {
			ep = transport.ReadOnly(ep)
		}
		return &attach.Fabric{Transport: ep, Desc: "test simulator", Sim: f}, nil
	}
	t.Cleanup(func() { openFabric = old })
	return f
}

func TestLinksCounters(t *testing.T) {
	net := writeFile(t, "net", string(mustRead(t, errorsNet))+`
do PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12
do PerformanceSet "H-h1"[1] PortCounters.PortRcvErrors=2
do PerformanceSet "H-h1"[1] PortCounters.PortXmitWait=50
`)
	out, stderr, code := runTool(t, "links", "--sim", net, "--counters")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !bytes.Contains(out, []byte("Errors A/B")) || !regexpMatch(`\| sw1 +\| 1 +\|.*\| 12/2 +\|`, out) {
		t.Errorf("links --counters:\n%s", out)
	}
	js, _, code := runTool(t, "links", "--sim", net, "--counters", "--json")
	if code != exitcode.OK {
		t.Fatalf("--json: exit %d", code)
	}
	var doc struct {
		Links []struct {
			A, B struct {
				Node     string `json:"node"`
				Port     int    `json:"port"`
				Counters *struct {
					Errors map[string]uint64 `json:"errors"`
				} `json:"counters"`
			}
		} `json:"links"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range doc.Links {
		if l.A.Counters == nil || l.B.Counters == nil {
			t.Fatalf("link without counters: %s", js)
		}
		if l.A.Node == "sw1" && l.A.Port == 1 {
			found = l.A.Counters.Errors["SymbolErrorCounter"] == 12 && l.B.Counters.Errors["PortXmitWait"] == 50
		}
	}
	if !found {
		t.Errorf("sw1[1] counters missing:\n%s", js)
	}
	// Without --counters, no GMP is sent and no counters are shown.
	out, _, _ = runTool(t, "links", "--sim", net)
	if bytes.Contains(out, []byte("Errors A/B")) {
		t.Error("counters without --counters")
	}
}

// TestWatchCounters: a link whose error counters went up between two
// sweeps gets one line with the increase and its rate.
func TestWatchCounters(t *testing.T) {
	out, stderr, code := runWatchCounters(t)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 1 || !regexpMatch(`^\S+ link "sw2"\[3\] - "h3 mlx5_0"\[1\]: error counters up in \S+: "sw2"\[3\] SymbolErrorCounter \+5 \(\S+/s\); "h3 mlx5_0"\[1\] LinkDownedCounter \+1 \(\S+/s\)$`, []byte(lines[0])) {
		t.Errorf("lines:\n%s", out)
	}
}

// runWatchCounters runs watch --counters (and args) on errorsNet, raising
// two error counters of the link sw2[3] - h3[1] after the first sweep, as
// a net file's PerformanceSet do-lines would between sweeps (which --sim
// cannot do: it runs them before the first).
func runWatchCounters(t *testing.T, args ...string) ([]byte, []byte, int) {
	t.Helper()
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, fab *attach.Fabric) {
		if sweep != 0 {
			return
		}
		for _, c := range []string{
			`PerformanceSet "S-sw2"[3] PortCounters.SymbolErrorCounter=5`,
			`PerformanceSet "H-h3"[1] PortCounters.LinkDownedCounter=1`,
		} {
			if err := fab.Sim.Exec(c); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { afterSweep = nil }()
	return runTool(t, append([]string{"watch", "--sim", errorsNet, "--counters", "--interval", "1ms", "--count", "3"}, args...)...)
}

func regexpMatch(re string, b []byte) bool { return regexp.MustCompile(re).Match(b) }

// TestErrorsSilentPMA: a PMA that never answers PortCounters gives a
// partial result (exit 3) naming the port; the rest is reported.
func TestErrorsSilentPMA(t *testing.T) {
	net := writeFile(t, "net", string(mustRead(t, errorsNet))+`
do PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12
do Error "H-h2"[1] 100 0x12
`)
	none := writeFile(t, "none", "")
	out, stderr, code := runTool(t, "errors", "--sim", net, "--threshold-file", none, "--retries", "1", "-t", "100")
	if code != exitcode.Partial {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitcode.Partial, out, stderr)
	}
	if !bytes.Contains(stderr, []byte(`PortCounters query failed on "h2 mlx5_0", lid `)) ||
		!bytes.Contains(out, []byte("##          1 PMA query failures\n")) ||
		!bytes.Contains(out, []byte("   GUID 0x200000 port 1: [SymbolErrorCounter == 12]\n")) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, stderr)
	}
	js, _, code := runTool(t, "errors", "--sim", net, "--threshold-file", none, "--retries", "1", "-t", "100", "--json")
	if code != exitcode.Partial {
		t.Fatalf("--json: exit %d", code)
	}
	validateErrorsJSON(t, js)
	if !bytes.Contains(js, []byte(`"attribute": "PortCounters"`)) || !bytes.Contains(js, []byte(`"partial": true`)) {
		t.Errorf("JSON:\n%s", js)
	}
}

// gmpCanceller cancels the command's context at the first PerfMgt GMP
// (after discovery) and lets it wait for the cancellation.
type gmpCanceller struct {
	transport.Transport
	cancel context.CancelFunc
}

func (g *gmpCanceller) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if req[1] == 0x04 {
		g.cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	return g.Transport.Exchange(ctx, dlid, req, resp)
}

// TestInterruptErrors: Ctrl-C while the counters are read stops errors
// (and links --counters) with exit 130, one line, nothing on stdout.
func TestInterruptErrors(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	var cancel context.CancelFunc
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := old(ctx, s)
		if err == nil {
			f.Transport = &gmpCanceller{Transport: f.Transport, cancel: cancel}
		}
		return f, err
	}
	defer func() { openFabric = old }()
	for _, args := range [][]string{
		{"errors", "--sim", errorsNet},
		{"links", "--sim", errorsNet, "--counters"},
	} {
		ctx, c := context.WithCancel(context.Background())
		cancel = c
		var out, errb bytes.Buffer
		code := run(ctx, &out, &errb, append([]string{"ibavtrack"}, args...))
		c()
		if code != exitcode.Interrupted || errb.String() != "ibavtrack: interrupted while reading port counters\n" || out.Len() != 0 {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// writeFile writes content into a fresh temp file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	return clitest.WriteFile(t, t.TempDir(), name, content)
}

// errorsNet is the fabric of the errors tests.
const errorsNet = "testdata/errors.net"
