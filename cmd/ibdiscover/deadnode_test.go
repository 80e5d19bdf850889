package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestDeadNodeIBSim: through a real ibsim whose net file kills h2's only
// port (do Error "h2"[1] 100), ibdiscover reports the one failed SMP
// (NodeInfo at DR path 0,2) once on stderr, prints the rest of the fabric
// exactly as ibnetdiscover does, and exits 3 (partial), where
// ibnetdiscover exits 0.
func TestDeadNodeIBSim(t *testing.T) {
	net, err := filepath.Abs("../../testdata/fabrics/faults.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, net)
	theirs, terr, tcode := s.RunTool(t, "", "ibnetdiscover")
	if tcode != 0 {
		t.Fatalf("ibnetdiscover exit %d: %s", tcode, terr)
	}
	// libibnetdisc names the same SMP on stderr (and still exits 0).
	if !strings.Contains(string(terr), "DR path slid 0; dlid 0; 0,2 Attr 0x11:0") {
		t.Errorf("ibnetdiscover does not name the failed SMP: %s", terr)
	}

	for _, extra := range [][]string{nil, {"-o", "1"}, {"--retries", "0"}} {
		t.Run(fmt.Sprint(extra), func(t *testing.T) {
			args := append([]string{"--ibsim", "--ibsim-sockname", s.SockName}, extra...)
			ours, stderr, code := runOurs(t, args...)
			if code != exitcode.Partial {
				t.Errorf("exit %d, want %d (partial)\nstderr:\n%s", code, exitcode.Partial, stderr)
			}
			if o, th := stripDate(ours), stripDate(theirs); o != th {
				t.Errorf("stdout differs from ibnetdiscover's:\n%s", golden.LineDiff(th, o))
			}
			if !strings.Contains(string(ours), `"h1"`) || strings.Contains(string(ours), `"h2"`) {
				t.Errorf("want h1 and not h2 in the topology:\n%s", ours)
			}

			lines := strings.Split(strings.TrimSuffix(string(stderr), "\n"), "\n")
			var failed []string
			for _, l := range lines {
				if strings.Contains(l, "SMP failed") {
					failed = append(failed, l)
				}
			}
			// NodeInfo is attribute 0x11; the number as libibnetdisc gives it.
			node := fmt.Sprintf("DR path 0,2 NodeInfo (Attr 0x%x:0)", smp.AttrNodeInfo)
			if len(failed) != 1 || !strings.HasPrefix(failed[0], "ibdiscover: SMP failed: "+node+": ") {
				t.Errorf("want exactly one \"ibdiscover: SMP failed: %s: ...\" line, stderr:\n%s", node, stderr)
			}
			if len(lines) != 2 || !strings.HasPrefix(lines[1], "ibdiscover: partial result printed: 1 SMPs failed") {
				t.Errorf("want the failure and one summary line, stderr:\n%s", stderr)
			}
			if strings.Contains(string(stderr), "panic") || strings.Contains(string(stderr), "goroutine ") {
				t.Errorf("stack trace on stderr:\n%s", stderr)
			}
		})
	}
}
