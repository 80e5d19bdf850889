//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// saPath gives OpenSM's PathRecord slid→dlid (p.record: from its whole
// table, some checked against saquery -p --src-to-dst slid:dlid),
// checks that it has that SLID and DLID, and returns its MTU and rate
// codes (selector bits stripped). offDiag: slid and dlid are not at the
// same offset in their ports' LID ranges.
func saPath(t *testing.T, p *prTable, slid, dlid uint16, offDiag bool) (mtu, rate uint8) {
	t.Helper()
	f, out := p.record(slid, dlid, offDiag)
	got := map[string]uint64{}
	for name, s := range f {
		switch name {
		case "mtu", "rate", "dlid", "slid":
			v, err := strconv.ParseUint(s, 0, 16)
			if err != nil {
				t.Fatalf("saquery field %s: %v", name, err)
			}
			got[name] = v
		}
	}
	if got["slid"] != uint64(slid) || got["dlid"] != uint64(dlid) {
		t.Fatalf("saquery %d:%d answered %v\n%s", slid, dlid, got, out)
	}
	return uint8(got["mtu"] & 0x3f), uint8(got["rate"] & 0x3f)
}

// portLIDs lists the LIDs of every CA port and switch, from our own
// links output, and which of them are CAs.
func portLIDs(t *testing.T, args []string) ([]uint16, map[uint16]bool) {
	t.Helper()
	stdout, stderr, code := runTool(t, append([]string{"links", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("links: exit %d\n%s", code, stderr)
	}
	return lidsOfLinks(t, stdout)
}

// sessionLIDs is portLIDs on the sweep of a pathSession: what `links
// --json` would print on that sweep, without a sweep of its own.
func sessionLIDs(t *testing.T, s *session) ([]uint16, map[uint16]bool) {
	t.Helper()
	b, err := json.Marshal(linksJSON(pathav.CheckLinks(s.res.Fabric, model.DefaultMaxOpVLs), "", nil))
	if err != nil {
		t.Fatal(err)
	}
	return lidsOfLinks(t, b)
}

// lidsOfLinks is portLIDs on the output of links --json.
func lidsOfLinks(t *testing.T, links []byte) ([]uint16, map[uint16]bool) {
	t.Helper()
	var doc struct {
		Links []struct{ A, B endJSON }
	}
	if err := json.Unmarshal(links, &doc); err != nil {
		t.Fatal(err)
	}
	seen, ca := map[uint16]bool{}, map[uint16]bool{}
	var lids []uint16
	for _, l := range doc.Links {
		for _, e := range []endJSON{l.A, l.B} {
			if e.LID != 0 && !seen[e.LID] {
				seen[e.LID] = true
				ca[e.LID] = e.Type == "ca"
				lids = append(lids, e.LID)
			}
		}
	}
	return lids, ca
}

// TestPathMatchesOpenSM: on fabrics with mixed link widths and speeds run
// by a live OpenSM, `ibavtrack path` gives the MTU and rate OpenSM's
// PathRecord gives, for every ordered pair of CA ports — and of switches,
// where OpenSM folds the switch's port 0 (MTUCap 1024 under ibsim).
func TestPathMatchesOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	fabrics := []struct{ file, smHost, saHost string }{
		{"testdata/pathmix.net", "hA", "hC"},
		{"../../testdata/fabrics/mixed.net", "H-0c42a10300000a00", "H-0002c90300000d00"},
	}
	for _, fb := range fabrics {
		t.Run(filepath.Base(fb.file), func(t *testing.T) {
			t.Parallel() // each fabric has its own ibsim and OpenSM
			abs, err := filepath.Abs(fb.file)
			if err != nil {
				t.Fatal(err)
			}
			s := ibsimtest.Start(t, abs, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
			s.StartOpenSM(t, fb.smHost)
			args := []string{"--ibsim-sockname", s.SockName, "--sim-host", fb.saHost}
			lids, isCA := portLIDs(t, args)
			if len(lids) < 5 {
				t.Fatalf("only %d LIDs: %v", len(lids), lids)
			}
			table := newPrTable(t, s, fb.saHost, fb.file, false).bySrcToDst()
			table.requireEveryPair(lids) // LMC 0
			pairs, caPairs := 0, 0
			r := newPathRunner(t, fb.file, len(lids)*(len(lids)-1), false, args...)
			for _, a := range lids {
				for _, b := range lids {
					if a == b {
						continue
					}
					stdout, stderr, code := r.path(a, b)
					if code != 0 {
						t.Fatalf("path %d %d: exit %d\n%s", a, b, code, stderr)
					}
					var doc struct{ AV avJSON }
					if err := json.Unmarshal(stdout, &doc); err != nil {
						t.Fatal(err)
					}
					mtu, rate := saPath(t, table, a, b, false)
					if doc.AV.MTU != mtu || doc.AV.Rate != rate {
						t.Errorf("path %d→%d: ours mtu %d rate %d (%g Gb/s, set by %s), OpenSM mtu %d rate %d",
							a, b, doc.AV.MTU, doc.AV.Rate, doc.AV.RateGbps, doc.AV.RateLimit, mtu, rate)
					}
					pairs++
					if isCA[a] && isCA[b] {
						caPairs++
					}
				}
			}
			if caPairs < 12 {
				t.Errorf("only %d CA pairs compared", caPairs)
			}
			t.Logf("%d pairs (%d CA pairs) compared with OpenSM's PathRecords", pairs, caPairs)
		})
	}
}

// TestWatchIbsimConsole: the watch works through a running ibsim too; the
// test cuts h2 off with ibsim's console (Unlink) between sweeps and brings
// it back (ReLink) with no SM running: the ports come back in Initialize,
// which carries no data, so h2 stays unreachable, naming the port (as
// smpquery shows its state and ibtracert refuses the route), until
// OpenSM activates the ports; then "reachable again" says what it was.
// (It said "reachable again", with nothing changed, as soon as the link
// was back in Initialize.)
func TestWatchIbsimConsole(t *testing.T) {
	ibsimtest.Require(t)
	abs, err := filepath.Abs("testdata/watch.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs, ibsimtest.WithConsole())
	s.RunOpenSM(t, "h1", t.TempDir())
	out, stderr, code := runTool(t, "path", "--ibsim-sockname", s.SockName, "--sim-host", "h1", "--json", "h1", "h2")
	var p struct{ AV struct{ SLID, DLID int } }
	if err := json.Unmarshal(out, &p); code != 0 || err != nil {
		t.Fatalf("path before: exit %d, %v\n%s", code, err, stderr)
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, _ *attach.Fabric) {
		switch sweep {
		case 0:
			s.Console(t, `Unlink "h2"[1]`)
		case 1:
			s.Console(t, `ReLink "h2"[1]`)
			// the real tools see the same: Initialize, and no route
			o, _, _ := s.RunTool(t, "h1", "smpquery", "-D", "portinfo", "0,1,3,3", "1")
			if !strings.Contains(string(o), "LinkState:.......................Initialize") {
				t.Errorf("smpquery of h2's port after ReLink:\n%s", o)
			}
			o, e, x := s.RunTool(t, "h1", "ibtracert", strconv.Itoa(p.AV.SLID), strconv.Itoa(p.AV.DLID))
			if x == 0 {
				t.Errorf("ibtracert to h2 in Initialize: exit 0\n%s%s", o, e)
			}
		case 2:
			s.RunOpenSM(t, "h1", t.TempDir())
		}
	}
	defer func() { afterSweep = nil }()
	stdout, stderr, code := runTool(t, "watch", "--ibsim-sockname", s.SockName, "--sim-host", "h1",
		"--interval", "1ms", "--count", "4", "h2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := scanLines(stdout)
	want := []string{
		// opensm --once has left: nobody answers the SA queries, the AV is
		// computed and says why.
		` h2: AV dlid \d+ slid \d+ sl 0 mtu 2048 rate (10|2\.5) Gb/s hops 3 via h1\[1\] sw1\[[23]\] sw2\[3\] \(computed: no PathRecord from the SA: .*did not answer.*\)$`,
		` h2: unreachable: not in the fabric; retired, still referenced: \[dlid \d+ .*: 1 ref\]$`,
		` h2: unreachable: port 3 of switch "sw2" is Initialize, not Active$`,
		` h2: reachable again \(was: port 3 of switch "sw2" is Initialize, not Active\): AV dlid \d+ slid \d+ sl 0 mtu 2048 rate (10|2\.5) Gb/s hops 3 \(computed: no PathRecord from the SA: .*\)$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s\n%s", len(lines), len(want), stdout, stderr)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], w)
		}
	}
}

// TestPathLMCMatchesOpenSM: with OpenSM running LMC 1 and 2 on a fabric
// whose two switches are joined by parallel links of different speeds,
// the path from S to D for every pair of LIDs, base and non-base (CA
// LIDs and switch LIDs), has the SLID, DLID, MTU and rate of OpenSM's
// PathRecord for S:D: each DLID is followed along its own route. Every
// pair is resolved as `ibavtrack path` resolves it (model.ResolveLID,
// pathav.ResolveLIDs on one discovery of the ibsim fabric); the command
// itself runs for a sample of pairs and must agree. A name or GUID means
// the base LID; watch follows the exact LIDs too.
func TestPathLMCMatchesOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	abs, err := filepath.Abs("../../testdata/fabrics/lmc.net")
	if err != nil {
		t.Fatal(err)
	}
	esp0, err := filepath.Abs("../ibhops/testdata/lmc_esp0.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		lmc  int
		esp0 bool // lmc_esp0: switch A's enhanced port 0 has the LMC too
	}{{1, false}, {2, false}, {2, true}} {
		lmc := v.lmc
		name := fmt.Sprintf("lmc%d", lmc)
		smArgs := []string{"-l", strconv.Itoa(lmc)}
		if v.esp0 {
			name += "-esp0"
			smArgs = append(smArgs, "-F", esp0)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each LMC has its own ibsim and OpenSM
			s := ibsimtest.Start(t, abs, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
			s.StartOpenSM(t, "h1", smArgs...)
			args := []string{"--ibsim-sockname", s.SockName, "--sim-host", "h2"}
			f, tabs := ibsimTables(t, s.SockName)
			var lids []uint16
			for l := uint32(1); l <= uint32(f.MaxLID()); l++ {
				p := f.PortByLID(uint16(l))
				if p == nil {
					continue
				}
				// CAs have 2^LMC LIDs; switches (base or enhanced port
				// 0) keep LMC 0 under OpenSM's default lmc_esp0 FALSE.
				want := uint8(lmc)
				if p.Node.IsSwitch() && (!v.esp0 || !p.Node.SwitchInfo.EnhancedPort0) {
					want = 0
				}
				if p.LMC() != want {
					t.Fatalf("LID %d: LMC %d, want %d", l, p.LMC(), want)
				}
				lids = append(lids, uint16(l))
			}
			want := 5<<lmc + 3
			if v.esp0 {
				want += 1<<lmc - 1
			}
			if len(lids) != want {
				t.Fatalf("%d LIDs (%v), want %d", len(lids), lids, want)
			}
			table := newPrTable(t, s, "h2", name, false).bySrcToDst()
			table.requireEveryPair(lids)
			offDiag := func(a, b uint16) bool { // OpenSM's src_offset != dest_offset
				return a-f.PortByLID(a).BaseLID() != b-f.PortByLID(b).BaseLID()
			}
			rates := map[uint8]bool{}
			pairs := 0
			for i, a := range lids {
				for j, b := range lids {
					if a == b {
						continue
					}
					if v.esp0 && !nonBaseSwitch(f, a) && !nonBaseSwitch(f, b) {
						continue // the other pairs were compared without lmc_esp0
					}
					src, slid, err := f.ResolveLID(strconv.Itoa(int(a)), nil)
					if err != nil {
						t.Fatal(err)
					}
					dst, dlid, err := f.ResolveLID(strconv.Itoa(int(b)), nil)
					if err != nil {
						t.Fatal(err)
					}
					p, err := pathav.ResolveLIDs(f, tabs, src, slid, dst, dlid)
					if err != nil {
						t.Fatalf("%d→%d: %v", a, b, err)
					}
					av := avJSONOf(&p.AV)
					if (i+2*j)%17 == 0 {
						// The command gives the same AV.
						stdout, stderr, code := runTool(t, append([]string{"path", "--json"}, append(args, strconv.Itoa(int(a)), strconv.Itoa(int(b)))...)...)
						if code != 0 {
							t.Fatalf("path %d %d: exit %d\n%s", a, b, code, stderr)
						}
						var doc struct{ AV avJSON }
						if err := json.Unmarshal(stdout, &doc); err != nil {
							t.Fatal(err)
						}
						if doc.AV != av {
							t.Errorf("path %d %d: command %+v, library %+v", a, b, doc.AV, av)
						}
					}
					mtu, rate := saPath(t, table, a, b, offDiag(a, b)) // checks SA's SLID and DLID
					if av.SLID != a || av.DLID != b || av.MTU != mtu || av.Rate != rate {
						t.Errorf("path %d→%d: ours slid %d dlid %d mtu %d rate %d (%g Gb/s, set by %s), OpenSM mtu %d rate %d",
							a, b, av.SLID, av.DLID, av.MTU, av.Rate, av.RateGbps, av.RateLimit, mtu, rate)
					}
					rates[rate] = true
					pairs++
				}
			}
			// The fabric is built so that the LIDs of one port see
			// different rates; a test that saw one rate tested nothing.
			// (With lmc_esp0 only pairs with a switch end are compared,
			// which see fewer rates.)
			if len(rates) < 3 && !(v.esp0 && len(rates) >= 2) {
				t.Errorf("only rates %v seen", rates)
			}
			// Names and GUIDs mean the base LID.
			stdout, stderr, code := runTool(t, append([]string{"path", "--json"}, append(args, "h1", "h3")...)...)
			if code != 0 {
				t.Fatalf("path h1 h3: exit %d\n%s", code, stderr)
			}
			var doc struct{ AV avJSON }
			if err := json.Unmarshal(stdout, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.AV.SLID%(1<<lmc) != 0 || doc.AV.DLID%(1<<lmc) != 0 {
				t.Errorf("path h1 h3: slid %d dlid %d, want base LIDs", doc.AV.SLID, doc.AV.DLID)
			}
			mtu, rate := saPath(t, table, doc.AV.SLID, doc.AV.DLID, offDiag(doc.AV.SLID, doc.AV.DLID))
			if doc.AV.MTU != mtu || doc.AV.Rate != rate {
				t.Errorf("path h1 h3: mtu %d rate %d, OpenSM %d %d", doc.AV.MTU, doc.AV.Rate, mtu, rate)
			}
			// watch follows the exact LIDs too: every non-base LID of h3
			// and h5 watched from the last LID of h1 (--src).
			var h1, dsts []uint16
			for _, name := range []string{"h1", "h3", "h5"} {
				stdout, stderr, code := runTool(t, append([]string{"path", "--json"}, append(args, name, name)...)...)
				if code != 0 {
					t.Fatalf("path %s: exit %d\n%s", name, code, stderr)
				}
				var d struct{ AV avJSON }
				if err := json.Unmarshal(stdout, &d); err != nil {
					t.Fatal(err)
				}
				for i := uint16(1); i < 1<<lmc; i++ {
					if name == "h1" {
						h1 = append(h1, d.AV.DLID+i)
					} else {
						dsts = append(dsts, d.AV.DLID+i)
					}
				}
			}
			src := h1[len(h1)-1]
			wargs := append([]string{"watch", "--json", "--count", "1", "--src", strconv.Itoa(int(src))}, args...)
			for _, d := range dsts {
				wargs = append(wargs, strconv.Itoa(int(d)))
			}
			stdout, stderr, code = runTool(t, wargs...)
			if code != 0 {
				t.Fatalf("watch: exit %d\n%s", code, stderr)
			}
			evs := scanLines(stdout)
			if len(evs) != len(dsts) {
				t.Fatalf("watch: %d events for %d destinations:\n%s", len(evs), len(dsts), stdout)
			}
			for i, line := range evs {
				var ev struct {
					Dst string `json:"target"`
					AV  *avJSON
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.AV == nil {
					t.Fatalf("watch event %q: %v", line, err)
				}
				mtu, rate := saPath(t, table, src, dsts[i], offDiag(src, dsts[i]))
				if ev.Dst != strconv.Itoa(int(dsts[i])) || ev.AV.SLID != src || ev.AV.DLID != dsts[i] || ev.AV.MTU != mtu || ev.AV.Rate != rate {
					t.Errorf("watch %s: slid %d dlid %d mtu %d rate %d; OpenSM for %d:%d mtu %d rate %d",
						ev.Dst, ev.AV.SLID, ev.AV.DLID, ev.AV.MTU, ev.AV.Rate, src, dsts[i], mtu, rate)
				}
			}
			t.Logf("LMC %d: %d LID pairs compared with OpenSM's PathRecords, rates %v", lmc, pairs, rates)
		})
	}
}

// ibsimTables discovers the ibsim fabric and reads its forwarding tables
// as the path command does.
func ibsimTables(t *testing.T, sock string) (*model.Fabric, *routing.Tables) {
	t.Helper()
	ctx := context.Background()
	set := attach.Settings{IBSim: true, IBSimSock: sock, Timeout: time.Second, Retries: 3, Outstanding: 8}
	fab, err := attach.Open(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fab.Close() })
	res, err := discover.Discover(ctx, fab, discover.Config{MaxHops: -1, Timeout: time.Second, Retries: 3})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v %v", err, res.Errors)
	}
	tabs, err := routing.Read(ctx, set.Querier(fab), res.Fabric, 4)
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, tabs
}

// nonBaseSwitch reports whether lid is a switch's LID other than its base.
func nonBaseSwitch(f *model.Fabric, lid uint16) bool {
	p := f.PortByLID(lid)
	return p != nil && p.Node.IsSwitch() && p.BaseLID() != lid
}

// TestWatchReattaches: ibsim restarted under the same name between two
// sweeps (the new one knows nothing of the watch's client): the watch
// attaches again and goes on, instead of failing every sweep while a
// fresh client works.
func TestWatchReattaches(t *testing.T) {
	ibsimtest.Require(t)
	abs, err := filepath.Abs("testdata/watch.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs)
	s.RunOpenSM(t, "h1", t.TempDir())
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, _ *attach.Fabric) {
		if sweep == 0 {
			s.Stop()
			s2 := ibsimtest.Start(t, abs, ibsimtest.WithSockName(s.SockName))
			s2.RunOpenSM(t, "h1", t.TempDir())
		}
	}
	defer func() { afterSweep = nil }()
	stdout, stderr, code := runTool(t, "watch", "--ibsim-sockname", s.SockName, "--sim-host", "h1",
		"--interval", "1ms", "--count", "3", "--json", "h2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// One event (h2's first AV): the restarted ibsim's fabric is the same.
	if lines := scanLines(stdout); len(lines) != 1 || !strings.Contains(lines[0], `"event":"new"`) {
		t.Errorf("events:\n%s", stdout)
	}
	msg := string(stderr)
	if strings.Count(msg, "ibsim went away (ended or restarted); attached again: ") != 1 || strings.Contains(msg, "discover failed") {
		t.Errorf("stderr, want one reattach and no failed sweep:\n%s", msg)
	}
}

// TestPortStateRuleIbsim: h2's link unplugged and plugged back with
// ibsim's console and no SM, so both its ends sit in Initialize. path
// refuses the route as ibtracert does (exit 4, naming the port; it
// printed an AV, exit 0); errors and watch --counters send no PMA query
// to h2 (it would be dropped at sw2[3] and counted there as
// PortXmitDiscards, which watch --counters then reported every sweep):
// the queries fail at once naming the port's state, counted as failures
// as ibqueryerrors counts its own, timed out there.
func TestPortStateRuleIbsim(t *testing.T) {
	ibsimtest.Require(t)
	abs, err := filepath.Abs("testdata/watch.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs, ibsimtest.WithConsole())
	s.RunOpenSM(t, "h1", t.TempDir())
	s.Console(t, `Unlink "h2"[1]`)
	s.Console(t, `ReLink "h2"[1]`)
	at := []string{"--ibsim-sockname", s.SockName, "--sim-host", "h1"}
	notActive := `port 3 of switch "sw2" is Initialize, not Active`

	out, stderr, code := runTool(t, append([]string{"path"}, append(at, "h1", "h2")...)...)
	if code != exitcode.Problem || !strings.Contains(string(stderr), notActive) || len(out) != 0 {
		t.Errorf("path to h2 in Initialize: exit %d, stdout %q, stderr %q; want %d and %q", code, out, stderr, exitcode.Problem, notActive)
	}

	out, stderr, code = runTool(t, append([]string{"watch", "--counters", "--interval", "1ms", "--count", "3"}, at...)...)
	if code != 0 || len(out) != 0 {
		t.Errorf("watch --counters: exit %d, stdout (counter increases):\n%s\nstderr:\n%s", code, out, stderr)
	}
	if want := `PortCounters query failed on "h2", lid 4 port 1: port 1 of CA "h2" is Initialize, not Active`; !strings.Contains(string(stderr), want) {
		t.Errorf("watch --counters stderr lacks %q:\n%s", want, stderr)
	}
	// errors: the same report as ibqueryerrors, whose queries to h2 time
	// out (no SM running: it skips its SA PathRecord query).
	empty := writeFile(t, "none", "")
	out, stderr, code = compareErrors(t, s, "h1", []string{"--skip-sl", "--threshold-file", empty, "-t", "200"}, "--threshold-file", empty)
	if code != exitcode.Partial || !bytes.Contains(out, []byte("2 PMA query failures")) || !strings.Contains(string(stderr), `is Initialize, not Active`) {
		t.Errorf("errors: exit %d\n%s%s", code, out, stderr)
	}
}
