package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestCompatLFTArgs: ibhops --lft takes what ibroute takes, with the same
// output byte for byte: a switch by LID with a LID range (decimal, hex,
// octal, from a start, past the end, empty, ending on a block boundary)
// and a switch by directed route (-D) with and without a range, on a fat
// tree and a 10-switch chain routed by OpenSM.
func TestCompatLFTArgs(t *testing.T) {
	ibsimtest.Require(t)
	for _, c := range []struct {
		net, host string
		args      [][]string // ibroute's arguments
	}{
		{"fattree2.net", "H0", [][]string{
			{"4"}, {"4", "10", "12"}, {"4", "0x10", "0x20"}, {"4", "10"}, {"4", "010", "012"},
			{"4", "5", "64"}, {"4", "70", "12"}, {"4", "0", "0"}, {"4", "3", "3"},
			{"-D", "0,1"}, {"-D", "0,1", "3", "5"}, {"-D", "0,1,5"}, {"-D", "0,1,5", "0x4"},
		}},
		{"chain10.net", "hA", [][]string{
			{"-D", "0,1,2,2,2,2"}, {"-D", "0,1,2,2,2,2", "2", "9"}, {"-D", "0,1"}, {"-D", "0,1,2", "1", "1"},
		}},
	} {
		t.Run(c.net, func(t *testing.T) {
			file, err := filepath.Abs(fabrics + c.net)
			if err != nil {
				t.Fatal(err)
			}
			sim := ibsimtest.Start(t, file)
			sim.RunOpenSM(t, c.host, t.TempDir())
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", c.host}
			for _, a := range c.args {
				theirs, terr, tcode := sim.RunTool(t, c.host, "ibroute", a...)
				if tcode != 0 {
					t.Fatalf("ibroute %v: exit %d: %s", a, tcode, terr)
				}
				ours := append([]string{}, base...)
				if a[0] == "-D" {
					ours = append(append(ours, "-D", "--lft", a[1]), a[2:]...)
				} else {
					ours = append(append(ours, "--lft", a[0]), a[1:]...)
				}
				out, stderr, code := runOurs(t, ours...)
				if code != 0 {
					t.Errorf("ibhops %v: exit %d: %s", ours, code, stderr)
					continue
				}
				if !bytes.Equal(out, theirs) {
					t.Errorf("ibhops %s differs from ibroute %s:\n%s", strings.Join(ours[len(base):], " "), strings.Join(a, " "), golden.LineDiff(string(theirs), string(out)))
				}
			}
			// A route to a CA is no switch (ibroute: "not a switch", 255).
			if _, _, tcode := sim.RunTool(t, c.host, "ibroute", "-D", "0"); tcode == 0 {
				t.Errorf("ibroute -D 0 (the CA attached to) succeeds")
			}
			if _, stderr, code := runOurs(t, append(base, "-D", "--lft", "0")...); code != exitcode.Usage || !strings.Contains(string(stderr), "is not a switch") {
				t.Errorf("-D --lft 0: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestCStrtoul: ibroute's LID arguments as C's strtoul(s, NULL, 0) reads
// them.
func TestCStrtoul(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"10", 10, true}, {"0x10", 16, true}, {"0X1f", 31, true}, {"010", 8, true}, {"0", 0, true},
		{" 12", 12, true}, {"+7", 7, true}, {"12abc", 12, true}, {"019", 1, true}, {"0x", 0, true},
		{"abc", 0, true}, {"-1", 0, false}, {"70000", 0, false}, {"0xffff", 0xffff, true},
	} {
		got, ok := cStrtoul(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("cStrtoul(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
