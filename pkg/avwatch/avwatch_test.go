package avwatch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/avwatch"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// sweepOf discovers fab from h1 and reads its forwarding tables, as one
// watch sweep does.
func sweepOf(t *testing.T, fab *sim.Fabric) (*model.Fabric, *routing.Tables) {
	t.Helper()
	tr, err := fab.Attach("h1")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	res, err := discover.Discover(ctx, tr, discover.Config{})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v (partial %v)", err, res != nil && res.Partial())
	}
	tables, err := routing.Read(ctx, &discover.Querier{Transport: tr}, res.Fabric, 4)
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric, tables
}

// TestWatcherEvents follows h2 from h1 across link changes on the
// two-path fabric (1x sw1[2]-sw2[1], 4x sw1[3]-sw2[2]; the SM routes
// over the 1x one): the first AV, nothing when nothing changed, a change
// of rate and route, unreachable, reachable again; holding each AV one
// sweep, the replaced AV is reported retired while the last sweep's
// reference holds it.
func TestWatcherEvents(t *testing.T) {
	fab, err := sim.Load("testdata/watch.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		before func() error
		want   []string // Text of each event, by prefix
		kinds  []avwatch.Kind
	}{
		{"first", func() error { return fab.RunSM("h1") }, []string{"AV dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3 via h1[1] sw1[2] sw2[3]"}, []avwatch.Kind{avwatch.NewAV}},
		{"same", func() error { return nil }, nil, nil},
		{"1x link gone", func() error {
			if err := fab.Unlink("sw1", 2); err != nil {
				return err
			}
			return fab.RunSM("h1")
		}, []string{"rate 2.5 Gb/s → 10 Gb/s, "}, []avwatch.Kind{avwatch.Changed}},
		{"both gone", func() error {
			if err := fab.Unlink("sw1", 3); err != nil {
				return err
			}
			return fab.RunSM("h1")
		}, []string{"unreachable: "}, []avwatch.Kind{avwatch.Unreachable}},
		{"back", func() error {
			if err := fab.ReLink("sw1", 3); err != nil {
				return err
			}
			return fab.RunSM("h1")
		}, []string{`reachable again (was: not in the fabric): AV dlid 4 slid 3 sl 0 mtu 2048 rate 10 Gb/s hops 3`}, []avwatch.Kind{avwatch.Changed}},
	}
	w := avwatch.New(1, []string{"h2"})
	defer w.Close()
	for sweep, st := range steps {
		if err := st.before(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		f, tables := sweepOf(t, fab)
		local, _ := f.ResolvePort("h1", nil)
		src, slid, srcErr := avwatch.SourcePort(f, "", local)
		var got []*avwatch.Event
		if err := w.Update(sweep, f, tables, src, slid, srcErr, func(e *avwatch.Event) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(got) != len(st.want) {
			t.Fatalf("%s: %d events %+v, want %d", st.name, len(got), got, len(st.want))
		}
		for i, e := range got {
			if e.Target != "h2" || e.Kind != st.kinds[i] || !strings.HasPrefix(e.Text(), st.want[i]) {
				t.Errorf("%s: event %s %s %q, want %s %q…", st.name, e.Target, e.Kind, e.Text(), st.kinds[i], st.want[i])
			}
		}
		if st.name == "1x link gone" && len(got) == 1 {
			// the 2.5 Gb/s AV is still held by the previous sweep
			if r := got[0].Retired; len(r) != 1 || r[0].AV.Rate != 2 || r[0].Refs != 1 {
				t.Errorf("retired %+v, want the 2.5 Gb/s AV with 1 reference", r)
			}
			if !strings.Contains(got[0].Text(), "; retired, still referenced: [dlid 4 slid 3 sl 0 mtu 2048 rate 2.5 Gb/s hops 3: 1 ref]") {
				t.Errorf("text %q does not name the retired AV", got[0].Text())
			}
		}
	}
}

func TestChanges(t *testing.T) {
	a := &model.AV{DLID: 2, SLID: 1, MTU: 5, Rate: 3, HopCount: 2, MTULimit: "x", RateLimit: "y"}
	b := *a
	if c := avwatch.Changes(a, "r", &b, "r"); c != nil {
		t.Errorf("equal AVs: %+v", c)
	}
	b.SL, b.MTU = 1, 4
	want := []avwatch.Change{{Field: "sl", Old: "0", New: "1"}, {Field: "mtu", Old: "4096", New: "2048"}, {Field: "route", Old: "r", New: "s"}}
	got := avwatch.Changes(a, "r", &b, "s")
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestWatcherPortState: the port-state rule in the watch. h2's link
// unplugged and plugged back with no SM: its ports come back in
// Initialize, so h2 is unreachable (it was reported "reachable again",
// with no change listed, as the route and the LIDs are the old ones);
// once an SM activates the ports, reachable again says what it was.
func TestWatcherPortState(t *testing.T) {
	fab, err := sim.Load("testdata/watch.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fab.RunSM("h1"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		before func() error
		kind   avwatch.Kind
		text   string
	}{
		{"first", func() error { return nil }, avwatch.NewAV, "AV dlid 4 slid 3 "},
		{"unplugged", func() error { return fab.Unlink("sw2", 3) }, avwatch.Unreachable, `unreachable: not in the fabric`},
		{"plugged back, no SM", func() error { return fab.ReLink("sw2", 3) }, avwatch.Unreachable, `unreachable: port 3 of switch "sw2" is Initialize, not Active`},
		{"SM ran", func() error { return fab.RunSM("h1") }, avwatch.Changed, `reachable again (was: port 3 of switch "sw2" is Initialize, not Active): AV dlid 4 slid 3 `},
	}
	w := avwatch.New(0, []string{"h2"})
	defer w.Close()
	for sweep, st := range steps {
		if err := st.before(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		f, tables := sweepOf(t, fab)
		local, _ := f.ResolvePort("h1", nil)
		src, slid, srcErr := avwatch.SourcePort(f, "", local)
		var got []*avwatch.Event
		if err := w.Update(sweep, f, tables, src, slid, srcErr, func(e *avwatch.Event) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(got) != 1 || got[0].Kind != st.kind || !strings.HasPrefix(got[0].Text(), st.text) {
			var texts []string
			for _, e := range got {
				texts = append(texts, string(e.Kind)+": "+e.Text())
			}
			t.Fatalf("%s: events %q, want one %s %q…", st.name, texts, st.kind, st.text)
		}
	}
}

// TestPathRecordSource: with a PathRecord function the AV is the SA's
// when it answers (its SL, MTU and rate; the text says "from the SA"),
// the computed one when it fails (the text says why), and a switch
// between the two is a change naming the fields and the source.
func TestPathRecordSource(t *testing.T) {
	fab, err := sim.Load("testdata/watch.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fab.RunSM("h1"); err != nil {
		t.Fatal(err)
	}
	var answer *sa.PathRecord
	w := avwatch.New(0, []string{"h2"})
	defer w.Close()
	w.PathRecord = func(slid, dlid uint16) (sa.PathRecord, error) {
		if answer == nil {
			return sa.PathRecord{}, sa.ErrNoAnswer
		}
		pr := *answer
		pr.SLID, pr.DLID = slid, dlid
		return pr, nil
	}
	steps := []struct {
		name   string
		answer *sa.PathRecord
		want   []string // Text of each event, exactly
		source string
	}{
		{"SA answers", &sa.PathRecord{SL: 3, MTU: smp.MTU1024, Rate: 2}, []string{"AV dlid 4 slid 3 sl 3 mtu 1024 rate 2.5 Gb/s hops 3 via h1[1] sw1[2] sw2[3] (from the SA)"}, pathav.SourceSA},
		{"same answer", &sa.PathRecord{SL: 3, MTU: smp.MTU1024, Rate: 2}, nil, ""},
		{"other SL", &sa.PathRecord{SL: 5, MTU: smp.MTU1024, Rate: 2}, []string{"sl 3 → 5"}, pathav.SourceSA},
		{"SA gone", nil, []string{"sl 5 → 0, mtu 1024 → 2048, source sa → computed"}, pathav.SourceComputed},
		{"SA back", &sa.PathRecord{SL: 5, MTU: smp.MTU2048, Rate: 2}, []string{"sl 0 → 5, source computed → sa"}, pathav.SourceSA},
	}
	for sweep, st := range steps {
		answer = st.answer
		f, tables := sweepOf(t, fab)
		local, _ := f.ResolvePort("h1", nil)
		src, slid, srcErr := avwatch.SourcePort(f, "", local)
		var got []*avwatch.Event
		if err := w.Update(sweep, f, tables, src, slid, srcErr, func(e *avwatch.Event) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(st.want) {
			t.Fatalf("%s: %d events %+v, want %d", st.name, len(got), got, len(st.want))
		}
		for i, e := range got {
			if e.Text() != st.want[i] || e.Source != st.source {
				t.Errorf("%s: %q (source %s), want %q (source %s)", st.name, e.Text(), e.Source, st.want[i], st.source)
			}
			if st.source == pathav.SourceComputed && !strings.Contains(e.SourceNote, "no PathRecord from the SA: ") {
				t.Errorf("%s: computed AV without the reason: %q", st.name, e.SourceNote)
			}
		}
	}
}
