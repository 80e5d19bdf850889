package main

import (
	"bytes"
	"context"
	"github.com/ibfabric/ibdiag/internal/attach"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// ibnetdiscoverFlags are the options of ibnetdiscover 44, as its --help
// lists them (infiniband-diags 44.0, Debian): long name and letter.
var ibnetdiscoverFlags = [][2]string{
	{"full", "f"}, {"show", "s"}, {"list", "l"}, {"grouping", "g"},
	{"Hca_list", "H"}, {"Switch_list", "S"}, {"Router_list", "R"},
	{"node-name-map", ""}, {"cache", ""}, {"load-cache", ""}, {"diff", ""},
	{"diffcheck", ""}, {"ports", "p"}, {"max_hops", "m"},
	{"outstanding_smps", "o"}, {"config", "z"}, {"Ca", "C"}, {"Port", "P"},
	{"timeout", "t"}, {"m_key", "y"}, {"errors", "e"}, {"verbose", "v"},
	{"debug", "d"}, {"help", "h"}, {"version", "V"},
}

// ourNames are every flag name and alias ibdiscover takes.
func ourNames(t *testing.T) map[string]bool {
	t.Helper()
	app := newApp(nil, nil)
	app.Setup()
	names := map[string]bool{}
	for _, f := range append(app.Flags, cliapp.VersionFlag(), cliapp.ColorFlag()) {
		for _, n := range f.Names() {
			names[n] = true
		}
	}
	return names
}

// TestIBNetDiscoverFlags: every option of ibnetdiscover 44 is an option of
// ours, long name and letter alike.
func TestIBNetDiscoverFlags(t *testing.T) {
	names := ourNames(t)
	for _, f := range ibnetdiscoverFlags {
		for _, n := range f {
			if n != "" && !names[n] {
				t.Errorf("ibnetdiscover's option %q is not accepted", n)
			}
		}
	}
}

// TestIBNetDiscoverHelpFlags: the installed ibnetdiscover's --help lists
// no option we lack.
func TestIBNetDiscoverHelpFlags(t *testing.T) {
	ibsimtest.Require(t)
	path, err := exec.LookPath("ibnetdiscover")
	if err != nil {
		path = "/usr/sbin/ibnetdiscover"
	}
	var errb bytes.Buffer
	cmd := exec.Command(path, "--help")
	cmd.Stderr = &errb
	cmd.Run() // exits 2 after the usage
	names := ourNames(t)
	re := regexp.MustCompile(`(?m)^  --([A-Za-z_-]+)(?:, -([A-Za-z]))?`)
	found := re.FindAllStringSubmatch(errb.String(), -1)
	if len(found) < 20 {
		t.Fatalf("ibnetdiscover --help lists %d options:\n%s", len(found), errb.String())
	}
	for _, m := range found {
		for _, n := range m[1:] {
			if n != "" && !names[n] {
				t.Errorf("ibnetdiscover --help lists %q, which ibdiscover rejects", n)
			}
		}
	}
}

// TestScriptFlags: command lines written for ibnetdiscover run, and the
// flags that only change messages leave stdout as it was.
func TestScriptFlags(t *testing.T) {
	net := "../../testdata/fabrics/demo.net"
	want, _, code := runOurs(t, "--sim", net)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	conf := filepath.Join(t.TempDir(), "ibdiag.conf")
	if err := os.WriteFile(conf, []byte("# test\nCA=mlx5_0\nPort=1\ntimeout=500\nMLX_EPI=true\nm_key=0x0\nsa_key=0x1\nnd_format=x\nunknown=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-v", "-e", "-d"},
		{"-vvd"},
		{"--verbose", "--errors", "--debug"},
		{"--outstanding_smps", "4"},
		{"-o", "2", "-y", "0", "-z", conf},
		{"--m_key=0x0", "--config", conf, "-t", "200"},
	} {
		got, stderr, code := runOurs(t, append([]string{"--sim", net}, args...)...)
		// The header's "generated on" time has seconds: runs differ there.
		if code != 0 || stripDate(got) != stripDate(want) {
			t.Errorf("%v: exit %d, stderr %q; stdout differs: %v", args, code, stderr, stripDate(got) != stripDate(want))
		}
	}
	_, stderr, _ := runOurs(t, "--sim", net, "-v")
	if !strings.Contains(string(stderr), "ibdiscover: attached to embedded simulator") {
		t.Errorf("-v does not say what it attached to: %q", stderr)
	}
}

// TestConfigFileErrors: a config file named with -z must exist and parse;
// the message names the file (and line).
func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte("# x\n\ntimeout=soon\n"), 0o644)
	noeq := filepath.Join(dir, "noeq.conf")
	os.WriteFile(noeq, []byte("CA mlx5_0\n"), 0o644)
	long := filepath.Join(dir, "long.conf")
	os.WriteFile(long, []byte("# a line within the limit, shown cut\n"+strings.Repeat("x", 60000)+"\n"), 0o644)
	ctl := filepath.Join(dir, "ctl.conf")
	os.WriteFile(ctl, []byte("timeout=\x1b[2J\n"), 0o644)
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"-z", filepath.Join(dir, "none.conf")}, "ibdiscover: -z/--config " + filepath.Join(dir, "none.conf") + ": no such file or directory\n"},
		{[]string{"-z", bad}, "ibdiscover: " + bad + `:3: timeout "soon": want milliseconds 1..600000` + "\n"},
		{[]string{"--config", noeq}, "ibdiscover: " + noeq + `:1: "CA mlx5_0": not name=value` + "\n"},
		{[]string{"-z", dir}, "ibdiscover: " + dir + ": read " + dir + ": is a directory\n"},
		// an endless line: the option and the limit, not bufio's words
		{[]string{"-z", "/dev/zero"}, "ibdiscover: /dev/zero:1: line longer than 65536 bytes, the most a -z/--config file's line may have\n"},
		{[]string{"-z", long}, "ibdiscover: " + long + `:2: "` + strings.Repeat("x", 80) + `"... (60000 bytes): not name=value` + "\n"},
		{[]string{"-z", ctl}, "ibdiscover: " + ctl + `:1: timeout "\x1b[2J": want milliseconds 1..600000` + "\n"},
		{[]string{"-y", "key"}, "ibdiscover: -y/--m_key key: must be a 64-bit number (0x... hex, 0... octal or decimal)\n"},
	}
	for _, tt := range tests {
		out, stderr, code := runOurs(t, append([]string{"--sim", "../../testdata/fabrics/demo.net"}, tt.args...)...)
		if code != exitcode.Usage || string(stderr) != tt.msg || len(out) != 0 {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tt.args, code, stderr, exitcode.Usage, tt.msg)
		}
	}
	// The default file may be missing.
	t.Setenv("IBDIAG_CONFIG", filepath.Join(dir, "none.conf"))
	if _, stderr, code := runOurs(t, "--sim", "../../testdata/fabrics/demo.net"); code != 0 {
		t.Errorf("missing default config: exit %d %s", code, stderr)
	}
	// A timeout from the file applies where -t is not given.
	t.Setenv("IBDIAG_CONFIG", bad)
	if _, stderr, code := runOurs(t, "--sim", "../../testdata/fabrics/demo.net"); code != exitcode.Usage || !strings.Contains(string(stderr), bad+":3") {
		t.Errorf("bad default config: exit %d %s", code, stderr)
	}
}

// TestFailedSMPSummary: many failed SMPs are summarised (the first five,
// then counts per attribute and node); -e, -v and -d list every one.
func TestFailedSMPSummary(t *testing.T) {
	// (--fixed-timeout: no short first attempts, whose number depends on
	// the round trips measured, so the retry count is exact)
	args := []string{"--sim", "../../testdata/fabrics/deadhosts.net", "-t", "20", "--retries", "0", "--fixed-timeout"}
	_, stderr, code := runOurs(t, args...)
	if code != exitcode.Partial {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `ibdiscover: SMP failed: DR path 0,2 NodeInfo (Attr 0x11:0): recv sim: timed out
ibdiscover: SMP failed: DR path 0,3 NodeInfo (Attr 0x11:0): recv sim: timed out
ibdiscover: SMP failed: DR path 0,4 NodeInfo (Attr 0x11:0): recv sim: timed out
ibdiscover: SMP failed: DR path 0,5 NodeInfo (Attr 0x11:0): recv sim: timed out
ibdiscover: SMP failed: DR path 0,6 NodeInfo (Attr 0x11:0): recv sim: timed out
ibdiscover: 2 more SMPs failed (-e or -v lists every one); 7 in all:
ibdiscover:   by attribute: NodeInfo 7
ibdiscover:   by node: DR path 0 ("sw1") 7
ibdiscover: partial result printed: 7 SMPs failed, 0 ports not explored (0 retries)
`
	if string(stderr) != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	for _, f := range []string{"-e", "-v", "-d"} {
		_, stderr, _ := runOurs(t, append(args, f)...)
		if n := strings.Count(string(stderr), "SMP failed:"); n != 7 || strings.Contains(string(stderr), "more SMPs failed") {
			t.Errorf("%s: %d failed SMPs listed, want all 7:\n%s", f, n, stderr)
		}
	}
}

// TestEmptyFabricFile: a fabric file with no nodes is named with the
// problem, not as a --sim-host the user never gave.
func TestEmptyFabricFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, msg string }{
		{"empty.net", "", "empty file: no nodes"},
		{"comments.net", "# nothing\n\n  # here\n", "only comments and blank lines: no nodes"},
		{"binary.net", "\x00\x01\xfe\xff garbage", "not a text file: no nodes (want an ibsim net file or an ibnetdiscover topology file)"},
		{"text.net", "hello\nworld\n", "no node lines (Switch, Hca, Ca, Rt): not an ibsim net file or ibnetdiscover topology file"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := runOurs(t, "--sim", p)
		want := "ibdiscover: --sim " + p + ": " + tc.msg + "\n"
		if code != exitcode.Usage || string(stderr) != want || len(out) != 0 {
			t.Errorf("%s: exit %d, stderr %q, want %d and %q", tc.name, code, stderr, exitcode.Usage, want)
		}
	}
}

// TestUnwritableOutputStatus: an output file that cannot be created is
// exit status 2 with one line naming it, as ibdiscover(8) says.
func TestUnwritableOutputStatus(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "out")
	for _, args := range [][]string{{missing}, {"--cache", missing}} {
		_, stderr, code := runOurs(t, append([]string{"--sim", "../../testdata/fabrics/demo.net"}, args...)...)
		if code != exitcode.Usage || strings.Count(string(stderr), "\n") != 1 || !strings.Contains(string(stderr), missing) {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line naming the file", args, code, stderr, exitcode.Usage)
		}
	}
	man, err := os.ReadFile("../../man/ibdiscover.8")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(man), ".B 2\nBad arguments or bad input (options, a cache or other input file), or an\noutput file") {
		t.Error("ibdiscover(8) does not give exit 2 for an output file that cannot be created")
	}
}

// TestMaxNodesNamed: a discovery stopped by --max-nodes says so, naming
// the limit, and exits 3 (partial).
func TestMaxNodesNamed(t *testing.T) {
	// --sim refuses a file beyond --max-nodes before building it: open
	// the fabric without the limit, so that discovery meets it.
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		s.MaxNodes = 0
		return attach.Open(ctx, s)
	}
	defer func() { openFabric = old }()
	_, stderr, code := runOurs(t, "--sim", "../../testdata/fabrics/demo.net", "--max-nodes", "3")
	want := "ibdiscover: partial result printed: discovery stopped at the --max-nodes limit of 3 nodes (the fabric has more)\n"
	if code != exitcode.Partial || string(stderr) != want {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitcode.Partial, want)
	}
}

// TestHelpLayout: in -h every flag's usage starts by column 40 (the
// aliases of -o used to push them all to column 67) and no boolean says
// "(default: false)".
func TestHelpLayout(t *testing.T) {
	stdout, _, code := runOurs(t, "-h")
	if code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for _, line := range strings.Split(string(stdout), "\n") {
		if !strings.HasPrefix(line, "   -") {
			continue
		}
		names := strings.SplitN(strings.TrimPrefix(line, "   "), "  ", 2)
		col := 3 + len(names[0])
		if rest := strings.TrimLeft(strings.TrimPrefix(line, "   "+names[0]), " "); rest != "" {
			col = len(line) - len(rest)
		}
		if col > 40 {
			t.Errorf("usage at column %d: %s", col, line)
		}
		if strings.Contains(line, "(default: false)") {
			t.Errorf("says (default: false): %s", line)
		}
	}
}
