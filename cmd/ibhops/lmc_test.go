//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/model"
)

// TestCompatLMC runs OpenSM with LMC 1 and 2 on lmc.net (parallel links
// of different speeds, over which OpenSM spreads a port's LIDs) and
// checks, for pairs of LIDs base and non-base:
//   - --trace S D prints what ibtracert S D prints (the route of exactly
//     LID D);
//   - --routed S D counts the links of that route (ibtracert's hop lines)
//     and S D gives the least hops of the two ports, whichever of their
//     LIDs is named (on a quarter of the pairs);
//
// and that the dump equals OpenSM's and --check-routes follows every LID
// of every LMC range and finds OpenSM's routes clean.
func TestCompatLMC(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	file, err := filepath.Abs(fabrics + "lmc.net")
	if err != nil {
		t.Fatal(err)
	}
	for _, lmc := range []int{1, 2} {
		t.Run(fmt.Sprintf("lmc%d", lmc), func(t *testing.T) {
			t.Parallel() // each LMC has its own ibsim
			sim := ibsimtest.Start(t, file)
			dir := t.TempDir()
			sim.RunOpenSM(t, "h1", dir, "-l", strconv.Itoa(lmc))
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
			f, _ := ibsimFabric(t, sim.SockName)
			// Every run only reads this ibsim after OpenSM's sweep: they
			// share one discovery of it.
			shared := newDiscoveries(t)

			// Every LID, and which port owns it.
			var lids []uint16
			for _, p := range logicalPorts(f) {
				lo, hi := p.LIDRange()
				if !p.Node.IsSwitch() && hi-lo != uint16(1<<lmc-1) {
					t.Fatalf("%s: LIDs %d-%d under LMC %d", p.Node.Description(), lo, hi, lmc)
				}
				for l := lo; l <= hi; l++ {
					lids = append(lids, l)
				}
			}
			// Every LID of h1 to every LID, every LID to every LID of h3
			// (and of h5 under LMC 1).
			var pairs [][2]uint16
			for _, a := range lids {
				for _, b := range lids {
					pa, pb := f.PortByLID(a), f.PortByLID(b)
					if isHost(pa, "h1") || isHost(pb, "h3") || (lmc == 1 && isHost(pb, "h5")) {
						pairs = append(pairs, [2]uint16{a, b})
					}
				}
			}
			least := map[[2]*model.Port]int{} // the base LIDs' answer
			for k, p := range pairs {
				a, b := strconv.Itoa(int(p[0])), strconv.Itoa(int(p[1]))
				theirs, terr, tcode := sim.RunTool(t, "", "ibtracert", a, b)
				ours, oerr, ocode := runShared(t, shared, append(base, "--trace", a, b)...)
				if tcode != 0 || ocode != 0 {
					t.Fatalf("trace %s %s: ibtracert exit %d (%s), ibhops exit %d (%s)", a, b, tcode, terr, ocode, oerr)
				}
				if !bytes.Equal(ours, theirs) {
					t.Errorf("trace %s %s differs from ibtracert:\n%s", a, b, golden.LineDiff(string(theirs), string(ours)))
				}
				if k%4 != 0 {
					continue // the queries on a quarter of the pairs
				}
				links := bytes.Count(theirs, []byte("] -> "))
				if got := queryHops(t, shared, append(base, "--routed", "--json", a, b)...); got != links {
					t.Errorf("--routed %s %s: %d hops, ibtracert crosses %d links", a, b, got, links)
				}
				pa, pb := f.PortByLID(p[0]), f.PortByLID(p[1])
				want, ok := least[[2]*model.Port{pa, pb}]
				if !ok {
					want = queryHops(t, shared, append(base, "--json", strconv.Itoa(int(pa.BaseLID())), strconv.Itoa(int(pb.BaseLID())))...)
					least[[2]*model.Port{pa, pb}] = want
				}
				if p[0] == pa.BaseLID() && p[1] == pb.BaseLID() {
					continue
				}
				if got := queryHops(t, shared, append(base, "--json", a, b)...); got != want {
					t.Errorf("%s %s: %d hops, base LIDs give %d", a, b, got, want)
				}
			}
			t.Logf("LMC %d: %d LIDs, %d pairs traced", lmc, len(lids), len(pairs))

			out, stderr, code := runShared(t, shared, base...)
			want := readFile(t, filepath.Join(dir, "opensm-lid-matrix.dump"))
			if code != 0 || !bytes.Equal(out, want) {
				t.Errorf("dump: exit %d %s\n%s", code, stderr, golden.LineDiff(string(want), string(out)))
			}
			out, stderr, code = runShared(t, shared, append(base, "--check-routes", "--json")...)
			if code != 0 {
				t.Fatalf("--check-routes: exit %d\n%s%s", code, out, stderr)
			}
			var doc jsonCheck
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if !doc.Summary.Clean || doc.Summary.LIDs != len(lids) || doc.Summary.Routes != len(lids)*len(f.Switches()) {
				t.Errorf("--check-routes: %+v, want clean over %d LIDs", doc.Summary, len(lids))
			}
		})
	}
}

func isHost(p *model.Port, names ...string) bool {
	for _, n := range names {
		if p.Node.Description() == n {
			return true
		}
	}
	return false
}

// queryHops runs a SRC DST query with --json (with the discoveries of
// d) and returns its hop count (-1: no path).
func queryHops(t *testing.T, d *discoveries, args ...string) int {
	t.Helper()
	out, stderr, code := runShared(t, d, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var q jsonQuery
	if err := json.Unmarshal(out, &q); err != nil {
		t.Fatal(err)
	}
	if q.Hops == nil {
		return -1
	}
	return *q.Hops
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
