//go:build linux

package main

import (
	"bytes"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestLinksMatchesIBLinkInfo: ibcheck links passes iblinkinfo's options
// through to pkg/linkinfo (whose own tests compare every option on every
// test fabric): on one ibsim fabric with different widths and speeds
// ("Could be" hints), before and after OpenSM, the command's output is
// iblinkinfo's byte for byte for each option.
func TestLinksMatchesIBLinkInfo(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, abs(t, fabrics+"mixed.net"))
	const host = "H-0c42a10300000a00"
	cases := [][]string{
		nil, {"-l"}, {"-p"}, {"-l", "-p"}, {"-d"}, {"--down", "-l"},
		{"--switches-only"}, {"--cas-only"},
		{"-S", "0x7cfe900300a0c000"}, {"-G", "0x7cfe900300a0b000"}, {"-D", "0,1"},
	}
	// A GUID no port has: iblinkinfo prints nothing on stdout and says
	// so on stderr (exit 0); ibcheck links prints nothing either and
	// exits 2 naming it.
	for _, g := range []string{"0xdead", "7cfe900300a0b000"} {
		want, _, _ := s.RunTool(t, host, "iblinkinfo", "-S", g)
		got, gerr, code := runTool(t, "links", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host, "-S", g)
		if len(want) != 0 || len(got) != 0 || code != 2 || len(gerr) == 0 {
			t.Errorf("-S %s: iblinkinfo printed %q, ibcheck links %q, exit %d (%s); want nothing printed, exit 2 with a message", g, want, got, code, gerr)
		}
	}
	for _, stage := range []string{"before the SM", "after OpenSM"} {
		if stage == "after OpenSM" {
			s.RunOpenSM(t, host, t.TempDir())
		}
		for _, opts := range cases {
			want, werr, wcode := s.RunTool(t, host, "iblinkinfo", opts...)
			if wcode != 0 {
				t.Fatalf("%s: iblinkinfo %v: exit %d: %s", stage, opts, wcode, werr)
			}
			args := append([]string{"links", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host}, opts...)
			got, gerr, code := runTool(t, args...)
			if code != 0 {
				t.Errorf("%s: ibcheck %v: exit %d: %s", stage, args, code, gerr)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: ibcheck links %v differs from iblinkinfo:\n%s", stage, opts, golden.LineDiff(string(want), string(got)))
			}
		}
	}
}
