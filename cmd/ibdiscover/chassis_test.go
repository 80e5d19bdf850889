package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestCompatChassis compares -g with ibnetdiscover 44 byte for byte on
// fabrics of every chassis type libibnetdisc knows: Mellanox IS4 "MF0;"
// directors (spine and line slots, [ext N] ports, a line board type, a
// chip whose description names no slot), Topspin and InfiniCon slot
// bytes, Xsigo (Hostname, slot, scp), a generic two-CA server, Voltaire
// ISR9096/9288/4700/4700 x2/2012/4200/2004 chassis with sLB-24, sLB-24
// DDR, sLB-8, sLB-2024, sLB-4018 and sRB-2004 lines, and an IP router
// board in a Voltaire SRBD slot. The net files are generated (the
// generator's rules are in their comments).
func TestCompatChassis(t *testing.T) {
	ibsimtest.Require(t)
	for _, file := range []string{"chassis-vendors.net", "chassis-voltaire.net", "chassis-ipr.net"} {
		t.Run(file, func(t *testing.T) {
			sim := ibsimtest.Start(t, abs(t, filepath.Join("testdata", file)))
			for _, args := range [][]string{{"-g"}, {"-g", "-f"}, {}, {"-g", "-S"}, {"-p"}} {
				ours, oerr, code := runOurs(t, append(ibsimArgs(sim, ""), args...)...)
				if code != 0 {
					t.Fatalf("%v: ibdiscover exit %d: %s", args, code, oerr)
				}
				theirs, terr, tcode := sim.RunTool(t, "", "ibnetdiscover", append([]string{"-o", "1"}, args...)...)
				if tcode != 0 {
					t.Fatalf("%v: ibnetdiscover exit %d: %s", args, tcode, terr)
				}
				if o, th := stripDate(ours), stripDate(theirs); o != th {
					t.Errorf("%v: differs from ibnetdiscover:\n%s", args, golden.LineDiff(th, o))
				}
				if len(oerr) != 0 {
					t.Errorf("%v: stderr %q", args, oerr)
				}
			}
			// The caches are byte-identical, and -g from either cache
			// prints what ibnetdiscover prints from it.
			cs := makeCaches(t, sim, t.TempDir(), "chassis")
			ob, _ := os.ReadFile(cs.ours)
			tb, _ := os.ReadFile(cs.theirs)
			if !bytes.Equal(ob, tb) {
				t.Errorf("our cache (%d bytes) differs from ibnetdiscover's (%d bytes)", len(ob), len(tb))
			}
			for _, c := range []string{cs.ours, cs.theirs} {
				theirs, terr, tcode := ibnetdiscoverLoad(t, "--load-cache", c, "-g")
				ours, oerr, code := runOurs(t, "--load-cache", c, "-g")
				if code != 0 || tcode != 0 {
					t.Fatalf("--load-cache -g: exit %d (%s), ibnetdiscover %d (%s)", code, oerr, tcode, terr)
				}
				if o, th := stripDate(ours), stripDate(theirs); o != th {
					t.Errorf("--load-cache %s -g differs from ibnetdiscover:\n%s", filepath.Base(c), golden.LineDiff(th, o))
				}
			}
		})
	}
}

// TestChassisWhereIBNetDiscoverCrashes: on two Voltaire fabrics
// ibnetdiscover 44 dies in its chassis grouping (which it runs with or
// without -g): a switch with a router device ID and an unlinked port (a
// NULL dereference, fixed upstream in rdma-core 66fcb26ca, whose
// behaviour ibdiscover follows: the port is skipped), and an ISR4700
// with a CA on a spine port (no slot for it: libibnetdisc's grouping
// fails, ibnetdiscover 44 double-frees; upstream fails the discovery).
// ibdiscover prints the fabric; with -g the second one without chassis
// and with a warning.
func TestChassisWhereIBNetDiscoverCrashes(t *testing.T) {
	ibsimtest.Require(t)
	for _, tc := range []struct {
		file, warn string
	}{
		{"chassis-vrouter.net", ""},
		{"chassis-fail.net", "ibdiscover: warning: chassis grouping failed"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			sim := ibsimtest.Start(t, abs(t, filepath.Join("testdata", tc.file)))
			plain, _, code := runOurs(t, ibsimArgs(sim, "")...)
			if code != 0 {
				t.Fatalf("ibdiscover exit %d", code)
			}
			ours, oerr, code := runOurs(t, append(ibsimArgs(sim, ""), "-g")...)
			if code != 0 {
				t.Fatalf("-g: ibdiscover exit %d: %s", code, oerr)
			}
			if tc.warn == "" {
				if len(oerr) != 0 || !strings.Contains(string(ours), "Non-Chassis Nodes") {
					t.Errorf("-g: stderr %q, output:\n%s", oerr, ours)
				}
			} else {
				if !strings.Contains(string(oerr), tc.warn) {
					t.Errorf("-g: stderr %q, want %q", oerr, tc.warn)
				}
				// no chassis: the plain topology under "Non-Chassis Nodes"
				// (and -g's "\t# " after every switchguid)
				want := strings.Replace(stripDate(plain), "\n\n", "\n\nNon-Chassis Nodes\n\n", 1)
				want = switchGUIDLine.ReplaceAllString(want, "$0\t# ")
				if got := stripDate(ours); got != want {
					t.Errorf("-g without chassis differs:\n%s", golden.LineDiff(want, got))
				}
			}
			_, terr, tcode := sim.RunTool(t, "", "ibnetdiscover", "-o", "1", "-g")
			t.Logf("ibnetdiscover 44 -g: exit %d (%.120q)", tcode, terr)
		})
	}
}

var switchGUIDLine = regexp.MustCompile(`(?m)^switchguid=.*$`)
