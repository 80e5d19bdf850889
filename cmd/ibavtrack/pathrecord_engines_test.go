//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// saqueryPR asks OpenSM's SA for slid→dlid with saquery -p --slid --dlid
// and returns the dump's fields by name (hop_flow_raw, num_path_revers,
// mtu, rate, pkt_life keep their selector and packed bits).
//
// On lashTorus's fabric, shared by three tests that ask the same
// records, each record is asked once and its dump remembered.
func saqueryPR(t *testing.T, s *ibsimtest.Sim, host string, slid, dlid uint16) (map[string]string, []byte) {
	t.Helper()
	ask := func() []byte {
		out, errb, code := s.RunTool(t, host, "saquery", "-p", "--slid", strconv.Itoa(int(slid)), "--dlid", strconv.Itoa(int(dlid)))
		if code != 0 {
			t.Fatalf("saquery -p --slid %d --dlid %d: exit %d\n%s%s", slid, dlid, code, out, errb)
		}
		return out
	}
	saMemo.Lock()
	if !saMemo.shared[s] {
		saMemo.Unlock()
		out := ask()
		return saqueryFields(out), out
	}
	key := saMemoKey{s, host, slid, dlid}
	e := saMemo.out[key]
	if e == nil { // this test asks; one asking at the same time waits
		e = &saMemoEntry{done: make(chan struct{})}
		saMemo.out[key] = e
		saMemo.Unlock()
		func() {
			defer close(e.done) // also when ask fails the test
			e.out = ask()
			e.ok = true
		}()
	} else {
		saMemo.Unlock()
		<-e.done
		if !e.ok {
			t.Fatalf("saquery -p --slid %d --dlid %d failed in another test", slid, dlid)
		}
	}
	return saqueryFields(e.out), e.out
}

// saMemo holds saqueryPR's answers on the shared fabrics (lashTorus).
var saMemo struct {
	sync.Mutex
	shared map[*ibsimtest.Sim]bool
	out    map[saMemoKey]*saMemoEntry
	world  map[saMemoKey]*saWorldEntry // slid, dlid 0
}

type saMemoKey struct {
	sim        *ibsimtest.Sim
	host       string
	slid, dlid uint16
}

// saMemoEntry is one saquery's dump, there once done is closed (ok false:
// saquery failed).
type saMemoEntry struct {
	done chan struct{}
	out  []byte
	ok   bool
}

// lashTorus is testdata/fabrics/torus.net with OpenSM running lash at
// LMC 0 as a daemon attached at h00, and its log. Three tests compare
// ibavtrack with its SA there, from h01: TestPathRecordMatchesSaquery-
// PerEngine's torus4x4/lash/lmc0 (every PathRecord field), Test-
// PathSLMatchesSaquery/lash (the SL of path) and TestWatchSLMatchesSaquery
// (watch's AVs). They only read (SMP and SA Gets), so they share one
// ibsim and OpenSM (ibsimtest.SharedSA) and saqueryPR asks each record
// of OpenSM once for all three.
func lashTorus(t *testing.T) (*ibsimtest.Sim, string) {
	t.Helper()
	file, err := filepath.Abs("../../testdata/fabrics/torus.net")
	if err != nil {
		t.Fatal(err)
	}
	s, logPath := ibsimtest.SharedSA(t, file, "h00", lashTorusArgs, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
	saMemo.Lock()
	if saMemo.shared == nil {
		saMemo.shared, saMemo.out, saMemo.world = map[*ibsimtest.Sim]bool{}, map[saMemoKey]*saMemoEntry{}, map[saMemoKey]*saWorldEntry{}
	}
	saMemo.shared[s] = true
	saMemo.Unlock()
	return s, logPath
}

// lashTorusArgs are lashTorus's OpenSM options, as
// TestPathRecordMatchesSaqueryPerEngine gives them for lash at LMC 0.
var lashTorusArgs = []string{"-l", "0", "-R", "lash"}

// prTable answers saquery -p --slid S --dlid D for one fabric, OpenSM
// and asking host from one `saquery -p` with no selector: OpenSM's whole
// PathRecord table (pr_rcv_process_world), carried through ibsim by
// rmpp2sim (ibsimtest.RMPPShim). A rotating sixteenth of the pairs (at
// least one, and one off the diagonal when there is one) is asked by the
// single call as well, and the two dumps must agree field by field under
// OpenSM's rule (osm_sa_path_record.c): the world table calls
// pr_rcv_get_port_pair_paths for every pair of ports with an empty
// component mask, which builds every record as the single call does
// (pr_rcv_get_lid_pair_path, pr_rcv_build_pr: same requester port, no
// GIDs given, same path parameters) except Preference: the first loop
// walks the LID ranges of both ports together (src_offset ==
// dest_offset) with preference 0, the second the other LID pairs with
// preference 2, while the single call with SLID and DLID given makes the
// ranges one LID each and gets preference 0. So: every field equal, the
// world's Preference 2 off the diagonal and 0 on it, the single call's 0;
// dfsssp's SL is drawn at random per query (get_dfsssp_sl) and not
// compared. Without cc every pair is asked singly.
type prTable struct {
	t          *testing.T
	s          *ibsimtest.Sim
	host       string
	randomSL   bool
	world      map[[2]uint16]prRecord // nil: no rmpp2sim
	single     func(a, b uint16) (map[string]string, []byte)
	k, rot     int
	singles    int // pairs asked singly as well
	offDiag    int // pairs off the diagonal asked singly as well
	sawOffDiag bool
}

// prRecord is one PathRecord dump of saquery: its fields by name, and the
// dump.
type prRecord struct {
	f   map[string]string
	raw []byte
}

// newPrTable asks s's SA for its whole PathRecord table from host (once
// per Sim and host: lashTorus's is shared) and returns the prTable;
// label picks the rotation. randomSL: OpenSM runs dfsssp.
func newPrTable(t *testing.T, s *ibsimtest.Sim, host, label string, randomSL bool) *prTable {
	t.Helper()
	p := &prTable{t: t, s: s, host: host, randomSL: randomSL, rot: int(crc32.ChecksumIEEE([]byte(label)) % pathCommandEvery)}
	p.single = func(a, b uint16) (map[string]string, []byte) { return saqueryPR(t, s, host, a, b) }
	if s.Preload != "" {
		p.world = saqueryWorld(t, s, host)
	}
	t.Cleanup(func() {
		if t.Failed() || p.world == nil {
			return
		}
		if p.singles == 0 {
			t.Errorf("%s: no PathRecord of the table was checked against saquery's single answer", label)
		}
		if p.sawOffDiag && p.offDiag == 0 {
			t.Errorf("%s: no PathRecord off the LID diagonal was checked against saquery's single answer", label)
		}
	})
	return p
}

// bySrcToDst makes p's single call `saquery -t 5000 -p --src-to-dst
// a:b`, which asks what --slid a --dlid b does (saquery.c sets the
// query's SLID and DLID from it), and returns p.
func (p *prTable) bySrcToDst() *prTable {
	t, s, host := p.t, p.s, p.host
	p.single = func(a, b uint16) (map[string]string, []byte) {
		t.Helper()
		out, errb, code := s.RunTool(t, host, "saquery", "-t", "5000", "-p", "--src-to-dst", fmt.Sprintf("%d:%d", a, b))
		if code != 0 {
			t.Fatalf("saquery -p --src-to-dst %d:%d: exit %d\n%s%s", a, b, code, out, errb)
		}
		return saqueryFields(out), out
	}
	return p
}

// requireEveryPair fails the test unless the table holds one record for
// every ordered pair of lids and no other: a record that came through
// rmpp2sim damaged would be missing or extra.
func (p *prTable) requireEveryPair(lids []uint16) {
	p.t.Helper()
	if p.world == nil {
		return
	}
	for _, a := range lids {
		for _, b := range lids {
			if _, ok := p.world[[2]uint16{a, b}]; !ok {
				p.t.Fatalf("saquery -p: no PathRecord %d→%d in OpenSM's table", a, b)
			}
		}
	}
	if len(p.world) != len(lids)*len(lids) {
		p.t.Fatalf("saquery -p: %d PathRecords for %d LIDs (%d pairs)", len(p.world), len(lids), len(lids)*len(lids))
	}
}

// record returns saquery -p --slid a --dlid b's fields and dump: the
// world table's record, with the Preference the single call gives.
// offDiag: a and b are not at the same offset in their ports' LID ranges.
func (p *prTable) record(a, b uint16, offDiag bool) (map[string]string, []byte) {
	t := p.t
	t.Helper()
	if p.world == nil {
		return p.single(a, b)
	}
	k := p.k
	p.k++
	w, ok := p.world[[2]uint16{a, b}]
	if !ok {
		t.Fatalf("saquery -p: no PathRecord %d→%d in OpenSM's table of %d", a, b, len(p.world))
	}
	wantPref := "0x0"
	if offDiag {
		wantPref = "0x2"
		p.sawOffDiag = true
	}
	if w.f["preference"] != wantPref {
		t.Fatalf("saquery -p: PathRecord %d→%d has preference %s, want %s (off the LID diagonal: %v)\n%s", a, b, w.f["preference"], wantPref, offDiag, w.raw)
	}
	if k%pathCommandEvery == p.rot || (offDiag && p.offDiag == 0) {
		f, raw := p.single(a, b)
		p.singles++
		if offDiag {
			p.offDiag++
		}
		var diffs []string
		for name := range mergeKeys(f, w.f) {
			switch {
			case name == "preference":
				if f[name] != "0x0" {
					diffs = append(diffs, "single call's preference "+f[name]+", want 0x0")
				}
			case name == "sl" && p.randomSL:
			case f[name] != w.f[name]:
				diffs = append(diffs, fmt.Sprintf("%s: single %q, table %q", name, f[name], w.f[name]))
			}
		}
		if diffs != nil {
			sort.Strings(diffs)
			t.Fatalf("saquery -p %d→%d: the table's record is not the single call's: %s\ntable:\n%s\nsingle:\n%s", a, b, strings.Join(diffs, "; "), w.raw, raw)
		}
	}
	f := maps.Clone(w.f)
	f["preference"] = "0x0"
	return f, w.raw
}

func mergeKeys(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// saqueryWorld runs saquery -p with no selector at host and returns its
// records by SLID and DLID (each pair once); lashTorus's is asked once.
func saqueryWorld(t *testing.T, s *ibsimtest.Sim, host string) map[[2]uint16]prRecord {
	t.Helper()
	ask := func() map[[2]uint16]prRecord {
		out, errb, code := s.RunTool(t, host, "saquery", "-p")
		if code != 0 {
			t.Fatalf("saquery -p: exit %d\n%s", code, errb)
		}
		const head = "PathRecord dump:\n"
		if !bytes.HasPrefix(out, []byte(head)) {
			t.Fatalf("saquery -p: no PathRecord:\n%.2000s", out)
		}
		m := map[[2]uint16]prRecord{}
		for _, rec := range bytes.Split(out[len(head):], []byte(head)) {
			f := saqueryFields(rec)
			slid, err1 := strconv.ParseUint(f["slid"], 0, 16)
			dlid, err2 := strconv.ParseUint(f["dlid"], 0, 16)
			key := [2]uint16{uint16(slid), uint16(dlid)}
			if err1 != nil || err2 != nil || len(f) != 16 {
				t.Fatalf("saquery -p: a record of %d fields:\n%s", len(f), rec)
			}
			if _, dup := m[key]; dup {
				t.Fatalf("saquery -p: PathRecord %d→%d twice", slid, dlid)
			}
			m[key] = prRecord{f, append([]byte(head), rec...)}
		}
		return m
	}
	saMemo.Lock()
	if !saMemo.shared[s] {
		saMemo.Unlock()
		return ask()
	}
	key := saMemoKey{s, host, 0, 0}
	e := saMemo.world[key]
	if e == nil {
		e = &saWorldEntry{done: make(chan struct{})}
		saMemo.world[key] = e
		saMemo.Unlock()
		func() {
			defer close(e.done)
			e.m = ask()
		}()
	} else {
		saMemo.Unlock()
		<-e.done
		if e.m == nil {
			t.Fatal("saquery -p failed in another test")
		}
	}
	return e.m
}

// saWorldEntry is one saqueryWorld answer, there once done is closed (nil:
// it failed).
type saWorldEntry struct {
	done chan struct{}
	m    map[[2]uint16]prRecord
}

// saqueryFields returns the "name.....value" lines of saquery's record
// dump by name: a line of optional blanks, a name of [a-z_0-9], two dots
// or more, a value without blanks and optional trailing blanks (the
// regexp `(?m)^\s*([a-z_0-9]+)\.{2,}(\S+)\s*$`, without a regexp's cost
// on thousands of dumps). A name seen twice keeps its last value.
func saqueryFields(out []byte) map[string]string {
	f := map[string]string{}
	for len(out) > 0 {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i], out[i+1:]
		} else {
			out = nil
		}
		line = bytes.TrimLeft(line, " \t\r\f\v")
		line = bytes.TrimRight(line, " \t\r\f\v")
		n := 0
		for n < len(line) && (line[n] >= 'a' && line[n] <= 'z' || line[n] >= '0' && line[n] <= '9' || line[n] == '_') {
			n++
		}
		d := n
		for d < len(line) && line[d] == '.' {
			d++
		}
		if n == 0 || d-n < 2 || d == len(line) || bytes.ContainsAny(line[d:], " \t\r\f\v") {
			continue
		}
		f[string(line[:n])] = string(line[d:])
	}
	return f
}

// randomNet writes an ibsim net file of n switches joined by a random
// spanning tree plus extra random links (seeded: the same graph every
// run), one CA per switch; it has no regular structure.
func randomNet(t *testing.T, n, extra int, seed int64) string {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	const ports = 8
	next := make([]int, n) // next free port; port 1 is the CA's
	for i := range next {
		next[i] = 2
	}
	links := make([][]string, n)
	link := func(a, b int) bool {
		if a == b || next[a] > ports || next[b] > ports {
			return false
		}
		links[a] = append(links[a], fmt.Sprintf("[%d] \"rs%d\"[%d]", next[a], b, next[b]))
		links[b] = append(links[b], fmt.Sprintf("[%d] \"rs%d\"[%d]", next[b], a, next[a]))
		next[a]++
		next[b]++
		return true
	}
	for i := 1; i < n; i++ {
		for !link(i, r.Intn(i)) {
		}
	}
	for k := 0; k < extra; k++ {
		link(r.Intn(n), r.Intn(n))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# random irregular graph: %d switches, seed %d\n", n, seed)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\nswitchguid=0x%x\nSwitch %d \"rs%d\"\n[1] \"rh%d\"[1]\n%s\n", 0x500000+i, ports+1, i, i, strings.Join(links[i], "\n"))
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\ncaguid=0x%x\nHca 1 \"rh%d\"\n[1] \"rs%d\"[1]\n", 0x600000+2*i, i, i)
	}
	p := filepath.Join(t.TempDir(), "random.net")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// torus2QoSConf is torus-2QoS.conf(5) for testdata/fabrics/torus.net: a
// 4x4x1 torus seeded at s00 (GUID 0x300000), whose x+ neighbour is s10,
// x- s30, y+ s01 and y- s03.
const torus2QoSConf = `torus 4 4 1
xp_link 0x300000 0x300010
xm_link 0x300000 0x300030
yp_link 0x300000 0x300001
ym_link 0x300000 0x300003
`

// TestPathRecordMatchesSaqueryPerEngine: for every OpenSM 3.3.23 routing
// engine that assigns SLs (dfsssp, sssp, lash; torus-2QoS on the 4x4
// torus with its torus-2QoS.conf), at LMC 0, 1 and 2, on a torus, a fat
// tree and a seeded random irregular graph, with OpenSM running as a
// daemon: for every ordered pair of CAs (at LMC 1 and 2 one pair of LIDs
// of their ranges, rotating so every LID is a source and a destination),
// every PathRecord field `ibavtrack path --json --check` reports
// equals saquery -p --slid S --dlid D's, its AV is the SA's, and the AV
// it computes from the forwarding tables agrees (same MTU and rate, no
// problem). OpenSM's records come from one `saquery -p` per
// configuration (its whole table, with a record for every pair of LIDs),
// a rotating sixteenth of them checked against the single call
// (prTable). Each configuration's pairs are answered on one sweep, a
// rotating sixteenth of them by the whole command (pathRunner). dfsssp's SL is not compared (OpenSM 3.3.23 picks it with
// rand() per query among balanced lanes) — only that it maps to a VL
// every hop carries (no --check problem). An engine OpenSM cannot run
// on a fabric fails the test with OpenSM's log. It reports the pairs
// compared and its wall time (docs/performance.md, "The test suite",
// has what it costs).
func TestPathRecordMatchesSaqueryPerEngine(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	abs := func(name string) string {
		p, err := filepath.Abs("../../testdata/fabrics/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	type fabric struct{ name, file, smHost, host string }
	fabrics := []fabric{
		{"torus4x4", abs("torus.net"), "h00", "h01"},
		{"fattree", abs("fattree2.net"), "H0", "H1"},
		{"random", randomNet(t, 8, 6, 24), "rh0", "rh1"},
	}
	conf := filepath.Join(t.TempDir(), "torus-2QoS.conf")
	if err := os.WriteFile(conf, []byte(torus2QoSConf), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var pairsTotal atomic.Int64
	for _, fab := range fabrics {
		engines := [][]string{{"-R", "dfsssp"}, {"-R", "sssp"}, {"-R", "lash"}}
		if fab.name == "torus4x4" {
			engines = append(engines, []string{"-R", "torus-2QoS", "-Q", "--torus_config", conf})
		}
		for _, eng := range engines {
			for lmc := 0; lmc <= 2; lmc++ {
				fab, eng, lmc := fab, eng, lmc
				t.Run(fmt.Sprintf("%s/%s/lmc%d", fab.name, eng[1], lmc), func(t *testing.T) {
					t.Parallel() // each its own ibsim and OpenSM
					n := comparePathRecords(t, fab.file, fab.smHost, fab.host, eng[1], lmc, append([]string{"-l", strconv.Itoa(lmc)}, eng...))
					pairsTotal.Add(int64(n))
				})
			}
		}
	}
	t.Cleanup(func() { t.Logf("%d pairs compared in %v", pairsTotal.Load(), time.Since(start).Round(time.Second)) })
}

// comparePathRecords runs one configuration and returns the number of
// pairs compared.
func comparePathRecords(t *testing.T, file, smHost, host, engine string, lmc int, smArgs []string) int {
	t0 := time.Now()
	var s *ibsimtest.Sim
	var logPath string
	if filepath.Base(file) == "torus.net" && smHost == "h00" && slices.Equal(smArgs, lashTorusArgs) {
		s, logPath = lashTorus(t) // shared with two other tests
	} else {
		s = ibsimtest.Start(t, file, ibsimtest.WithPreload(ibsimtest.RMPPShim(t)))
		logPath = s.StartOpenSM(t, smHost, smArgs...)
	}
	// OpenSM says which engine configured the switches
	// (osm_ucast_mgr_process: "<engine> tables configured on all
	// switches"); an engine that could not route falls back to minhop, a
	// failure shown with OpenSM's words.
	osmLog, _ := os.ReadFile(logPath)
	// torus-2QoS may say so for the part of the fabric its torus.conf
	// describes: it then also says what it left out.
	partial := regexp.MustCompile(`Could not construct torus|Missing torus|non-torus fabric|No routing engine able`)
	if !strings.Contains(string(osmLog), engine+" tables configured on all switches") || partial.Match(osmLog) {
		lines := regexp.MustCompile(`(?m)^.*(?:ERR|rout|tables configured|torus|lash|sssp).*$`).FindAll(osmLog, 60)
		t.Fatalf("OpenSM -R %s did not route %s; its log says:\n%s", engine, filepath.Base(file), bytesJoin(lines))
	}
	base := []string{"--ibsim-sockname", s.SockName, "--sim-host", host}
	sess := pathSession(t, base...) // one sweep: the LIDs and the pairs
	lids, isCA := sessionLIDs(t, sess)
	var cas []uint16 // base LIDs
	for _, l := range lids {
		if isCA[l] {
			cas = append(cas, l)
		}
	}
	// Every ordered pair of CAs, at LMC 1 and 2 with one LID pair of
	// their ranges each, rotating so that every LID of every range is a
	// source and a destination: all 2^2LMC combinations of every pair
	// would take the package past go test's 10 minutes under -race.
	// IBDIAG_TEST_ALL_LID_PAIRS=1 compares every combination (17,856
	// pairs, about 4 minutes without -race).
	type pair struct {
		a, b    uint16
		offDiag bool // not at the same offset in their LID ranges
	}
	var todo []pair
	n := 1 << lmc
	all := os.Getenv("IBDIAG_TEST_ALL_LID_PAIRS") == "1"
	for ai, A := range cas {
		for bi, B := range cas {
			if all {
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						todo = append(todo, pair{A + uint16(i), B + uint16(j), i != j})
					}
				}
				continue
			}
			i, j := (ai+bi)%n, (ai+bi+bi/n)%n
			todo = append(todo, pair{A + uint16(i), B + uint16(j), i != j})
		}
	}
	type doc struct {
		AV         avJSON
		AVSource   string          `json:"av_source"`
		PathRecord *pathRecordJSON `json:"path_record"`
		ComputedAV avJSON          `json:"computed_av"`
		Problems   []avProblemJSON
	}
	num := func(f map[string]string, name string) uint64 {
		v, err := strconv.ParseUint(f[name], 0, 32)
		if err != nil {
			t.Fatalf("saquery field %s=%q: %v", name, f[name], err)
		}
		return v
	}
	pr := newPathRunnerOn(t, sess, fmt.Sprint(file, engine, lmc), len(todo), true, base...)
	table := newPrTable(t, s, host, fmt.Sprint(file, engine, lmc), engine == "dfsssp")
	var every []uint16 // every LID: a CA's range, a switch's one
	for _, l := range lids {
		for i := 0; i < n && (i == 0 || isCA[l]); i++ {
			every = append(every, l+uint16(i))
		}
	}
	table.requireEveryPair(every)
	pairs, bad, sls := 0, 0, map[uint8]int{}
	for _, p := range todo {
		a, b := p.a, p.b
		stdout, stderr, code := pr.path(a, b)
		var d doc
		// Exit 4 with problems is a finding, reported below with its
		// hop; any other failure stops here.
		if err := json.Unmarshal(stdout, &d); err != nil || (code != 0 && code != exitcode.Problem) || (code == exitcode.Problem) != (len(d.Problems) > 0) || d.PathRecord == nil {
			t.Fatalf("path %d %d: exit %d %v\n%s%s", a, b, code, err, stdout, stderr)
		}
		f, raw := table.record(a, b, p.offDiag)
		pr := d.PathRecord
		hfr := num(f, "hop_flow_raw")
		npr := num(f, "num_path_revers")
		mtu, rate, life := num(f, "mtu"), num(f, "rate"), num(f, "pkt_life")
		pkey := num(f, "pkey")
		type cmp struct {
			name      string
			ours, osm uint64
		}
		b2u := func(v bool) uint64 {
			if v {
				return 1
			}
			return 0
		}
		ourPKey, _ := strconv.ParseUint(pr.PKey, 0, 16)
		cs := []cmp{
			{"slid", uint64(pr.SLID), num(f, "slid")},
			{"dlid", uint64(pr.DLID), num(f, "dlid")},
			{"mtu", uint64(pr.MTU), mtu & 0x3f},
			{"mtu selector", uint64(pr.MTUSelector), mtu >> 6},
			{"rate", uint64(pr.Rate), rate & 0x3f},
			{"rate selector", uint64(pr.RateSelector), rate >> 6},
			{"packet life", uint64(pr.PacketLife), life & 0x3f},
			{"packet life selector", uint64(pr.PacketLifeSelector), life >> 6},
			{"pkey", ourPKey, pkey},
			{"hop limit", uint64(pr.HopLimit), hfr & 0xff},
			{"flow label", uint64(pr.FlowLabel), hfr >> 8 & 0xfffff},
			{"raw traffic", b2u(pr.RawTraffic), hfr >> 31},
			{"traffic class", uint64(pr.TClass), num(f, "tclass")},
			{"reversible", b2u(pr.Reversible), npr >> 7},
			{"numb path", uint64(pr.NumbPath), npr & 0x7f},
			{"qos class", uint64(pr.QoSClass), num(f, "qos_class")},
			{"preference", uint64(pr.Preference), num(f, "preference")},
			// Our AV is the SA's.
			{"av slid", uint64(d.AV.SLID), num(f, "slid")},
			{"av dlid", uint64(d.AV.DLID), num(f, "dlid")},
			{"av mtu", uint64(d.AV.MTU), mtu & 0x3f},
			{"av rate", uint64(d.AV.Rate), rate & 0x3f},
			// The route computed from the forwarding tables carries what the SA hands out.
			{"computed mtu", uint64(d.ComputedAV.MTU), mtu & 0x3f},
			{"computed rate", uint64(d.ComputedAV.Rate), rate & 0x3f},
		}
		if engine != "dfsssp" {
			cs = append(cs, cmp{"sl", uint64(pr.SL), num(f, "sl")}, cmp{"av sl", uint64(d.AV.SL), num(f, "sl")})
		} else {
			cs = append(cs, cmp{"av sl is the record's", uint64(d.AV.SL), uint64(pr.SL)})
		}
		var diffs []string
		for _, c := range cs {
			if c.ours != c.osm {
				diffs = append(diffs, fmt.Sprintf("%s ours %d saquery %d", c.name, c.ours, c.osm))
			}
		}
		if d.AVSource != "sa" {
			diffs = append(diffs, "av_source "+d.AVSource)
		}
		for _, p := range d.Problems {
			diffs = append(diffs, fmt.Sprintf("problem at hop %d (%s): %s: %s", p.Hop, p.At, p.Kind, p.Message))
		}
		if diffs != nil {
			t.Errorf("%s lmc %d %d→%d: %s\nours: %s\nsaquery:\n%s", engine, lmc, a, b, strings.Join(diffs, "; "), stdout, raw)
			if bad++; bad == 10 {
				t.Fatalf("10 pairs differ; stopping")
			}
		}
		sls[pr.SL]++
		pairs++
	}
	t.Logf("%s %s lmc %d: %d CAs, %d LID pairs (%d by a whole command; %d PathRecords of the table checked against the single call, %d off the LID diagonal), SLs %v, %v",
		filepath.Base(file), engine, lmc, len(cas), pairs, pr.commands, table.singles, table.offDiag, sls, time.Since(t0).Round(time.Millisecond))
	// On the torus's rings every SL-assigning engine needs more than one
	// lane (sssp balances paths but hands out SL 0; lash may fit a fat
	// tree or a small irregular graph in one layer).
	if engine != "sssp" && strings.HasSuffix(file, "torus.net") && len(sls) < 2 {
		t.Errorf("%s handed out SLs %v only: the SL comparison proves little", engine, sls)
	}
	return pairs
}

func bytesJoin(m [][]byte) string {
	var b strings.Builder
	for _, l := range m {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// pathRunner answers `ibavtrack path --json [--check] SRC DST` for the
// pairs of one fabric, as many as the test compares. One sweep
// (pathSession) answers them (pathOn), except a rotating sixteenth of
// them (at least one), which run the whole command, its own sweep
// included, so that the command line is compared as well. A whole
// command per pair is a sweep per pair: 45 ms of CPU under -race
// against 1 ms, and it was about three quarters of the package's time.
type pathRunner struct {
	t        *testing.T
	base     []string
	sess     *session
	check    bool
	rot, k   int
	commands int // pairs answered by the whole command
}

// pathCommandEvery: one pair in this many runs the whole command.
const pathCommandEvery = 16

// newPathRunner returns a pathRunner for the fabric flags base, with
// --check when check is set; label (the configuration) picks which pairs
// run the whole command, total is the number of pairs the test will ask
// for. The test fails at its end when none did.
func newPathRunner(t *testing.T, label string, total int, check bool, base ...string) *pathRunner {
	t.Helper()
	return newPathRunnerOn(t, pathSession(t, base...), label, total, check, base...)
}

// newPathRunnerOn is newPathRunner on sess, a pathSession of base.
func newPathRunnerOn(t *testing.T, sess *session, label string, total int, check bool, base ...string) *pathRunner {
	t.Helper()
	r := &pathRunner{t: t, base: base, check: check, sess: sess}
	r.rot = int(crc32.ChecksumIEEE([]byte(label)) % uint32(min(pathCommandEvery, max(total, 1))))
	t.Cleanup(func() {
		if r.commands == 0 && !t.Failed() {
			t.Errorf("no pair of %s was compared through the whole command", label)
		}
	})
	return r
}

// path answers `ibavtrack path --json [--check] a b`: stdout, stderr
// and the exit status.
func (r *pathRunner) path(a, b uint16) ([]byte, []byte, int) {
	k := r.k
	r.k++
	src, dst := strconv.Itoa(int(a)), strconv.Itoa(int(b))
	if k%pathCommandEvery == r.rot {
		r.commands++
		args := []string{"path", "--json"}
		if r.check {
			args = append(args, "--check")
		}
		return runTool(r.t, append(append(args, r.base...), src, dst)...)
	}
	return pathOn(r.sess, src, dst, r.check)
}

// pathSession runs `ibavtrack path` with args (the fabric flags, parsed
// as the command parses them) up to the end of its sweep — discovery and
// the forwarding tables — and returns the session, on which pathOn
// answers any number of pairs as `ibavtrack path --json [--check]`
// does after its own sweep.
func pathSession(t *testing.T, args ...string) *session {
	t.Helper()
	var s *session
	var errb bytes.Buffer
	app := newApp(io.Discard, &errb)
	app.Command("path").Action = func(c *cli.Context) error {
		var err error
		if s, err = openSession(c); err != nil {
			return err
		}
		if err := s.sweep(c.Context, true); err != nil {
			s.Close()
			s = nil
			return err
		}
		return nil
	}
	runMu.Lock()
	code := cliapp.Run(context.Background(), app, append([]string{"ibavtrack", "path"}, clitest.WithPeerTimeout(args)...), &errb)
	runMu.Unlock()
	if code != 0 || s == nil {
		t.Fatalf("path %v up to its sweep: exit %d\n%s", args, code, errb.Bytes())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pathOn is `ibavtrack path --json [--check] SRC DST` on s's sweep: its
// stdout, stderr and exit status.
func pathOn(s *session, src, dst string, check bool) ([]byte, []byte, int) {
	var out, errb bytes.Buffer
	err := s.path(context.Background(), &out, &errb, src, dst, nil, check)
	var ee *cliapp.ExitError
	if errors.As(err, &ee) && ee.Err != nil {
		fmt.Fprintf(&errb, "ibavtrack: %v\n", ee.Err)
	}
	return out.Bytes(), errb.Bytes(), cliapp.Code(err)
}
