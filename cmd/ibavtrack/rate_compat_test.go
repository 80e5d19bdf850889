//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestRateOrderMatchesOpenSM lets a live OpenSM decide the rate order:
// on a star of 14 CAs, one per link rate from 2.5 to 120 Gb/s (1x to 12x,
// SDR to EDR, 2x and 8x included), the path between two CAs crosses just
// their two links, so OpenSM's PathRecord rate is the lower of the two
// by its own order. `ibavtrack path` must give the same for every pair,
// which decides every pair of ranks among these 14 rates (25 vs 30, 50
// vs 60, 100 vs 120 Gb/s: the 64/66-coded rate wins), not a unit table.
func TestRateOrderMatchesOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	abs, err := filepath.Abs("testdata/rates.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
	s.StartOpenSM(t, "h100")
	args := []string{"--ibsim-sockname", s.SockName, "--sim-host", "h120"}
	lids, isCA := portLIDs(t, args)
	var cas []uint16
	for _, l := range lids {
		if isCA[l] {
			cas = append(cas, l)
		}
	}
	if len(cas) != 14 {
		t.Fatalf("%d CA ports, want 14: %v", len(cas), cas)
	}
	table := newPrTable(t, s, "h120", "rates", false).bySrcToDst()
	table.requireEveryPair(lids) // LMC 0
	rates := map[uint8]bool{}    // OpenSM's answers
	r := newPathRunner(t, "rates", len(cas)*(len(cas)-1)/2, false, args...)
	for i, a := range cas {
		for _, b := range cas[i+1:] {
			stdout, stderr, code := r.path(a, b)
			if code != 0 {
				t.Fatalf("path %d %d: exit %d\n%s", a, b, code, stderr)
			}
			var doc struct{ AV avJSON }
			if err := json.Unmarshal(stdout, &doc); err != nil {
				t.Fatal(err)
			}
			_, rate := saPath(t, table, a, b, false)
			if doc.AV.Rate != rate {
				t.Errorf("path %d→%d: ours rate %d (%g Gb/s, set by %s), OpenSM's PathRecord rate %d (%v Gb/s)",
					a, b, doc.AV.Rate, doc.AV.RateGbps, doc.AV.RateLimit, rate, smp.RateGbps(rate))
			}
			rates[rate] = true
		}
	}
	t.Logf("%d CA pairs compared with OpenSM's PathRecords", len(cas)*(len(cas)-1)/2)
	// Every rate but the fastest is the lower one of some pair: 13
	// distinct answers show the links came up at the 14 rates.
	if len(rates) != 13 {
		t.Errorf("OpenSM answered %d distinct rates, want 13: %v", len(rates), rates)
	}
}
