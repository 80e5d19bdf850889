package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestNamesWithSpaces: a NodeDescription with leading or trailing spaces
// names its node exactly as written, spaces included; a name that
// matches nothing exactly is matched trimmed. The same through ibsim,
// whose NodeDescription SMPs carry the spaces.
func TestNamesWithSpaces(t *testing.T) {
	file, err := filepath.Abs(fabrics + "spaces.net")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		src, want string
		code      int
	}{
		{" spine one ", `1 hop: switch " spine one " lid 1 -> ca "host two " lid 4`, 0},
		{"spine one", `1 hop: switch " spine one " lid 1 -> ca "host two " lid 4`, 0},
		{" host one", `2 hops: ca " host one" lid 2 -> ca "host two " lid 4`, 0},
		{"host one", `2 hops: ca "host one" lid 3 -> ca "host two " lid 4`, 0},
		{"host one ", "ambiguous", exitcode.Usage},
		{"host two ", `0 hops: ca "host two " lid 4 -> ca "host two " lid 4`, 0},
		{" host two", `0 hops: ca "host two " lid 4 -> ca "host two " lid 4`, 0},
	}
	check := func(t *testing.T, base []string) {
		for _, tc := range cases {
			out, stderr, code := runOurs(t, append(base, tc.src, "host two")...)
			got := strings.TrimSpace(string(out))
			if code != tc.code {
				t.Errorf("%q: exit %d, want %d\n%s%s", tc.src, code, tc.code, out, stderr)
				continue
			}
			if tc.code != 0 {
				got = string(stderr)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%q: got %q, want %q", tc.src, got, tc.want)
			}
		}
	}
	t.Run("sim", func(t *testing.T) { check(t, []string{"--sim", file}) })
	t.Run("ibsim", func(t *testing.T) {
		ibsimtest.Require(t)
		sim := ibsimtest.Start(t, file)
		sim.RunOpenSM(t, "h1", t.TempDir())
		// OpenSM assigns its own LIDs: compare the names only.
		for i := range cases {
			if cases[i].code == 0 {
				cases[i].want = cases[i].want[strings.Index(cases[i].want, ":"):]
				cases[i].want = cases[i].want[:strings.Index(cases[i].want, " lid")]
			}
		}
		check(t, []string{"--ibsim", "--ibsim-sockname", sim.SockName})
	})
}
