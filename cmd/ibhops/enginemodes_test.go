//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// irregularNet is a ring of nsw 8-port switches with up to extra random
// chords (seeded), one CA H<i> on port 1 of each switch S<i>; CA i's port
// GUID is 0x0b00000000001001 + i*0x10.
func irregularNet(seed int64, nsw, extra int) string {
	r := rand.New(rand.NewSource(seed))
	type end struct{ sw, port int }
	links := map[end]end{}
	linked := map[[2]int]bool{}
	next := make([]int, nsw)
	for i := range next {
		next[i] = 2 // port 1: the CA
	}
	add := func(a, b int) {
		if a == b || next[a] > 8 || next[b] > 8 || linked[[2]int{a, b}] {
			return
		}
		linked[[2]int{a, b}], linked[[2]int{b, a}] = true, true
		ea, eb := end{a, next[a]}, end{b, next[b]}
		next[a]++
		next[b]++
		links[ea], links[eb] = eb, ea
	}
	for i := 0; i < nsw; i++ {
		add(i, (i+1)%nsw)
	}
	for k := 0; k < extra; k++ {
		add(r.Intn(nsw), r.Intn(nsw))
	}
	var b strings.Builder
	for i := 0; i < nsw; i++ {
		// (switch GUIDs out of ring order, so OpenSM's switch order is not the ring's)
		fmt.Fprintf(&b, "switchguid=%#x\nSwitch\t8 \"S%d\"\n[1]\t\"H%d\"[1]\n", 0x0a00000000001000+i*0x10+r.Intn(7), i, i)
		for p := 2; p < next[i]; p++ {
			f := links[end{i, p}]
			fmt.Fprintf(&b, "[%d]\t\"S%d\"[%d]\n", p, f.sw, f.port)
		}
		b.WriteString("\n")
	}
	for i := 0; i < nsw; i++ {
		fmt.Fprintf(&b, "caguid=%#x\nCa\t1 \"H%d\"\n[1](%x)\t\"S%d\"[1]\n\n", 0x0b00000000001000+i*0x10, i, 0x0b00000000001001+i*0x10, i)
	}
	return b.String()
}

// TestEngineFromTablesOneAnswer: on irregular fabrics OpenSM routed with
// nue, minhop or updn, --routing-engine dfsssp (and nue, sssp), whose
// matrix comes from the forwarding tables, gives one hop count per route
// in every mode: the SRC DST query and --switch's row for a CA LID are
// that LID's own row of the dump, which is the length of the route the
// tables program (--routed), and --check-routes finds no route longer.
// (The query and --switch derived a CA LID's hops from its switch's LID,
// whose route nue programs differently: one hop fewer than the route.)
func TestEngineFromTablesOneAnswer(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	const nsw = 11
	for _, seed := range []int64{1, 3} {
		net := ibsimtest.WriteNetFile(t, irregularNet(seed, nsw, 2*nsw))
		for _, routedBy := range []string{"nue", "minhop", "updn"} {
			t.Run(fmt.Sprintf("seed%d/%s", seed, routedBy), func(t *testing.T) {
				t.Parallel() // each its own ibsim, routed by its own OpenSM run
				sim := ibsimtest.Start(t, net)
				sim.RunOpenSM(t, "H0", t.TempDir(), "-R", routedBy)
				base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
				ca := func(i int) string { return fmt.Sprintf("%#016x", 0x0b00000000001001+i*0x10) }
				// Every run only reads this ibsim after OpenSM's sweep:
				// they share one discovery of it, and a route's length
				// (--routed, the same whatever --routing-engine the
				// others are given) is asked once, the first time.
				shared := newDiscoveries(t)
				routes := map[[2]int]jsonQuery{}
				for _, engine := range []string{"dfsssp", "nue", "sssp"} {
					stage := fmt.Sprintf("seed %d, routed by %s, --routing-engine %s", seed, routedBy, engine)
					out, stderr, code := runShared(t, shared, append(base, "--routing-engine", engine, "--check-routes")...)
					if code != 0 || !strings.Contains(string(out), "Longer than "+engine+" hops: 0\n") {
						t.Errorf("%s: --check-routes exit %d: %s\n%s", stage, code, stderr, out)
					}
					for _, i := range []int{1, 5} {
						// the switch H<i> hangs on: its CA LID rows
						js, stderr, code := runShared(t, shared, append(base, "--routing-engine", engine, "--json", "--switch", fmt.Sprintf("S%d", i))...)
						if code != 0 {
							t.Fatalf("%s: --switch exit %d: %s", stage, code, stderr)
						}
						var sw jsonSwitch
						if err := json.Unmarshal(js, &sw); err != nil {
							t.Fatal(err)
						}
						rowHops := map[uint16]int{}
						for _, d := range sw.Destinations {
							if d.Hops != nil {
								rowHops[d.LID] = *d.Hops
							}
						}
						for j := 0; j < nsw; j++ {
							if j == i {
								continue
							}
							var q jsonQuery
							r, asked := routes[[2]int{i, j}]
							for _, c := range []struct {
								args []string
								v    *jsonQuery
							}{{[]string{"--routing-engine", engine}, &q}, {[]string{"--routed"}, &r}} {
								if c.v == &r && asked {
									continue
								}
								b, stderr, code := runShared(t, shared, append(append(base, c.args...), "--json", ca(i), ca(j))...)
								if code != 0 {
									t.Fatalf("%s: %v query exit %d: %s", stage, c.args, code, stderr)
								}
								if err := json.Unmarshal(b, c.v); err != nil || c.v.Hops == nil {
									t.Fatalf("%s: %v query: %v %s", stage, c.args, err, b)
								}
							}
							routes[[2]int{i, j}] = r
							if *q.Hops != *r.Hops || rowHops[q.Dst.LID]+1 != *r.Hops {
								t.Errorf("%s: H%d -> H%d (LID %d): query %d hops, --switch row %d (+1), the route %d", stage, i, j, q.Dst.LID, *q.Hops, rowHops[q.Dst.LID], *r.Hops)
							}
						}
					}
				}
			})
		}
	}
}
