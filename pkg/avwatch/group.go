package avwatch

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Gone is the event of a watched multicast group the SA no longer lists:
// its current AV is cleared (the seed's lost join).
const Gone Kind = "gone"

// ErrGroupSpec: a multicast group given neither as an MGID nor as an
// MLID.
var ErrGroupSpec = errors.New("not an MGID (ff..::..) or an MLID (0xc000-0xfffe)")

// GroupAV is a multicast group's address vector as the SA's
// MCMemberRecord gives it: what a sender to the group puts in its AV and
// UD work requests.
type GroupAV struct {
	MGID     sa.GID
	MLID     uint16
	MTU      uint8 // MTU code
	Rate     uint8 // static rate code
	SL       uint8
	QKey     uint32
	PKey     uint16
	HopLimit uint8
	Scope    uint8
}

// GroupAVOf is the group AV of an MCMemberRecord.
func GroupAVOf(r *sa.MCMemberRecord) GroupAV {
	return GroupAV{MGID: r.MGID, MLID: r.MLID, MTU: r.MTU, Rate: r.Rate, SL: r.SL, QKey: r.QKey,
		PKey: r.PKey, HopLimit: r.HopLimit, Scope: r.Scope}
}

// MGIDText is the group's MGID as IPv6 text.
func (g *GroupAV) MGIDText() string { return netip.AddrFrom16(g.MGID).String() }

// fields lists the AV's fields as (name, text) pairs, in Text's order.
func (g *GroupAV) fields() [][2]string {
	return [][2]string{
		{"mlid", fmt.Sprintf("0x%04x", g.MLID)},
		{"mtu", smp.MTUText(g.MTU)},
		{"rate", RateText(g.Rate)},
		{"sl", strconv.Itoa(int(g.SL))},
		{"qkey", fmt.Sprintf("0x%08x", g.QKey)},
		{"pkey", fmt.Sprintf("0x%04x", g.PKey)},
		{"hop_limit", strconv.Itoa(int(g.HopLimit))},
		{"scope", strconv.Itoa(int(g.Scope))},
	}
}

// Text is the AV in one line: "mlid 0xc000 mtu 2048 rate 10 Gb/s sl 0
// qkey 0x00000b1b pkey 0xffff hop_limit 0 scope 2".
func (g *GroupAV) Text() string {
	var b strings.Builder
	for i, f := range g.fields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f[0] + " " + f[1])
	}
	return b.String()
}

// GroupChanges lists the fields that differ between two group AVs (nil:
// none).
func GroupChanges(a, b *GroupAV) []Change {
	var out []Change
	fa, fb := a.fields(), b.fields()
	for i := range fa {
		if fa[i][1] != fb[i][1] {
			out = append(out, Change{fa[i][0], fa[i][1], fb[i][1]})
		}
	}
	return out
}

// GroupEvent is one change of a watched multicast group.
type GroupEvent struct {
	// Target is the group as the user gave it.
	Target string
	Kind   Kind // NewAV, Changed (re-created with other values), Gone
	// Changes lists the fields that differ from the last AV (Changed).
	Changes []Change
	// Recreated, on a Changed event after Gone: the group had
	// disappeared and the SM created it again.
	Recreated bool
	// AV is the current AV (nil after Gone).
	AV *GroupAV
	// Retired lists the AVs no longer current that are still referenced.
	Retired []GroupRetired
}

// GroupRetired is a group AV no longer current but still referenced.
type GroupRetired struct {
	AV   *GroupAV
	Refs uint32
}

// Text is the event in one line without the time and the group: "AV …",
// "gone: the SA lists no such group (AV cleared)", "re-created: AV …;
// mtu 2048 → 1024, …", then the AVs retired but still referenced.
func (e *GroupEvent) Text() string {
	var b strings.Builder
	switch {
	case e.Kind == Gone:
		b.WriteString("gone: the SA lists no such group (AV cleared)")
	case e.Kind == NewAV:
		fmt.Fprintf(&b, "AV mgid %s %s", e.AV.MGIDText(), e.AV.Text())
	default:
		if e.Recreated {
			fmt.Fprintf(&b, "re-created: AV mgid %s %s", e.AV.MGIDText(), e.AV.Text())
			if len(e.Changes) > 0 {
				b.WriteString("; ")
			}
		}
		for i, d := range e.Changes {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s → %s", d.Field, d.Old, d.New)
		}
	}
	if len(e.Retired) > 0 {
		b.WriteString("; retired, still referenced:")
		for _, r := range e.Retired {
			fmt.Fprintf(&b, " [%s: %d ref]", r.AV.Text(), r.Refs)
		}
	}
	return b.String()
}

// Group follows one multicast group's AV from one SA listing to the
// next, keeping its AVs in a model.AVTracker: a new current AV when the
// SM re-creates the group with other values, the current one cleared
// when the group disappears.
type Group struct {
	spec string
	mgid sa.GID
	mlid uint16 // 0: by MGID
	hold int
	tr   model.AVTracker
	avs  map[*model.AV]*GroupAV
	held []*model.AV
	last *GroupAV // the last AV seen, also after Gone
	gone bool
}

// NewGroup returns a watcher of the group spec names: an MGID (IPv6
// text) or an MLID (0xc000-0xfffe, decimal or 0x hex). Each Update takes
// a reference on the current AV and keeps it hold updates (0: none).
func NewGroup(hold int, spec string) (*Group, error) {
	g := &Group{spec: spec, hold: hold, avs: map[*model.AV]*GroupAV{}}
	if a, err := netip.ParseAddr(spec); err == nil && a.Is6() && !a.Is4In6() && a.As16()[0] == 0xff {
		g.mgid = a.As16()
		return g, nil
	}
	n, err := strconv.ParseUint(spec, 0, 16)
	if err != nil || n < 0xc000 || n > 0xfffe {
		return nil, fmt.Errorf("%s: %w", spec, ErrGroupSpec)
	}
	g.mlid = uint16(n)
	return g, nil
}

// Spec is the group as given.
func (g *Group) Spec() string { return g.spec }

// Find returns the record of the watched group among recs (nil: none).
func (g *Group) Find(recs []sa.MCMemberRecord) *sa.MCMemberRecord {
	for i := range recs {
		if g.mlid != 0 && recs[i].MLID == g.mlid || g.mlid == 0 && recs[i].MGID == g.mgid {
			return &recs[i]
		}
	}
	return nil
}

// Close releases the group's tracker.
func (g *Group) Close() { g.tr.Destroy() }

// Update takes the SA's MCMemberRecords of one sweep (sweep counts from
// 0) and calls emit with the event, if anything changed.
func (g *Group) Update(sweep int, recs []sa.MCMemberRecord, emit func(*GroupEvent) error) error {
	var err error
	cur, _ := g.tr.GetCurrent(false)
	r := g.Find(recs)
	switch {
	case r == nil:
		if cur != nil || !g.gone && g.last != nil {
			g.tr.ClearCurrent()
			g.gone = true
			err = emit(g.event(Gone, nil, false))
		}
	default:
		av := GroupAVOf(r)
		if cur != nil && GroupChanges(g.avs[cur], &av) == nil {
			break
		}
		m := &model.AV{DLID: av.MLID, SL: av.SL, MTU: av.MTU, Rate: av.Rate}
		g.avs[m] = &av
		if e := g.tr.SetCurrent(m); e != nil {
			return e
		}
		kind, diff := NewAV, []Change(nil)
		if g.last != nil {
			kind, diff = Changed, GroupChanges(g.last, &av)
		}
		if kind == NewAV || len(diff) > 0 || g.gone {
			err = emit(g.event(kind, diff, g.gone))
		}
		g.last, g.gone = &av, false
	}
	var ref *model.AV
	if g.hold > 0 {
		ref, _ = g.tr.GetCurrent(true)
	}
	g.held = append(g.held, ref)
	if i := sweep - g.hold; i >= 0 && i < len(g.held) {
		if old := g.held[i]; old != nil {
			if e := g.tr.DecRef(old); e != nil {
				return fmt.Errorf("%s: releasing AV: %w", g.spec, e)
			}
			g.held[i] = nil
		}
	}
	// forget the AVs the tracker destroyed
	for m := range g.avs {
		if _, ok := g.tr.Refs(m); !ok {
			delete(g.avs, m)
		}
	}
	return err
}

func (g *Group) event(kind Kind, diff []Change, recreated bool) *GroupEvent {
	ev := &GroupEvent{Target: g.spec, Kind: kind, Changes: diff, Recreated: recreated}
	if cur, _ := g.tr.GetCurrent(false); cur != nil {
		ev.AV = g.avs[cur]
	}
	for _, m := range g.tr.Retired() {
		if n, ok := g.tr.Refs(m); ok {
			ev.Retired = append(ev.Retired, GroupRetired{g.avs[m], n})
		}
	}
	return ev
}
