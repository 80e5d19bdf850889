package avwatch

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

func TestNewGroup(t *testing.T) {
	for _, c := range []struct {
		spec string
		ok   bool
	}{
		{"0xc000", true}, {"49153", true}, {"0xfffe", true}, {"ff12:401b:ffff::ffff:ffff", true},
		{"0xbfff", false}, {"0xffff", false}, {"fe80::1", false}, {"1.2.3.4", false}, {"", false}, {"bogus", false},
	} {
		_, err := NewGroup(0, c.spec)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrGroupSpec) {
			t.Errorf("%q: %v", c.spec, err)
		}
	}
}

// TestGroupUpdate: the tracker of one group, by MGID and by MLID, without
// references held: the first AV, nothing while it stays, a change, gone
// (cleared, nothing retired), gone again (no event), re-created (a
// change event that says so), and an MLID watch that follows the MLID.
func TestGroupUpdate(t *testing.T) {
	a := sa.MCMemberRecord{MGID: sa.GID{0: 0xff, 1: 0x12, 2: 0x12, 15: 1}, MLID: 0xc001, QKey: 1, PKey: 0xffff, MTU: smp.MTU2048, Rate: smp.Rate10, Scope: 2}
	b := a
	b.SL, b.HopLimit = 3, 2
	other := a
	other.MGID[15], other.MLID = 2, 0xc002
	steps := []struct {
		recs []sa.MCMemberRecord
		want string // kind and text, "" for no event
	}{
		{[]sa.MCMemberRecord{other, a}, "new AV mgid ff12:1200::1 mlid 0xc001 mtu 2048 rate 10 Gb/s sl 0 qkey 0x00000001 pkey 0xffff hop_limit 0 scope 2"},
		{[]sa.MCMemberRecord{a, other}, ""},
		{[]sa.MCMemberRecord{b}, "change sl 0 → 3, hop_limit 0 → 2"},
		{[]sa.MCMemberRecord{other}, "gone gone: the SA lists no such group (AV cleared)"},
		{nil, ""},
		{[]sa.MCMemberRecord{a}, "change re-created: AV mgid ff12:1200::1 mlid 0xc001 mtu 2048 rate 10 Gb/s sl 0 qkey 0x00000001 pkey 0xffff hop_limit 0 scope 2; sl 3 → 0, hop_limit 2 → 0"},
	}
	g, err := NewGroup(0, "ff12:1200::1")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i, s := range steps {
		var got string
		if err := g.Update(i, s.recs, func(e *GroupEvent) error {
			if got != "" {
				t.Errorf("step %d: two events", i)
			}
			got = string(e.Kind) + " " + e.Text()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
	m, _ := NewGroup(0, "0xc002")
	defer m.Close()
	var got *GroupEvent
	m.Update(0, []sa.MCMemberRecord{a, other}, func(e *GroupEvent) error { got = e; return nil })
	if got == nil || got.AV.MLID != 0xc002 || got.AV.MGID != other.MGID {
		t.Errorf("by MLID: %+v", got)
	}
}
