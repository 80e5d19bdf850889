// Package avwatch follows the address vectors toward a set of
// destinations from one fabric sweep to the next: it keeps each
// destination's AVs in a model.AVTracker and says, after every sweep,
// what changed (a new AV, fields that differ, a destination that became
// unreachable or reachable again) as events for a command to print.
package avwatch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Kind is what an event says about a destination.
type Kind string

// Event kinds.
const (
	// NewAV: the first AV resolved toward the destination.
	NewAV Kind = "new"
	// Changed: the AV differs from the last one (Changes lists how), or
	// the destination is reachable again (Changes may then be empty).
	Changed Kind = "change"
	// Unreachable: no AV could be resolved (Err says why).
	Unreachable Kind = "unreachable"
)

// Change is one field of an AV that changed.
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Retired is an AV no longer current but still referenced.
type Retired struct {
	AV   *model.AV
	Refs uint32
}

// Event is one change toward one destination.
type Event struct {
	// Target is the destination as the user gave it.
	Target string
	Kind   Kind
	// Err is why the destination is unreachable (Kind Unreachable).
	Err string
	// Changes lists the fields that changed (Kind Changed).
	Changes []Change
	// Was, on a Changed event that ends an unreachable spell, is why the
	// destination was unreachable (say, a port on the route that was
	// Initialize, not Active, and is now).
	Was string
	// AV is the current AV (nil: none) and Route the ports it leaves
	// through.
	AV    *model.AV
	Route string
	// Source says where AV comes from: pathav.SourceSA (the SA's
	// PathRecord) or pathav.SourceComputed; SourceNote, for a computed
	// AV while an SA was asked, says why the SA gave none.
	Source, SourceNote string
	// Retired lists the AVs no longer current that are still referenced.
	Retired []Retired
}

// Target is one watched destination.
type Target struct {
	spec string
	tr   model.AVTracker
	// routes holds the route text of every AV still in the tracker, and
	// sources where each came from.
	routes  map[*model.AV]string
	sources map[*model.AV]avSource
	// held[i] is the AV referenced by sweep i (nil: none).
	held []*model.AV
	// last is the last AV resolved (also after it was cleared).
	last       *model.AV
	lastRoute  string
	lastSource avSource
	lastErr    string
	// path is the route of the last sweep's AV (nil: none resolved).
	path *pathav.Path
}

// avSource is where an AV came from and, for a computed one, why the SA
// gave none.
type avSource struct{ source, note string }

// PathRecordFunc asks the SA for the PathRecord slid→dlid.
type PathRecordFunc func(slid, dlid uint16) (sa.PathRecord, error)

// Watcher follows the AVs toward a set of destinations.
type Watcher struct {
	hold    int
	targets []*Target
	// PathRecord, when set, is asked for each destination's PathRecord
	// after every sweep: the AV is then the SA's (pathav.ApplyPathRecord)
	// when it answers, else the computed one.
	PathRecord PathRecordFunc
}

// New returns a watcher of the destinations named by specs (LID, GUID or
// node name, as model.Fabric.ResolveLID takes them). Each sweep takes a
// reference on every current AV and keeps it hold sweeps, as a consumer
// with sends in flight (0: none).
func New(hold int, specs []string) *Watcher {
	w := &Watcher{hold: hold}
	for _, spec := range specs {
		t := &Target{spec: spec, routes: make(map[*model.AV]string), sources: make(map[*model.AV]avSource)}
		t.tr.Init(func(av *model.AV) { delete(t.routes, av); delete(t.sources, av) })
		w.targets = append(w.targets, t)
	}
	return w
}

// Len is the number of destinations watched.
func (w *Watcher) Len() int { return len(w.targets) }

// Close releases every destination's tracker.
func (w *Watcher) Close() {
	for _, t := range w.targets {
		t.tr.Destroy()
	}
}

// Update resolves every destination on the fabric of a sweep (sweep
// counts from 0) from the source port src at slid (srcErr: the source
// could not be resolved) and calls emit for each event, in the order the
// destinations were given. It stops at the first error emit returns.
func (w *Watcher) Update(sweep int, f *model.Fabric, tables *routing.Tables, src *model.Port, slid uint16, srcErr error, emit func(*Event) error) error {
	for _, t := range w.targets {
		if err := w.update(t, sweep, f, tables, src, slid, srcErr, emit); err != nil {
			return err
		}
	}
	return nil
}

// Unresolved reports whether the last Update left a destination without
// an AV: a light sweep cannot tell when it becomes reachable again (the
// route to it is not known), so the next sweep should be a full one.
func (w *Watcher) Unresolved() bool {
	for _, t := range w.targets {
		if t.path == nil {
			return true
		}
	}
	return false
}

// Probes are the reads a light sweep (discover.LightSweep) makes so that
// a change on a watched route is seen whatever the switches'
// PortStateChange bits say: the PortInfo of local (the port the tool is
// attached at; nil: none) and, for each destination resolved by the last
// Update, of every port its route leaves and enters, of its source and
// destination ports, the destination's NodeInfo, and the forwarding
// table block holding the DLID on every switch the route leaves.
func (w *Watcher) Probes(tables *routing.Tables, local *model.PhysPort) []discover.Probe {
	type key struct {
		path string
		attr uint16
		mod  uint32
	}
	seen := make(map[key]bool)
	var out []discover.Probe
	add := func(p discover.Probe) {
		k := key{p.Path.String(), p.Attr, p.Mod}
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	port := func(pp *model.PhysPort) {
		if pp != nil && pp.HasInfo {
			add(discover.PortInfoProbe(pp))
		}
	}
	port(local)
	for _, t := range w.targets {
		p := t.path
		if p == nil {
			continue
		}
		if p.Src != nil {
			port(p.Src.Phys)
		}
		for _, h := range p.Hops {
			port(h.Out)
			port(h.In)
			if sw := h.Out.Node; sw.IsSwitch() && tables != nil {
				blk := int(p.AV.DLID) / 64
				if tab := tables.Table(sw); len(tab) >= (blk+1)*64 {
					// (a block that differs: the SM routed anew, over
					// ports that may have changed; the switch is read again)
					p := discover.BytesProbe(sw.Path, smp.AttrLinearForwardingTable, uint32(blk), tab[blk*64:(blk+1)*64],
						fmt.Sprintf("forwarding table block %d of %s", blk, sw.Description()))
					p.Node = sw
					add(p)
				}
			}
		}
		if d := p.DstPhys; d != nil {
			port(d)
			add(discover.NodeInfoProbe(d.Node))
			if d.Node.IsSwitch() && tables != nil {
				blk := int(p.AV.DLID) / 64
				if tab := tables.Table(d.Node); len(tab) >= (blk+1)*64 {
					p := discover.BytesProbe(d.Node.Path, smp.AttrLinearForwardingTable, uint32(blk), tab[blk*64:(blk+1)*64],
						fmt.Sprintf("forwarding table block %d of %s", blk, d.Node.Description()))
					p.Node = d.Node
					add(p)
				}
			}
		}
	}
	return out
}

// SourcePort is the watch's source port and SLID: spec (the LID given,
// else the port's base LID) or, when spec is empty, local (its base LID).
func SourcePort(f *model.Fabric, spec string, local *model.Port) (*model.Port, uint16, error) {
	if spec == "" {
		if local != nil && local.BaseLID() != 0 {
			return local, local.BaseLID(), nil
		}
		return nil, 0, errors.New("the local port has no LID")
	}
	p, lid, err := f.ResolveLID(spec, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("SRC %v", err)
	}
	return p, lid, nil
}

// RouteText names a route by the ports it leaves through.
func RouteText(p *pathav.Path) string {
	parts := make([]string, len(p.Hops))
	for i, h := range p.Hops {
		parts[i] = pathav.PortName(h.Out)
	}
	if len(parts) == 0 {
		return "(local)"
	}
	return strings.Join(parts, " ")
}

// update resolves one target after a sweep, updates its tracker and
// emits an event when something changed.
func (w *Watcher) update(t *Target, sweep int, f *model.Fabric, tables *routing.Tables, src *model.Port, slid uint16, srcErr error, emit func(*Event) error) error {
	var av *model.AV
	var resolved *pathav.Path
	var route, fail string
	from := avSource{source: pathav.SourceComputed}
	if srcErr != nil {
		fail = srcErr.Error()
	} else if dst, dlid, err := f.ResolveLID(t.spec, nil); err != nil {
		// the event line names the destination already
		fail = err.Error()
		if errors.Is(err, model.ErrNotFound) {
			fail = model.ErrNotFound.Error()
		}
	} else if p, err := pathav.ResolveLIDs(f, tables, src, slid, dst, dlid); err != nil {
		fail = err.Error()
	} else {
		if w.PathRecord != nil {
			if pr, err := w.PathRecord(p.AV.SLID, p.AV.DLID); err != nil {
				from.note = "no PathRecord from the SA: " + err.Error()
			} else {
				pathav.ApplyPathRecord(p, &pr)
				from.source = pathav.SourceSA
			}
		}
		a := p.AV
		av, route, resolved = &a, RouteText(p), p
	}

	t.path = nil
	if av != nil {
		t.path = resolved
	}
	var err error
	cur, _ := t.tr.GetCurrent(false)
	switch {
	case av == nil:
		if fail != t.lastErr || cur != nil {
			t.tr.ClearCurrent()
			err = emit(t.event(Unreachable, fail, nil))
		}
		t.lastErr = fail
	case cur == nil || Changes(cur, t.routes[cur], av, route) != nil || t.sources[cur].source != from.source:
		t.routes[av], t.sources[av] = route, from
		if e := t.tr.SetCurrent(av); e != nil {
			return e
		}
		kind, diff := NewAV, []Change(nil)
		if t.last != nil {
			kind, diff = Changed, Changes(t.last, t.lastRoute, av, route)
			if old := t.lastSource.source; old != from.source {
				diff = append(diff, Change{"source", old, from.source})
			}
		}
		if kind == NewAV || len(diff) > 0 || t.lastErr != "" {
			ev := t.event(kind, "", diff)
			if kind == Changed {
				ev.Was = t.lastErr
			}
			err = emit(ev)
		}
		t.last, t.lastRoute, t.lastSource, t.lastErr = av, route, from, ""
	}

	// This sweep's reference on the current AV; release the one taken
	// hold sweeps ago.
	var ref *model.AV
	if w.hold > 0 {
		ref, _ = t.tr.GetCurrent(true)
	}
	t.held = append(t.held, ref)
	if i := sweep - w.hold; i >= 0 && i < len(t.held) {
		if old := t.held[i]; old != nil {
			if e := t.tr.DecRef(old); e != nil {
				return fmt.Errorf("%s: releasing AV: %w", t.spec, e)
			}
			t.held[i] = nil
		}
	}
	return err
}

// event is an event of t with its current and retired AVs.
func (t *Target) event(kind Kind, fail string, diff []Change) *Event {
	ev := &Event{Target: t.spec, Kind: kind, Err: fail, Changes: diff}
	if cur, _ := t.tr.GetCurrent(false); cur != nil {
		ev.AV, ev.Route = cur, t.routes[cur]
		ev.Source, ev.SourceNote = t.sources[cur].source, t.sources[cur].note
	}
	for _, av := range t.tr.Retired() {
		if n, ok := t.tr.Refs(av); ok {
			ev.Retired = append(ev.Retired, Retired{av, n})
		}
	}
	return ev
}

// RateText is a static rate code as "N Gb/s".
func RateText(code uint8) string { return pathav.GbpsText(code) + " Gb/s" }

// Changes lists the fields that differ between two AVs and their routes
// (nil: none).
func Changes(a *model.AV, aRoute string, b *model.AV, bRoute string) []Change {
	var out []Change
	add := func(field, x, y string) {
		if x != y {
			out = append(out, Change{field, x, y})
		}
	}
	num := func(v int) string { return strconv.Itoa(v) }
	add("dlid", num(int(a.DLID)), num(int(b.DLID)))
	add("slid", num(int(a.SLID)), num(int(b.SLID)))
	add("sl", num(int(a.SL)), num(int(b.SL)))
	add("mtu", smp.MTUText(a.MTU), smp.MTUText(b.MTU))
	add("rate", RateText(a.Rate), RateText(b.Rate))
	add("hops", num(int(a.HopCount)), num(int(b.HopCount)))
	add("mtu set by", a.MTULimit, b.MTULimit)
	add("rate set by", a.RateLimit, b.RateLimit)
	add("route", aRoute, bRoute)
	return out
}

// AVText is an AV in one line: "dlid D slid S sl L mtu M rate R hops H".
func AVText(av *model.AV) string {
	return fmt.Sprintf("dlid %d slid %d sl %d mtu %s rate %s hops %d", av.DLID, av.SLID, av.SL,
		smp.MTUText(av.MTU), RateText(av.Rate), av.HopCount)
}

// sourceText says where a new AV comes from: " (from the SA)", or
// " (computed)" with the reason when an SA was asked.
func (e *Event) sourceText() string {
	switch {
	case e.Source == pathav.SourceSA:
		return " (from the SA)"
	case e.SourceNote != "":
		return " (computed: " + e.SourceNote + ")"
	}
	return " (computed)"
}

// Text is the event in one line without the time and the destination:
// "AV … via …", "unreachable: …", "reachable again (was: why): AV …"
// and the changed fields ("mtu 4096 → 2048, …"), or the changed fields
// alone, then the AVs retired but still referenced.
func (e *Event) Text() string {
	var b strings.Builder
	switch e.Kind {
	case NewAV:
		fmt.Fprintf(&b, "AV %s via %s%s", AVText(e.AV), e.Route, e.sourceText())
	case Unreachable:
		fmt.Fprintf(&b, "unreachable: %s", e.Err)
	default:
		if e.Was != "" {
			fmt.Fprintf(&b, "reachable again (was: %s): AV %s%s", e.Was, AVText(e.AV), e.sourceText())
			if len(e.Changes) > 0 {
				b.WriteString("; ")
			}
		} else if len(e.Changes) == 0 {
			fmt.Fprintf(&b, "reachable again: AV %s%s", AVText(e.AV), e.sourceText())
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
			fmt.Fprintf(&b, " [%s: %d ref]", AVText(r.AV), r.Refs)
		}
	}
	return b.String()
}
