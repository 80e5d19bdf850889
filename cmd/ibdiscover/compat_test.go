package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// compatFabric is a fabric the real tools are compared on, with the
// nodes to attach to.
type compatFabric struct {
	file    string
	hosts   []string
	osmHost string // a CA for OpenSM to run on
	opts    []ibsimtest.Option
}

func compatFabrics(t *testing.T) []compatFabric {
	ex := "/usr/share/doc/ibsim-utils/net-examples/"
	fabs := []compatFabric{
		{file: ex + "net", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
		{file: ex + "net.1", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path", hosts: []string{"", "Switch2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca", hosts: []string{"", "Hca2", "Switch2"}, osmHost: "Hca1"},
		{file: ex + "net.2sw2path4hca2port", hosts: []string{"", "Hca2"}, osmHost: "Hca1"},
	}
	for _, f := range ownFabrics {
		abs, err := filepath.Abs("../../testdata/fabrics/" + f.file)
		if err != nil {
			t.Fatal(err)
		}
		fabs = append(fabs, compatFabric{file: abs, hosts: f.hosts, osmHost: f.osmHost,
			opts: []ibsimtest.Option{ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}})
	}
	// A generated fat tree of a few hundred nodes (324), written as an
	// ibsim net file.
	fabs = append(fabs, compatFabric{file: generated(t, "fattree:levels=2,radix=24"), hosts: []string{"", "L5"}, osmHost: "H0",
		opts: []ibsimtest.Option{ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}})
	return fabs
}

// generated writes a generator spec's fabric as an ibsim net file.
func generated(t *testing.T, spec string) string {
	t.Helper()
	nf, err := netfile.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := nf.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fattree.net")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSMPsOnBigFatTree: on a generated fat tree of 2,144 nodes served by
// ibsim, ibdiscover prints what ibnetdiscover prints with at least 10%
// fewer SMPs (docs/performance.md records both counts).
func TestSMPsOnBigFatTree(t *testing.T) {
	ibsimtest.Require(t)
	if testing.Short() {
		t.Skip("short")
	}
	sim := ibsimtest.Start(t, generated(t, "fattree:levels=2,radix=64"),
		ibsimtest.Nodes(4096), ibsimtest.Switches(512), ibsimtest.Ports(20000))
	ours, stderr, code := runOurs(t, "--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", "H0", "-m", "--fixed-timeout")
	if code != 0 {
		t.Fatalf("ibdiscover exit %d: %s", code, stderr)
	}
	theirs, terr, tcode := sim.RunTool(t, "H0", "ibnetdiscover", "-m")
	if tcode != 0 {
		t.Fatalf("ibnetdiscover exit %d: %s", tcode, terr)
	}
	if o, th := stripDate(ours), stripDate(theirs); o != th {
		t.Errorf("ibdiscover differs from ibnetdiscover:\n%s", golden.LineDiff(th, o))
	}
	oc, tc := smpsSent(t, stderr), madsUsed(theirs)
	if float64(oc) > 0.9*float64(tc) {
		t.Errorf("ibdiscover used %d SMPs, ibnetdiscover %d: not 10%% fewer", oc, tc)
	}
	t.Logf("2,144 nodes: ibdiscover %d SMPs, ibnetdiscover %d", oc, tc)
}

// ownFabrics are the testdata fabrics compared with the real tools.
var ownFabrics = []struct {
	file    string
	hosts   []string
	osmHost string
}{
	{"demo.net", []string{"", "S-0c42a1030020b000"}, "H-0c42a10300300100"},
	{"chain10.net", []string{"", "c5"}, "hA"},
	{"dualhomed.net", []string{"", "swB"}, "dual"},
	{"fattree2.net", []string{"", "S0"}, "H0"},
	{"fattree3.net", []string{"", "A0"}, "H0"},
	{"faults.net", []string{""}, "h1"},
	{"loop.net", []string{"", "sw2"}, "h1"},
	{"mixed.net", []string{"", "H-0011750000000e00"}, "H-0c42a10300000a00"},
	{"mlnxpar.net", []string{"", "SwB"}, "host1"},
	{"parallel.net", []string{"", "swB"}, "h1"},
	{"router.net", []string{"", "sw2"}, "h1"},
}

// wantCode is ibdiscover's exit status on a fabric: partial (3) where
// the net file injects faults.
func wantCode(file string) int {
	if filepath.Base(file) == "faults.net" {
		return 3
	}
	return 0
}

var dateLine = regexp.MustCompile(`(?m)^# Topology file: generated on .*\n`)

// stripDate is b without its dateLine lines.
func stripDate(b []byte) string {
	_, rest := cutLines(string(b), "# Topology file: generated on ", nil)
	return rest
}

// cutLines splits s into the lines, each with its newline, that start
// with prefix and whose rest satisfies ok (nil: any rest), and the text
// without them: what (?m)^prefix.*\n finds and what replacing it with ""
// leaves (a last line without a newline never matches). The line
// filters here are written with it, not with those regular expressions:
// Go's regexp finds no literal prefix behind (?m)^ and steps through the
// whole output, which made these filters a sixth of the test binary's
// CPU under -race. TestLineFilters holds each to its regular expression.
func cutLines(s, prefix string, ok func(rest string) bool) (lines, rest string) {
	var m, o strings.Builder
	copied := 0 // s[:copied] is in lines or o
	for i := 0; ; {
		j := strings.Index(s[i:], prefix)
		if j < 0 {
			break
		}
		j += i
		nl := strings.IndexByte(s[j:], '\n')
		if nl < 0 {
			break // no line after here ends with a newline
		}
		end := j + nl + 1
		if (j == 0 || s[j-1] == '\n') && (ok == nil || ok(s[j+len(prefix):end-1])) {
			o.WriteString(s[copied:j])
			m.WriteString(s[j:end])
			copied, i = end, end
			continue
		}
		i = j + 1
	}
	if copied == 0 {
		return "", s
	}
	o.WriteString(s[copied:])
	return m.String(), o.String()
}

// digits reports whether s is one or more ASCII digits (\d+).
func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// runOurs runs ibdiscover in-process and returns stdout, stderr and the status.
func runOurs(t *testing.T, args ...string) ([]byte, []byte, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &out, &errb, append([]string{"ibdiscover"}, clitest.WithPeerTimeout(args)...))
	return out.Bytes(), errb.Bytes(), code
}

// TestCompatIBNetDiscover compares ibdiscover --ibsim with ibnetdiscover
// -o 1 on the same ibsim fabric, before and after OpenSM assigns LIDs.
func TestCompatIBNetDiscover(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	for _, fab := range compatFabrics(t) {
		fab := fab
		t.Run(filepath.Base(fab.file), func(t *testing.T) {
			t.Parallel() // each fabric has its own ibsim
			if _, err := os.Stat(fab.file); err != nil {
				clitest.Skip(t, "fabric file missing: %v", err)
			}
			sim := ibsimtest.Start(t, fab.file, fab.opts...)
			compare := func(stage string) {
				for _, host := range fab.hosts {
					args := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "-m", "-f", "-s", "--fixed-timeout"}
					if host != "" {
						args = append(args, "--sim-host", host)
					}
					ours, stderr, code := runOurs(t, args...)
					if code != wantCode(fab.file) {
						t.Fatalf("%s host %q: ibdiscover exit %d: %s", stage, host, code, stderr)
					}
					theirs, terr, tcode := sim.RunTool(t, host, "ibnetdiscover", "-o", "1", "-m", "-f", "-s")
					if tcode != 0 {
						t.Fatalf("%s host %q: ibnetdiscover exit %d: %s", stage, host, tcode, terr)
					}
					// ibnetdiscover prints its -s lines on stdout, ours go to stderr.
					theirLines, theirs := splitProgress(theirs)
					ourLines, _ := splitProgress(stderr)
					faultFree := wantCode(fab.file) == 0
					o, th := stripDate(ours), stripDate(theirs)
					if !faultFree {
						// (ibnetdiscover counts the SMPs that failed; the
						// replay knows only the fabric that answered.)
						o, th = stripMADs(o), stripMADs(th)
					}
					if o != th {
						t.Errorf("%s host %q: ibdiscover differs from ibnetdiscover -o 1:\n%s", stage, host, golden.LineDiff(th, o))
					}
					if faultFree && ourLines != theirLines {
						t.Errorf("%s host %q: -s lines differ from ibnetdiscover -o 1 -s:\n%s", stage, host, golden.LineDiff(theirLines, ourLines))
					}
					// -m's header is ibnetdiscover's count; ours is on stderr.
					// (ibnetdiscover's count leaves out the kernel's retries; ours
					// counts them, so only fault-free fabrics compare.)
					if oc, tc := smpsSent(t, stderr), madsUsed([]byte(th)); oc > tc && faultFree {
						t.Errorf("%s host %q: ibdiscover used %d SMPs, ibnetdiscover %d", stage, host, oc, tc)
					}
					if stage != "before OpenSM" {
						continue
					}
					// The embedded simulator must answer as ibsim does.
					args = []string{"--sim", fab.file, "-m", "-f"}
					if host != "" {
						args = append(args, "--sim-host", host)
					}
					simOut, stderr, code := runOurs(t, args...)
					if code != wantCode(fab.file) {
						t.Fatalf("host %q: ibdiscover --sim exit %d: %s", host, code, stderr)
					}
					s := stripDate(simOut)
					if !faultFree {
						s = stripMADs(s)
					}
					if s != th {
						t.Errorf("host %q: ibdiscover --sim differs from ibnetdiscover on ibsim:\n%s", host, golden.LineDiff(th, s))
					}
				}
			}
			compare("before OpenSM")
			sim.RunOpenSM(t, fab.osmHost, t.TempDir())
			compare("after OpenSM")
		})
	}
}

// replaySMPs discovers through ibsim with the engine and returns the SMP
// count its replay of libibnetdisc predicts.
func replaySMPs(t *testing.T, s *ibsimtest.Sim, host string) int {
	t.Helper()
	cfg := ibsim.ConfigFromEnv()
	cfg.SockName, cfg.Host = s.SockName, host
	ctx := context.Background()
	c, err := dialIBSim(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := discover.Discover(ctx, c, discover.Config{MaxHops: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res.IBNetDiscover.SMPs
}

var (
	progressLine = regexp.MustCompile(`(?m)^DR path .*\n`)
	smpsLine     = regexp.MustCompile(`(?m)^ibdiscover: (\d+) SMPs sent \(\d+ retries\); ibnetdiscover sends \d+ on this fabric$`)
)

// splitProgress separates -s's "DR path" lines (progressLine) from the
// rest of b.
func splitProgress(b []byte) (lines string, rest []byte) {
	lines, r := cutLines(string(b), "DR path ", nil)
	return lines, []byte(r)
}

// smpsSent is the SMP count ibdiscover -m reports on stderr.
func smpsSent(t *testing.T, stderr []byte) int {
	t.Helper()
	m := smpsLine.FindSubmatch(stderr)
	if m == nil {
		t.Fatalf("no SMP count on stderr: %q", stderr)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

var madsLine = regexp.MustCompile(`(?m)^# Total MADs used: (\d+)\n`)

// madsPrefix starts a madsLine.
const madsPrefix = "# Total MADs used: "

// stripMADs is s without its madsLine lines.
func stripMADs(s string) string {
	_, rest := cutLines(s, madsPrefix, digits)
	return rest
}

// madsUsed is the count of b's first madsLine, or -1.
func madsUsed(b []byte) int {
	lines, _ := cutLines(string(b), madsPrefix, digits)
	if lines == "" {
		return -1
	}
	first, _, _ := strings.Cut(lines, "\n")
	n, _ := strconv.Atoi(strings.TrimPrefix(first, madsPrefix))
	return n
}
