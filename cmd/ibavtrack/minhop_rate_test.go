//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// TestPathSimRateAsOpenSMMinHop: on a fabric with one slow (4xDDR)
// link, `ibavtrack path --sim` (the embedded SM's routes) gives every
// ordered pair of CAs the rate saquery -p gives under OpenSM -R minhop
// on ibsim, and some pairs cross the slow link (issue 27 item 12: the
// embedded SM chose other equal-hop ports than minhop, so pairs OpenSM
// routes over the DDR link were reported at 100 Gb/s).
func TestPathSimRateAsOpenSMMinHop(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	file, err := filepath.Abs("testdata/slowlink.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, file, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
	s.StartOpenSM(t, "h1", "-R", "minhop")
	stdout, stderr, code := runTool(t, "links", "--json", "--ibsim-sockname", s.SockName, "--sim-host", "h1")
	if code != 0 {
		t.Fatalf("links: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Links []struct{ A, B endJSON }
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	lid := map[string]uint16{} // OpenSM's LID of each CA
	for _, l := range doc.Links {
		for _, e := range []endJSON{l.A, l.B} {
			if e.Type == "ca" {
				lid[e.Node] = e.LID
			}
		}
	}
	if len(lid) != 6 {
		t.Fatalf("CAs under OpenSM: %v, want h1..h6", lid)
	}
	ourRate := regexp.MustCompile(`(?m)^  Rate .* \(code (\d+)\)`)
	table := newPrTable(t, s, "h1", "minhop", false) // LMC 0
	slow := 0
	for a := 1; a <= 6; a++ {
		for b := 1; b <= 6; b++ {
			if a == b {
				continue
			}
			src, dst := "h"+strconv.Itoa(a), "h"+strconv.Itoa(b)
			out, errb, code := runTool(t, "path", "--sim", file, src, dst)
			m := ourRate.FindSubmatch(out)
			if code != 0 || m == nil {
				t.Fatalf("path --sim %s %s: exit %d\n%s%s", src, dst, code, out, errb)
			}
			ours, _ := strconv.Atoi(string(m[1]))
			f, sout := table.record(lid[src], lid[dst], false)
			want, err := strconv.ParseUint(f["rate"], 0, 8)
			if err != nil {
				t.Fatalf("saquery -p %s→%s: rate %q: %v\n%s", src, dst, f["rate"], err, sout)
			}
			want &= 0x3f
			if uint64(ours) != want {
				t.Errorf("%s→%s: path --sim rate code %d, OpenSM minhop's PathRecord %d", src, dst, ours, want)
			}
			if want == 6 { // 20 Gb/s: across the DDR link
				slow++
			}
		}
	}
	if slow == 0 {
		t.Error("no pair crosses the DDR link under OpenSM: the comparison proves little")
	}
	t.Logf("%d of 30 pairs at 20 Gb/s (across the DDR link)", slow)
}
