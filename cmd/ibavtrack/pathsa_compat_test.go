//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

// TestPathSLMatchesSaquery: on ibsim with OpenSM running lash (which
// assigns SLs deterministically) on a 4x4 torus, `ibavtrack path` takes
// its AV from the SA and its SL equals saquery -p's for every ordered pair
// of CA LIDs, with no problem found (OpenSM programs SLtoVL tables that
// carry the SLs it hands out). Under dfsssp on a ring the AV comes from
// the SA without a problem too; its SL is not compared: OpenSM 3.3.23's
// dfsssp picks among its balanced lanes with rand() on every query
// (get_dfsssp_sl), so two queries of one pair differ. After `opensm
// --once` has left, nobody answers SA queries and the AV is computed,
// saying why.
func TestPathSLMatchesSaquery(t *testing.T) {
	ibsimtest.Require(t)
	type doc struct {
		AV           avJSON
		AVSource     string `json:"av_source"`
		AVSourceNote string `json:"av_source_note"`
		Problems     []avProblemJSON
	}
	t.Parallel() // each subtest has its own ibsim and OpenSM (lash shares lashTorus's)
	path := func(t *testing.T, r *pathRunner, a, b uint16) doc {
		t.Helper()
		stdout, stderr, code := r.path(a, b)
		var d doc
		if err := json.Unmarshal(stdout, &d); err != nil || code != 0 {
			t.Fatalf("path %d %d: exit %d %v\n%s%s", a, b, code, err, stdout, stderr)
		}
		return d
	}
	abs := func(name string) string {
		p, err := filepath.Abs("../../testdata/fabrics/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("no SA", func(t *testing.T) {
		t.Parallel()
		s := ibsimtest.Start(t, abs("loop.net"))
		s.RunOpenSM(t, "h1", t.TempDir())
		d := path(t, newPathRunner(t, "no SA", 1, true, "--ibsim-sockname", s.SockName, "--sim-host", "h2"), 1, 2)
		if d.AVSource != "computed" || !strings.Contains(d.AVSourceNote, "did not answer") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("dfsssp", func(t *testing.T) {
		t.Parallel()
		s := ibsimtest.Start(t, abs("loop.net"))
		s.StartOpenSM(t, "h1", "-R", "dfsssp")
		base := []string{"--ibsim-sockname", s.SockName, "--sim-host", "h2"}
		lids, _ := portLIDs(t, base)
		r := newPathRunner(t, "dfsssp", len(lids)*len(lids), true, base...)
		for _, a := range lids {
			for _, b := range lids {
				if d := path(t, r, a, b); d.AVSource != "sa" || len(d.Problems) != 0 {
					t.Errorf("%d→%d: %+v", a, b, d)
				}
			}
		}
	})
	t.Run("lash", func(t *testing.T) {
		t.Parallel()
		const host = "h01"
		s, _ := lashTorus(t) // OpenSM -R lash at h00, shared
		lids, isCA := portLIDs(t, []string{"--ibsim-sockname", s.SockName, "--sim-host", host})
		var cas []uint16
		for _, l := range lids {
			if isCA[l] {
				cas = append(cas, l)
			}
		}
		if len(cas) < 16 {
			t.Fatalf("CA LIDs %v", cas)
		}
		r := newPathRunner(t, "lash", len(cas)*len(cas), true, "--ibsim-sockname", s.SockName, "--sim-host", host)
		table := newPrTable(t, s, host, "lash", false)
		pairs, nonzero := 0, 0
		for _, a := range cas {
			for _, b := range cas {
				d := path(t, r, a, b)
				f, out := table.record(a, b, false)
				sl, err := strconv.ParseUint(f["sl"], 0, 8)
				if err != nil {
					t.Fatalf("saquery -p %d %d: sl %q: %v\n%s", a, b, f["sl"], err, out)
				}
				if d.AVSource != "sa" || uint64(d.AV.SL) != sl || len(d.Problems) != 0 {
					t.Errorf("%d→%d: ours %+v, saquery SL %d", a, b, d, sl)
				}
				if sl != 0 {
					nonzero++
				}
				pairs++
			}
		}
		t.Logf("lash: %d pairs, %d with an SL above 0, equal to saquery's", pairs, nonzero)
		if nonzero == 0 {
			t.Error("lash handed out SL 0 only: the comparison proves little")
		}
	})
}

// TestWatchSLMatchesSaquery: on ibsim with OpenSM running lash on a 4x4
// torus (SLs 0..n handed out deterministically), one `ibavtrack watch`
// sweep toward every CA takes each AV from the SA ("av_source": "sa"),
// and its SL, MTU and rate equal saquery -p's for the pair. The events
// are checked against docs/av-event.schema.json.
func TestWatchSLMatchesSaquery(t *testing.T) {
	ibsimtest.Require(t)
	const host = "h01"
	s, _ := lashTorus(t) // OpenSM -R lash at h00, shared
	base := []string{"--ibsim-sockname", s.SockName, "--sim-host", host}
	lids, isCA := portLIDs(t, base)
	args := append([]string{"watch", "--json", "--count", "1"}, base...)
	var cas []uint16
	for _, l := range lids {
		if isCA[l] {
			cas = append(cas, l)
			args = append(args, strconv.Itoa(int(l)))
		}
	}
	stdout, stderr, code := runTool(t, args...)
	if code != 0 {
		t.Fatalf("watch: exit %d\n%s", code, stderr)
	}
	lines := scanLines(stdout)
	if len(lines) != len(cas) {
		t.Fatalf("%d events for %d destinations:\n%s%s", len(lines), len(cas), stdout, stderr)
	}
	field := func(f map[string]string, out []byte, name string) uint64 {
		v, err := strconv.ParseUint(f[name], 0, 8)
		if err != nil {
			t.Fatalf("saquery: %s %q: %v\n%s", name, f[name], err, out)
		}
		return v
	}
	schema, err := jsonschema.Load("../../docs/av-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	table := newPrTable(t, s, host, "watch", false)
	nonzero := 0
	for i, l := range lines {
		if err := schema.ValidateJSON([]byte(l)); err != nil {
			t.Errorf("event does not validate against docs/av-event.schema.json: %v\n%s", err, l)
		}
		var ev struct {
			Event    string
			AV       avJSON
			AVSource string `json:"av_source"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		f, out := table.record(ev.AV.SLID, cas[i], false)
		sl, mtu, rate := field(f, out, "sl"), field(f, out, "mtu")&0x3F, field(f, out, "rate")&0x3F
		if ev.Event != "new" || ev.AVSource != "sa" || ev.AV.DLID != cas[i] || uint64(ev.AV.SL) != sl || uint64(ev.AV.MTU) != mtu || uint64(ev.AV.Rate) != rate {
			t.Errorf("→%d: %s; saquery sl %d mtu %d rate %d", cas[i], l, sl, mtu, rate)
		}
		if sl != 0 {
			nonzero++
		}
	}
	if nonzero == 0 {
		t.Error("lash handed out SL 0 only: the comparison proves little")
	}
}
