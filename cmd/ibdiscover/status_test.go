package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

const fabrics = "../../testdata/fabrics/"

// TestStatusRules: 3 only when something is missing; inconsistencies on
// a complete discovery warn (exit 0, as ibnetdiscover) or exit 6 with
// --strict; a partial run writes its files and names them on stderr.
func TestStatusRules(t *testing.T) {
	dir := t.TempDir()
	topo := filepath.Join(dir, "topo.txt")
	cache := filepath.Join(dir, "c.cache")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string // lines stderr must have, in order
	}{
		{"overlapping LIDs warn", []string{"--sim", fabrics + "overlap.topo", "--sim-sm=false"}, exitcode.OK,
			[]string{"ibdiscover: warning: contradiction: LID 4 of port 0x0000000000100003 already belongs to port 0x0000000000100001"}},
		{"--strict", []string{"--sim", fabrics + "overlap.topo", "--sim-sm=false", "--strict"}, exitcode.Inconsistent,
			[]string{"ibdiscover: warning: contradiction: LID 4", "ibdiscover: --strict: the fabric answered inconsistently (1 warning)"}},
		{"clean --strict", []string{"--sim", fabrics + "loop.net", "--strict"}, exitcode.OK, nil},
		{"partial names its files", []string{"--sim", fabrics + "faults.net", "--retries", "0", "-t", "50", "--cache", cache, topo}, exitcode.Partial,
			[]string{"ibdiscover: " + topo + " and " + cache + " hold a partial fabric (", "ibdiscover: partial result printed: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runOurs(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			s := string(stderr)
			for _, want := range tc.stderr {
				i := strings.Index(s, want)
				if i < 0 || (i > 0 && s[i-1] != '\n') {
					t.Errorf("stderr lacks a line starting %q:\n%s", want, stderr)
					continue
				}
				s = s[i:]
			}
			if tc.stderr == nil && len(stderr) != 0 {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
	for _, f := range []string{topo, cache} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("partial run did not write %s: %v", f, err)
		}
	}
}

// TestOverlappingLIDsIBSim: on a complete discovery of a fabric with
// overlapping LIDs (ibsim's Baselid gives two hosts LID 4), ibnetdiscover
// 44 exits 0; so does ibdiscover, with the same topology and a warning,
// and --strict makes it exit 6. Never 3: nothing is missing.
func TestOverlappingLIDsIBSim(t *testing.T) {
	ibsimtest.Require(t)
	loop, err := os.ReadFile(fabrics + "loop.net")
	if err != nil {
		t.Fatal(err)
	}
	net := ibsimtest.WriteNetFile(t, string(loop)+"\ndo Baselid \"sw1\"[0] 1\ndo Baselid \"h1\"[1] 4\ndo Baselid \"h2\"[1] 4\n")
	s := ibsimtest.Start(t, net)
	theirs, terr, tcode := s.RunTool(t, "", "ibnetdiscover")
	if tcode != 0 {
		t.Fatalf("ibnetdiscover exit %d: %s", tcode, terr)
	}
	if !strings.Contains(string(theirs), "lid 4") {
		t.Fatalf("the Baselid commands did not take:\n%s", theirs)
	}
	for _, strict := range []bool{false, true} {
		args := []string{"--ibsim", "--ibsim-sockname", s.SockName}
		want := exitcode.OK
		if strict {
			args = append(args, "--strict")
			want = exitcode.Inconsistent
		}
		ours, stderr, code := runOurs(t, args...)
		if code != want {
			t.Errorf("strict %v: exit %d, want %d\n%s", strict, code, want, stderr)
		}
		if o, th := stripDate(ours), stripDate(theirs); o != th {
			t.Errorf("strict %v: stdout differs from ibnetdiscover's:\n%s", strict, golden.LineDiff(th, o))
		}
		if !strings.HasPrefix(string(stderr), "ibdiscover: warning: contradiction: LID 4 of port ") {
			t.Errorf("strict %v: stderr %q", strict, stderr)
		}
	}
}
