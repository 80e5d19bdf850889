// Package clitest holds the assertions the commands' tests share: how a
// bad input must be reported, and that nothing was left behind.
package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// BadInput checks one run of tool on a bad input: exit status 2, one line
// on stderr starting "<tool>: " that contains input and msg, no stack
// trace, nothing on stdout.
func BadInput(t testing.TB, tool string, stdout, stderr []byte, code int, input, msg string) {
	t.Helper()
	if code != exitcode.Usage {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, stderr)
	}
	s := string(stderr)
	if strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, tool+": ") {
		t.Errorf("stderr is not one line starting %q:\n%s", tool+": ", s)
	}
	if !strings.Contains(s, input) || !strings.Contains(s, msg) {
		t.Errorf("stderr %q does not name %q and %q", s, input, msg)
	}
	if r := Repeated(tool, s); r != "" {
		t.Errorf("stderr %q says %q twice", s, r)
	}
	if strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("stack trace on stderr:\n%s", s)
	}
	if len(stdout) != 0 {
		t.Errorf("stdout not empty:\n%s", stdout)
	}
}

// packagePrefixes are the names of the suite's packages that prefix
// their errors ("sim: node not found"): a message for the user names the
// input instead.
var packagePrefixes = map[string]bool{"sim": true, "netfile": true, "umad": true, "ibsim": true, "transport": true,
	"attach": true, "discover": true, "model": true, "smp": true, "topology": true, "outfile": true}

// Repeated returns what the one-line message line ("tool: a: b: c")
// says twice, "" if nothing: a package's prefix ("sim:") where the input
// is named already, or a word of the input (the segment before the first
// ": ") or a quoted word that comes back in a later segment, as in
// "99: LID 99: not in the fabric". A "(did you mean ...)" is not looked
// at.
func Repeated(tool, line string) string {
	body := strings.TrimPrefix(strings.TrimSuffix(line, "\n"), tool+": ")
	if i := strings.Index(body, " (did you mean "); i >= 0 {
		body = body[:i] // a suggestion may well look like the input
	}
	segs := strings.Split(body, ": ")
	seen := map[string]int{}
	for i, seg := range segs {
		if i > 0 && packagePrefixes[seg] {
			return seg + ":"
		}
		quoted := map[string]bool{}
		for j, q := range strings.Split(seg, `"`) {
			if j%2 == 1 {
				quoted[q] = true
			}
		}
		for _, tok := range strings.FieldsFunc(seg, func(r rune) bool { return strings.ContainsRune(` "();`, r) }) {
			if len(tok) < 3 && !strings.ContainsAny(tok, "0123456789") {
				continue
			}
			if j, ok := seen[tok]; ok && j != i {
				return tok
			}
			if _, ok := seen[tok]; !ok && (i == 0 || quoted[tok]) {
				seen[tok] = i
			}
		}
	}
	return ""
}

// NoLeftovers fails t for every file in dir (hidden ones included) that
// is not one of keep.
func NoLeftovers(t testing.TB, dir string, keep ...string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	for _, p := range append(left, hidden...) {
		found := false
		for _, k := range keep {
			if filepath.Base(p) == k {
				found = true
			}
		}
		if !found {
			t.Errorf("left behind: %s", p)
		}
	}
}

// Skip skips t because something the test needs is missing here (a file,
// a command); with CI=true, where everything must be present, it fails
// instead.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// PeerTimeoutMS is the per-SMP timeout (-t) WithPeerTimeout gives our
// tools when a test points them at a running ibsim: generous and fixed,
// so a busy machine never looks like a lost SMP (a retry would also
// change the "Total MADs used" the compatibility tests compare).
const PeerTimeoutMS = "3000"

// WithPeerTimeout returns args with "-t PeerTimeoutMS" added at the end
// when they attach to ibsim (--ibsim, --ibsim-sockname) and set no
// timeout themselves.
func WithPeerTimeout(args []string) []string {
	peer := false
	for _, a := range args {
		switch {
		case a == "--":
			return args
		case a == "-t" || a == "--timeout" || strings.HasPrefix(a, "--timeout="):
			return args
		case a == "--ibsim" || a == "--ibsim-sockname" || strings.HasPrefix(a, "--ibsim-sockname="):
			peer = true
		}
	}
	if !peer {
		return args
	}
	return append(append([]string(nil), args...), "-t", PeerTimeoutMS)
}

// WriteFile writes content to dir/name and returns its path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// BadFiles are the bad input files every command is tried with.
type BadFiles struct {
	Net         string // a net file linking a port the switch does not have
	Topo        string // a topology file whose link names a bad port
	Map         string // a node name map with a bad GUID
	ZeroInclude string // a net file including /dev/zero (an endless input)
}

// WriteBadFiles writes the BadFiles into dir.
func WriteBadFiles(t testing.TB, dir string) BadFiles {
	t.Helper()
	return BadFiles{
		Net:         WriteFile(t, dir, "bad.net", "Switch 4 \"a\"\n[9] \"b\"[1]\n"),
		Topo:        WriteFile(t, dir, "bad.topo", "vendid=0x2c9\nswitchguid=0x10\nSwitch\t2 \"S-0000000000000010\"\t\t# \"x\" base port 0 lid 1 lmc 0\n[1]\t\"H-0000000000000020\"[1](21) \t\t# \"h\" lid 2 4xEDR\n"),
		Map:         WriteFile(t, dir, "bad.map", "0x1 good\n0xZZ bad\n"),
		ZeroInclude: WriteFile(t, dir, "zeroinc.net", "include \"/dev/zero\"\n"),
	}
}

// Names are the BadFiles' base names (for NoLeftovers).
func (BadFiles) Names() []string {
	return []string{"bad.net", "bad.topo", "bad.map", "zeroinc.net"}
}
