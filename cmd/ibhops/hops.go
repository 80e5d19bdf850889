package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/internal/termtable"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// jsonPort names a port in every JSON form.
type jsonPort struct {
	Type     string `json:"type"` // "ca", "switch", "router"
	Name     string `json:"name"` // node name map entry, else NodeDescription
	NodeGUID string `json:"node_guid"`
	PortGUID string `json:"port_guid"`
	Port     int    `json:"port"` // physical port number (0: a switch itself)
	LID      uint16 `json:"lid"`  // base LID (a switch's: port 0's)
	LMC      uint8  `json:"lmc"`
}

func hex16(v uint64) string { return fmt.Sprintf("0x%016x", v) }

func nodeType(n *model.Node) string { return smp.NodeTypeLower(n.Type()) }

func (t *tool) jport(pp *model.PhysPort) jsonPort {
	return jsonPort{
		Type:     nodeType(pp.Node),
		Name:     t.name(pp.Node),
		NodeGUID: hex16(pp.Node.GUID()),
		PortGUID: hex16(pp.GUID),
		Port:     int(pp.Num),
		LID:      pp.BaseLID(),
		LMC:      pp.LMC(),
	}
}

func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// lidText is "4", or "4-7" for an LMC range.
func lidText(p *model.Port) string {
	lo, hi := p.LIDRange()
	if lo == hi {
		return strconv.Itoa(int(lo))
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// describe is `ca "Hca1" lid 4` for messages.
func (t *tool) describe(p *model.Port) string {
	return fmt.Sprintf("%s %q lid %s", nodeType(p.Node), t.name(p.Node), lidText(p))
}

// logicalPorts returns the fabric's logical ports with a LID, by base LID.
func logicalPorts(f *model.Fabric) []*model.Port {
	var out []*model.Port
	maxLID := uint32(f.MaxLID()) // a scan of the LID map: once, not per LID
	for l := uint32(1); l <= maxLID; l++ {
		if p := f.PortByLID(uint16(l)); p != nil && p.BaseLID() == uint16(l) {
			out = append(out, p)
		}
	}
	return out
}

// hopsNote says why a hop matrix may be empty.
func (t *tool) hopsNote(h *model.HopTables) {
	if len(h.Switches()) == 0 {
		t.note("no switch has a LID: run a subnet manager first (with --sim, keep --sim-sm)")
	}
}

// hopTables returns the hop tables the dump, queries and --switch use:
// the chosen routing engine's (reading the forwarding tables when it
// derives them from there), or with --routed the forwarding tables'.
// Notes on what the tables rest on go to stderr.
func (t *tool) hopTables() (*model.HopTables, error) {
	var h *model.HopTables
	if t.routed || t.engine.FromTables() {
		tabs, err := t.readTables()
		if err != nil {
			return nil, err
		}
		if t.routed {
			h = routing.RoutedHops(t.f, tabs)
		} else {
			var notes []string
			h, notes = routing.EngineHops(t.f, t.engine, tabs)
			t.notes = append(t.notes, notes...)
		}
	} else {
		var notes []string
		h, notes = routing.EngineHops(t.f, t.engine, nil)
		t.notes = append(t.notes, notes...)
	}
	t.hopsNote(h)
	return h, nil
}

// readTables reads every switch's forwarding table; failed reads make
// the result partial.
func (t *tool) readTables() (*routing.Tables, error) {
	tabs, err := routing.Read(t.ctx, t.q, t.f, t.q.Window.Max())
	if err != nil {
		return nil, err
	}
	if errs := t.q.Errors(); len(errs) > 0 {
		t.partial = true
		for _, e := range errs {
			t.note("LFT read failed: %v", e)
		}
	}
	return tabs, nil
}

// --- default: the opensm-lid-matrix.dump ---

type jsonDump struct {
	Schema   string       `json:"schema"` // "ibdiag.lid-matrix/v1"
	MaxLID   uint16       `json:"max_lid"`
	Switches []jsonMatrix `json:"switches"`
}

type jsonMatrix struct {
	GUID     string    `json:"guid"`
	Name     string    `json:"name"`
	LID      uint16    `json:"lid"`
	NumPorts int       `json:"num_ports"`
	Rows     []jsonRow `json:"rows"`
}

type jsonRow struct {
	LID      uint16 `json:"lid"`
	Hops     []int  `json:"hops"` // ports 0..N, 0 = least; 255 = no path
	PortGUID string `json:"port_guid,omitempty"`
}

func (t *tool) dump(w io.Writer) error {
	h, err := t.hopTables()
	if err != nil {
		return err
	}
	if !t.json {
		return model.WriteLIDMatrixDump(w, t.f, h)
	}
	d := jsonDump{Schema: "ibdiag.lid-matrix/v1", MaxLID: h.MaxLID(), Switches: []jsonMatrix{}}
	for _, sw := range h.Switches() {
		m := h.Matrix(sw)
		jm := jsonMatrix{GUID: hex16(sw.GUID()), Name: t.name(sw), LID: sw.SMALID(), NumPorts: m.NumPorts(), Rows: []jsonRow{}}
		lids := slices.Clone(m.RowLIDs())
		slices.Sort(lids)
		for _, lid := range lids {
			row := m.Row(lid)
			if lid == 0 || lid > h.MaxLID() || row[0] == model.NoPath {
				continue
			}
			r := jsonRow{LID: lid, Hops: make([]int, len(row))}
			for i, v := range row {
				r.Hops[i] = int(v)
			}
			if p := t.f.PortByLID(lid); p != nil {
				r.PortGUID = hex16(p.GUID)
			}
			jm.Rows = append(jm.Rows, r)
		}
		d.Switches = append(d.Switches, jm)
	}
	return writeJSON(w, d)
}

// --- SRC DST: least hops ---

type jsonQuery struct {
	Schema string   `json:"schema"` // "ibdiag.hops-query/v1"
	Src    jsonPort `json:"src"`
	Dst    jsonPort `json:"dst"`
	Hops   *int     `json:"hops"` // null: no path
	// RoutedDLID is the LID whose route was followed (--routed only).
	RoutedDLID uint16 `json:"routed_dlid,omitempty"`
}

func (t *tool) query(w io.Writer, a, b *model.Port, dlid uint16) error {
	var n uint8
	if t.routed {
		// The route to the exact DLID, through the tables of the
		// switches on the way.
		hops, _, err := routing.TraceLive(t.ctx, t.q, t.f, a.Phys, dlid)
		var re *routing.RouteError
		switch {
		case err == nil:
			n = uint8(min(len(hops), int(model.NoPath)-1))
		case errors.As(err, &re):
			n = model.NoPath
			t.note("no route from %s to LID %d: %v", t.describe(a), dlid, err)
		default:
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			return err
		}
	} else {
		h, err := t.hopTables()
		if err != nil {
			return err
		}
		if t.engine.FromTables() {
			n = hopsToLID(h, a, b)
		} else {
			n = h.HopsBetween(a, b)
		}
	}
	var hops *int
	if n != model.NoPath {
		v := int(n)
		hops = &v
	} else {
		t.problem = true
	}
	if t.json {
		q := jsonQuery{Schema: "ibdiag.hops-query/v1", Src: t.jport(a.Phys), Dst: t.jport(b.Phys), Hops: hops}
		if t.routed {
			q.RoutedDLID = dlid
		}
		return writeJSON(w, q)
	}
	what := "no path"
	if hops != nil {
		what = fmt.Sprintf("%d hops", *hops)
		if *hops == 1 {
			what = "1 hop"
		}
	}
	how := ""
	if t.routed {
		how = fmt.Sprintf(" (routed to LID %d)", dlid)
	}
	_, err := fmt.Fprintf(w, "%s: %s -> %s%s\n", what, t.describe(a), t.describe(b), how)
	return err
}

// hopsToLID returns the hops from a to b in a matrix derived from the
// forwarding tables, which can hold a row for b's own LID: that row at the
// switch a is or hangs on (+1 from a CA or router), as the dump and
// --check-routes read it (the route to b's LID need not be the route to
// its switch's LID and one hop more); HopsBetween without such a row.
func hopsToLID(h *model.HopTables, a, b *model.Port) uint8 {
	if a == nil || b == nil || a == b || b.Node.IsSwitch() || a.Phys != nil && b.Phys != nil && a.Phys.Remote == b.Phys {
		return h.HopsBetween(a, b)
	}
	at, extra := a.Node, uint8(0)
	if !at.IsSwitch() {
		if a.Phys == nil || a.Phys.Remote == nil || !a.Phys.Remote.Node.IsSwitch() {
			return h.HopsBetween(a, b)
		}
		at, extra = a.Phys.Remote.Node, 1
	}
	m := h.Matrix(at)
	if m == nil || m.Row(b.BaseLID()) == nil {
		return h.HopsBetween(a, b)
	}
	v := m.LeastHops(b.BaseLID())
	if v >= model.NoPath-1 {
		return model.NoPath
	}
	return v + extra
}

// --- --switch: one switch's table ---

type jsonSwitch struct {
	Schema       string     `json:"schema"` // "ibdiag.switch-hops/v2"
	Switch       jsonPort   `json:"switch"`
	NumPorts     int        `json:"num_ports"`
	Ports        []jsonLink `json:"ports"`
	Destinations []jsonDest `json:"destinations"`
}

type jsonLink struct {
	Port   int       `json:"port"`
	Remote *jsonPort `json:"remote"` // null: no link
}

type jsonDest struct {
	LID       uint16   `json:"lid"`
	LastLID   uint16   `json:"last_lid"`
	Port      jsonPort `json:"destination"` // the port the LID belongs to
	Hops      *int     `json:"hops"`        // least hops; null: no path
	BestPorts []int    `json:"best_ports"`  // ports with the least hops
	PortHops  []int    `json:"port_hops"`   // index = port 0..N (0 = least); 255 = no path
}

// portHops returns the hops from each port of sw (index 0 = least) to
// the logical port p, as OpenSM derives them: a switch LID from the
// switch's matrix, a CA/router port from its switch's LID plus one (or 1
// through the port it hangs on). With perLID (a matrix derived from the
// forwarding tables, which holds a row for every LID, as the dump shows
// it) a CA/router port from its own base LID's row.
func portHops(h *model.HopTables, sw *model.Node, p *model.Port, perLID bool) []uint8 {
	m := h.Matrix(sw)
	out := make([]uint8, sw.NumPorts()+1)
	for i := range out {
		out[i] = model.NoPath
	}
	if m == nil {
		return out
	}
	if p.Node.IsSwitch() {
		if row := m.Row(p.Node.SMALID()); row != nil {
			copy(out, row)
		}
		return out
	}
	if perLID {
		if row := m.Row(p.BaseLID()); row != nil {
			copy(out, row)
		}
		return out
	}
	if p.Phys == nil || p.Phys.Remote == nil || !p.Phys.Remote.Node.IsSwitch() {
		return out
	}
	tsw := p.Phys.Remote.Node
	if tsw == sw {
		out[0] = 1
		if int(p.Phys.Remote.Num) < len(out) {
			out[p.Phys.Remote.Num] = 1
		}
		return out
	}
	row := m.Row(tsw.SMALID())
	if row == nil || h.Matrix(tsw) == nil {
		return out
	}
	for i, v := range row {
		if i < len(out) && v < model.NoPath-1 {
			out[i] = v + 1
		}
	}
	return out
}

func (t *tool) switchTable(w io.Writer, sw *model.Node) error {
	h, err := t.hopTables()
	if err != nil {
		return err
	}
	if h.Matrix(sw) == nil {
		t.note("switch %q has no LID: no hop table (run a subnet manager first)", t.name(sw))
	}
	js := jsonSwitch{Schema: "ibdiag.switch-hops/v2", Switch: t.nodePort(sw), NumPorts: sw.NumPorts(), Ports: []jsonLink{}, Destinations: []jsonDest{}}
	var portRows [][]string
	for p := 1; p <= sw.NumPorts(); p++ {
		pp := sw.Port(p)
		l := jsonLink{Port: p}
		if pp != nil && pp.Remote != nil {
			r := t.jport(pp.Remote)
			l.Remote = &r
			lid := "-"
			if r.LID != 0 {
				lid = strconv.Itoa(int(r.LID))
			}
			portRows = append(portRows, []string{strconv.Itoa(p), r.Type, r.Name, strconv.Itoa(r.Port), lid, r.PortGUID})
		}
		js.Ports = append(js.Ports, l)
	}
	var destRows [][]string
	for _, p := range logicalPorts(t.f) {
		ph := portHops(h, sw, p, t.routed || t.engine.FromTables())
		lo, hi := p.LIDRange()
		d := jsonDest{LID: lo, LastLID: hi, Port: t.jport(p.Phys), BestPorts: []int{}, PortHops: make([]int, len(ph))}
		for i, v := range ph {
			d.PortHops[i] = int(v)
		}
		hopsText, best := "-", "-"
		if ph[0] != model.NoPath {
			v := int(ph[0])
			d.Hops = &v
			hopsText = strconv.Itoa(v)
			if p.Node == sw {
				d.BestPorts = append(d.BestPorts, 0)
			}
			for i := 1; i < len(ph); i++ {
				if ph[i] == ph[0] {
					d.BestPorts = append(d.BestPorts, i)
				}
			}
			var s []string
			for _, b := range d.BestPorts {
				s = append(s, strconv.Itoa(b))
			}
			best = strings.Join(s, ",")
		}
		js.Destinations = append(js.Destinations, d)
		destRows = append(destRows, []string{lidText(p), nodeType(p.Node), t.name(p.Node), hopsText, best})
	}
	if t.json {
		return writeJSON(w, js)
	}
	if _, err := fmt.Fprintf(w, "Switch %q guid %s lid %d, %d ports, %d linked\n", js.Switch.Name, js.Switch.NodeGUID, js.Switch.LID, sw.NumPorts(), len(portRows)); err != nil {
		return err
	}
	if err := termtable.Write(w, []string{"Port", "Type", "Neighbour", "Remote port", "LID", "Port GUID"}, portRows); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nHops from %q to every LID (Ports: the ports with the least hops)\n", js.Switch.Name); err != nil {
		return err
	}
	return termtable.Write(w, []string{"LID", "Type", "Destination", "Hops", "Ports"}, destRows)
}
