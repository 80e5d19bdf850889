package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
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
