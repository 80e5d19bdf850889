//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// nueNet is a random irregular fabric (seeded) on which OpenSM's nue,
// with its one virtual layer, often reaches impasses: 16 to 32 12-port
// switches joined by a random spanning tree and nsw to 2*nsw random
// chords (so the channel dependency graph has many cycles to avoid), and
// two to four CAs on every switch (many destinations). The first CA,
// H0-0, is where OpenSM runs. (testdata/nue-impasse.net in pkg/routing
// is seed 8.)
func nueNet(seed int64) string {
	r := rand.New(rand.NewSource(seed))
	nsw := 16 + r.Intn(17)
	const ports = 12
	type end struct{ sw, port int }
	links := map[end]end{}
	linked := map[[2]int]bool{}
	next := make([]int, nsw)
	ncas := make([]int, nsw)
	for i := range next {
		ncas[i] = 2 + r.Intn(3)
		next[i] = ncas[i] + 1 // ports 1..ncas: the CAs
	}
	add := func(a, b int) {
		if a == b || next[a] > ports || next[b] > ports || linked[[2]int{a, b}] {
			return
		}
		linked[[2]int{a, b}], linked[[2]int{b, a}] = true, true
		ea, eb := end{a, next[a]}, end{b, next[b]}
		next[a]++
		next[b]++
		links[ea], links[eb] = eb, ea
	}
	for i := 1; i < nsw; i++ {
		add(i, r.Intn(i))
	}
	for k := nsw + r.Intn(nsw); k > 0; k-- {
		add(r.Intn(nsw), r.Intn(nsw))
	}
	var b strings.Builder
	for i := 0; i < nsw; i++ {
		fmt.Fprintf(&b, "switchguid=%#x\nSwitch\t%d \"S%d\"\n", 0x0a00000000001000+uint64(i)*0x100+uint64(r.Intn(200)), ports, i)
		for c := 0; c < ncas[i]; c++ {
			fmt.Fprintf(&b, "[%d]\t\"H%d-%d\"[1]\n", c+1, i, c)
		}
		for p := ncas[i] + 1; p < next[i]; p++ {
			f := links[end{i, p}]
			fmt.Fprintf(&b, "[%d]\t\"S%d\"[%d]\n", p, f.sw, f.port)
		}
		b.WriteString("\n")
	}
	for i := 0; i < nsw; i++ {
		for c := 0; c < ncas[i]; c++ {
			g := 0x0b00000000001000 + uint64(i)*0x100 + uint64(c)*0x10 + uint64(r.Intn(7))
			fmt.Fprintf(&b, "caguid=%#x\nCa\t1 \"H%d-%d\"\n[1](%x)\t\"S%d\"[%d]\n\n", g, i, c, g+1, i, c+1)
		}
	}
	return b.String()
}

// nueImpasse finds, in OpenSM's log (INFO), the destination LIDs for which
// nue's search reached an impasse: it backtracked, or it gave up and
// programmed its escape paths.
var nueImpasse = regexp.MustCompile(`(backtracking worked|fallback to escape paths) for destination LID (\d+)`)

// dumpRow is one LID line of an opensm-lid-matrix.dump.
type dumpRow struct {
	sw, lid string // "0x<guid>", "0x<lid>"
	line    string
}

// lidMatrixRows splits an opensm-lid-matrix.dump into its LID rows, keyed
// by switch GUID and LID.
func lidMatrixRows(dump string) map[string]dumpRow {
	rows := map[string]dumpRow{}
	sw := ""
	for _, line := range strings.Split(dump, "\n") {
		if g, ok := strings.CutPrefix(line, "Switch: guid "); ok {
			sw = g
			continue
		}
		if lid, _, ok := strings.Cut(line, ":"); ok {
			rows[sw+" "+lid] = dumpRow{sw, lid, line}
		}
	}
	return rows
}

// TestCompatNueDumpRandom compares ibhops --routing-engine nue with the
// opensm-lid-matrix.dump of opensm -R nue, every row byte for byte, on 24
// random irregular fabrics on which nue reaches impasses (nueNet; on
// seeds 1, 4, 8, 18 and 21 it backtracks, and on 1, 8 and 21 it also
// falls back to its escape paths), the odd seeds under LMC 1. For those
// destinations OpenSM records the hop counts of nue's search, not the
// lengths of the routes it programs: ibhops replays nue to know them (the
// rows differed before). --check-routes --routing-engine nue is clean on
// every fabric. NUE_SEEDS=FIRST-LAST runs other seeds.
func TestCompatNueDumpRandom(t *testing.T) {
	ibsimtest.Require(t)
	lo, hi := int64(1), int64(24)
	if v := os.Getenv("NUE_SEEDS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d-%d", &lo, &hi); err != nil {
			t.Fatalf("NUE_SEEDS=%q: want FIRST-LAST: %v", v, err)
		}
	}
	kinds := map[string]int{}
	for seed := lo; seed <= hi; seed++ {
		var smArgs []string
		if seed%2 == 1 {
			smArgs = []string{"-l", "1"}
		}
		net := ibsimtest.WriteNetFile(t, nueNet(seed))
		sim := ibsimtest.Start(t, net)
		dir := t.TempDir()
		log := sim.RunOpenSM(t, "H0-0", dir, append([]string{"-R", "nue"}, smArgs...)...)
		if !bytes.Contains(log, []byte("nue tables configured on all switches")) {
			t.Fatalf("seed %d: OpenSM did not route with nue:\n%s", seed, log)
		}
		want, err := os.ReadFile(filepath.Join(dir, "opensm-lid-matrix.dump"))
		if err != nil {
			t.Fatal(err)
		}
		impasses := 0
		for _, m := range nueImpasse.FindAllSubmatch(log, -1) {
			kinds[string(m[1])]++
			impasses++
		}
		base := []string{"--ibsim", "--ibsim-sockname", sim.SockName}
		// Both runs only read this ibsim after OpenSM's sweep: they share
		// one discovery of it.
		shared := newDiscoveries(t)
		out, stderr, code := runShared(t, shared, append(base, "--routing-engine", "nue")...)
		if code != 0 {
			t.Fatalf("seed %d: exit %d %s", seed, code, stderr)
		}
		w, g := lidMatrixRows(string(want)), lidMatrixRows(string(out))
		rowsDiffer := false
		for k, wr := range w {
			if gr, ok := g[k]; !ok {
				rowsDiffer = true
				t.Errorf("seed %d: switch %s LID %s: OpenSM's row %q, none in ours", seed, wr.sw, wr.lid, wr.line)
			} else if gr.line != wr.line {
				rowsDiffer = true
				t.Errorf("seed %d: switch %s LID %s:\nOpenSM %s\nours   %s", seed, wr.sw, wr.lid, wr.line, gr.line)
			}
		}
		for k, gr := range g {
			if _, ok := w[k]; !ok {
				rowsDiffer = true
				t.Errorf("seed %d: switch %s LID %s: our row %q, none in OpenSM's", seed, gr.sw, gr.lid, gr.line)
			}
		}
		if !bytes.Equal(out, want) && !rowsDiffer {
			t.Errorf("seed %d: the dump differs from OpenSM's (order):\n%s", seed, golden.LineDiff(string(want), string(out)))
		}
		t.Logf("seed %d %v: %d rows; nue reached %d impasses", seed, smArgs, len(w), impasses)
		// (The plain check, against min-hop, finds nue's detours longer.)
		out, stderr, code = runShared(t, shared, append(base, "--check-routes", "--json", "--routing-engine", "nue")...)
		var doc jsonCheck
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("seed %d: --check-routes: %v\n%s", seed, err, stderr)
		}
		if code != 0 || !doc.Summary.Clean || doc.Summary.Longer != 0 || doc.Summary.LIDs == 0 {
			t.Errorf("seed %d: --check-routes --routing-engine nue: exit %d %+v %s", seed, code, doc.Summary, stderr)
		}
		sim.Stop()
	}
	t.Logf("impasses: %v", kinds)
	// The fabrics must keep exercising both kinds of impasse.
	if lo == 1 && hi >= 24 && (kinds["backtracking worked"] == 0 || kinds["fallback to escape paths"] == 0) {
		t.Errorf("nue reached impasses %v on seeds 1-24: want both backtracking and escape paths", kinds)
	}
}
