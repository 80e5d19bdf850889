//go:build linux

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

var perfqueryField = regexp.MustCompile(`(?m)^(\w+):\.*(\d+|0x[0-9a-f]+)$`)

// perfquery runs the real perfquery (args: its options, LID and port)
// and returns its fields by name.
func perfquery(t *testing.T, s *ibsimtest.Sim, host string, args ...string) map[string]uint64 {
	t.Helper()
	out, errb, code := s.RunTool(t, host, "perfquery", args...)
	if code != 0 {
		t.Fatalf("perfquery %v: exit %d\n%s%s", args, code, out, errb)
	}
	m := map[string]uint64{}
	for _, f := range perfqueryField.FindAllStringSubmatch(string(out), -1) {
		v, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			t.Fatalf("perfquery %v: %q: %v", args, f[0], err)
		}
		m[f[1]] = v
	}
	if len(m) < 8 {
		t.Fatalf("perfquery %v: %d fields:\n%s", args, len(m), out)
	}
	return m
}

// TestClearErrorsKeepsData: `ibavtrack errors --clear-errors` resets the
// error counters and only them. The real perfquery, before and after,
// on a CA port and a switch port with injected errors and traffic: every
// error counter reads 0 after, and the data counters (PortCounters and
// PortCountersExtended) were not wiped (they are at least what they
// were).
func TestClearErrorsKeepsData(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, mustAbs(t, errorsNet), ibsimtest.WithConsole())
	const host = "H-h1"
	s.RunOpenSM(t, host, t.TempDir())
	for range 2 {
		s.RunTool(t, host, "ibnetdiscover") // traffic through h1 and sw1
	}
	for _, c := range []string{
		`PerformanceSet "H-h1"[1] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "H-h1"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "H-h1"[1] PortCounters.PortXmitWait=99`,
		`PerformanceSet "S-sw1"[1] PortCounters.LinkDownedCounter=2`,
		`PerformanceSet "S-sw1"[1] PortCounters.PortXmitDiscards=4`,
	} {
		s.Console(t, c)
	}
	// h1's port (perfquery's default) and sw1's port 1, by sw1's LID
	sw1 := neighbourLID(t, s, host)
	ports := [][]string{{}, {sw1, "1"}}
	dataNames := []string{"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"}
	errNames := []string{"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
		"PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
		"PortRcvConstraintErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitWait"}
	var before, beforeX []map[string]uint64
	for _, p := range ports {
		pc := perfquery(t, s, host, p...)
		before = append(before, pc)
		beforeX = append(beforeX, perfquery(t, s, host, append([]string{"-x"}, p...)...))
		nonzero := 0
		for _, n := range errNames {
			if pc[n] != 0 {
				nonzero++
			}
		}
		for _, n := range dataNames {
			if pc[n] == 0 {
				t.Fatalf("perfquery %v: %s is 0 before: the test moves no data", p, n)
			}
		}
		if nonzero < 2 {
			t.Fatalf("perfquery %v: %d error counters set before: %v", p, nonzero, pc)
		}
	}

	empty := writeFile(t, "none", "# no thresholds\n")
	if out, errb, code := runTool(t, "errors", "--ibsim", "--ibsim-sockname", s.SockName, "--sim-host", host, "--threshold-file", empty, "--clear-errors"); code != exitcode.OK {
		t.Fatalf("--clear-errors: exit %d\n%s%s", code, out, errb)
	}

	for i, p := range ports {
		pc := perfquery(t, s, host, p...)
		for _, n := range errNames {
			if pc[n] != 0 {
				t.Errorf("perfquery %v after --clear-errors: %s = %d, want 0", p, n, pc[n])
			}
		}
		for _, n := range dataNames {
			if pc[n] < before[i][n] {
				t.Errorf("perfquery %v after --clear-errors: %s = %d, was %d: data counters cleared", p, n, pc[n], before[i][n])
			}
		}
		x := perfquery(t, s, host, append([]string{"-x"}, p...)...)
		for _, n := range dataNames {
			if x[n] < beforeX[i][n] {
				t.Errorf("perfquery -x %v after --clear-errors: %s = %d, was %d: extended data counters cleared", p, n, x[n], beforeX[i][n])
			}
		}
	}
}

var ibaddrLID = regexp.MustCompile(`LID start (0x[0-9a-f]+)`)

// neighbourLID returns the LID of the node one hop from host (directed
// route 0,1), as the real ibaddr reports it.
func neighbourLID(t *testing.T, s *ibsimtest.Sim, host string) string {
	t.Helper()
	out, errb, code := s.RunTool(t, host, "ibaddr", "-D", "0,1")
	m := ibaddrLID.FindSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("ibaddr -D 0,1: exit %d\n%s%s", code, out, errb)
	}
	v, err := strconv.ParseUint(string(m[1]), 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v)
}
