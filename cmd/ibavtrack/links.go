package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/termtable"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

func linksCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "links",
		Usage:     "one row per link: MTU and VL capabilities, OpenSM's computed values, what runs now, width and speed",
		UsageText: "ibavtrack links [--check] [--json] [--counters] [--max-op-vls N] [--output FILE] [fabric options]",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "check", Usage: "exit 4 when any link is marked"},
			&cli.BoolFlag{Name: "counters", Usage: "read both ends' PerfMgt error counters (by LID) and add them to each row"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of the table"},
			&cli.IntFlag{Name: "max-op-vls", Value: int(model.DefaultMaxOpVLs), Usage: "OpenSM's max_op_vls option `CODE` (1 VL0 .. 5 VL0-14)"},
			outputFlag(),
		}, commonFlags()...),
		Action: withOutput(stdout, stderr, linksCmd),
	}
}

func linksCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() > 0 {
		return cliapp.Usage(c.Args().First(), "links takes no arguments")
	}
	maxVLs := c.Int("max-op-vls")
	if maxVLs < 1 || maxVLs > 5 {
		return cliapp.Usage("--max-op-vls "+strconv.Itoa(maxVLs), "must be 1..5 (VL0 .. VL0-14)")
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.sweep(c.Context, false); err != nil {
		return err
	}
	links := pathav.CheckLinks(s.res.Fabric, uint8(maxVLs))
	// The operational MTU and VLs are the SM's to set: without LIDs no SM
	// has run, and a check would check nothing.
	var nothing string
	if c.Bool("check") {
		nothing = routing.NothingToCheck(s.res.Fabric, false)
		if nothing == "" && len(links) == 0 {
			nothing = "the fabric has no link"
		}
	}
	var counters *portcounters.Report
	if c.Bool("counters") && nothing == "" {
		if counters, err = s.readCounters(c.Context); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		err = writeJSON(stdout, linksJSON(links, nothing, counters))
	} else {
		err = writeLinksTable(stdout, cliapp.Painter(c, stdout), links, counters)
		if err == nil && nothing != "" {
			_, err = fmt.Fprintf(stdout, "nothing to check: %s\n", nothing)
		}
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	partial := s.partial(stderr)
	if counters != nil && len(counters.Failures) > 0 {
		for _, f := range counters.Failures {
			fmt.Fprintf(stderr, "ibavtrack: PMA %v\n", f)
		}
		partial = true
	}
	bad := 0
	for i := range links {
		if links[i].Mismatch() {
			bad++
		}
	}
	o := s.outcome(partial)
	o.Problem = c.Bool("check") && bad > 0 && nothing == ""
	o.NothingChecked = nothing != ""
	switch o.Status() {
	case exitcode.Problem:
		return cliapp.Exit(exitcode.Problem, fmt.Errorf("%d of %d links marked", bad, len(links)))
	case exitcode.Partial:
		return cliapp.Exit(exitcode.Partial, errors.New("partial result printed: "+s.partialWhy()))
	case exitcode.NothingChecked:
		return nothingToCheck(nothing)
	case exitcode.Inconsistent:
		return errStrict
	}
	return nil
}

// linkHeader are the columns of the links table.
var linkHeader = []string{"", "Node A", "Port", "LID", "Node B", "Port", "LID",
	"MTUCap A/B", "Link MTU", "NbrMTU A/B", "VLCap A/B", "OpVLs", "OpVLs A/B",
	"Width", "Sup", "Speed", "Sup"}

func slash(a, b string) string { return a + "/" + b }

// linkRow is the table row of one link (without marking).
func linkRow(l *pathav.Link) []string {
	a, b := l.A, l.B
	row := []string{"", a.Node.Description(), strconv.Itoa(int(a.Num)), lidText(a),
		b.Node.Description(), strconv.Itoa(int(b.Num)), lidText(b)}
	if !a.HasInfo || !b.HasInfo {
		for len(row) < len(linkHeader) {
			row = append(row, "?")
		}
		return row
	}
	ai, bi := &a.Info, &b.Info
	return append(row,
		slash(smp.MTUText(ai.MTUCap), smp.MTUText(bi.MTUCap)),
		smp.MTUText(l.MTUA.Value),
		slash(smp.MTUText(ai.NeighborMTU), smp.MTUText(bi.NeighborMTU)),
		slash(smp.VLCapText(ai.VLCap), smp.VLCapText(bi.VLCap)),
		smp.VLCapText(l.VLsA.Value),
		slash(smp.OperVLsText(ai.OperationalVLs), smp.OperVLsText(bi.OperationalVLs)),
		smp.WidthToken(l.Width), smp.WidthToken(l.SupportedWidth),
		l.Speed.String(), l.SupportedSpeed.String(),
	)
}

func lidText(p *model.PhysPort) string {
	if l := p.BaseLID(); l != 0 {
		return strconv.Itoa(int(l))
	}
	return "-"
}

// writeLinksTable prints the table, marks links with problems (in colour
// as paint allows) and lists the reasons after it.
func writeLinksTable(w io.Writer, paint termout.Painter, links []pathav.Link, counters *portcounters.Report) error {
	rows := make([][]string, len(links))
	var reasons []string
	header := linkHeader
	if counters != nil {
		header = append(append([]string{}, linkHeader...), "Errors A/B")
	}
	for i := range links {
		l := &links[i]
		row := linkRow(l)
		if counters != nil {
			row = append(row, slash(portcounters.CellText(counters.Lookup(l.A.Node, int(l.A.Num))),
				portcounters.CellText(counters.Lookup(l.B.Node, int(l.B.Num)))))
		}
		if l.Mismatch() {
			row[0] = "*"
			for j := range row {
				row[j] = paint.Bad(row[j])
			}
			for _, p := range l.Problems {
				reasons = append(reasons, fmt.Sprintf("%s[%d] - %s[%d]: %s",
					l.A.Node.Description(), l.A.Num, l.B.Node.Description(), l.B.Num, p))
			}
		}
		rows[i] = row
	}
	if err := termtable.Write(w, header, rows); err != nil {
		return err
	}
	marked := 0
	for i := range links {
		if links[i].Mismatch() {
			marked++
		}
	}
	if marked == 0 {
		_, err := fmt.Fprintf(w, "%d links, none marked\n", len(links))
		return err
	}
	if _, err := fmt.Fprintf(w, "%d links, %s:\n", len(links), paint.Bad(fmt.Sprintf("%d marked", marked))); err != nil {
		return err
	}
	for _, r := range reasons {
		if _, err := fmt.Fprintf(w, "  %s\n", r); err != nil {
			return err
		}
	}
	return nil
}

// JSON forms.

type endJSON struct {
	Node        string `json:"node"`
	Type        string `json:"type"`
	NodeGUID    string `json:"node_guid"`
	PortGUID    string `json:"port_guid"`
	Port        int    `json:"port"`
	LID         uint16 `json:"lid"`
	MTUCap      int    `json:"mtu_cap"`
	NeighborMTU int    `json:"neighbor_mtu"`
	VLCap       uint8  `json:"vl_cap_code"`
	OpVLs       uint8  `json:"op_vls"`
	LinkMTU     int    `json:"link_mtu"`
	LinkOpVLs   uint8  `json:"link_op_vls"`
	// Counters are the port's PerfMgt counters (links --counters).
	Counters *countersJSON `json:"counters,omitempty"`
}

// countersJSON is one port's counters in links --counters --json: the
// error counters and data counters, or why they could not be read.
type countersJSON struct {
	Errors   map[string]uint64 `json:"errors,omitempty"`
	Errors64 bool              `json:"errors_64bit"`
	Data     map[string]uint64 `json:"data,omitempty"`
	Error    string            `json:"error,omitempty"`
}

func countersOf(r *portcounters.Report, p *model.PhysPort) *countersJSON {
	if r == nil {
		return nil
	}
	s := r.Lookup(p.Node, int(p.Num))
	switch {
	case s == nil:
		return &countersJSON{Error: "not read"}
	case s.Err != nil:
		return &countersJSON{Error: s.Err.Error()}
	}
	return &countersJSON{Errors: portcounters.ErrorMap(&s.Errors), Errors64: s.Ext64, Data: portcounters.DataMap(s)}
}

type problemJSON struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type linkJSON struct {
	A              endJSON       `json:"a"`
	B              endJSON       `json:"b"`
	LinkMTU        int           `json:"link_mtu"`
	OpVLs          uint8         `json:"op_vls"`
	Width          string        `json:"width"`
	SupportedWidth string        `json:"supported_width"`
	EnabledWidth   string        `json:"enabled_width"`
	Speed          string        `json:"speed"`
	SupportedSpeed string        `json:"supported_speed"`
	EnabledSpeed   string        `json:"enabled_speed"`
	Mismatch       bool          `json:"mismatch"`
	Problems       []problemJSON `json:"problems"`
}

func endOf(p *model.PhysPort, mtu, vls model.LinkCalc) endJSON {
	return endJSON{
		Node:        p.Node.Description(),
		Type:        smp.NodeTypeLower(p.Node.Type()),
		NodeGUID:    fmt.Sprintf("0x%016x", p.Node.GUID()),
		PortGUID:    fmt.Sprintf("0x%016x", p.GUID),
		Port:        int(p.Num),
		LID:         p.BaseLID(),
		MTUCap:      smp.MTUBytes(p.Info.MTUCap),
		NeighborMTU: smp.MTUBytes(p.Info.NeighborMTU),
		VLCap:       p.Info.VLCap,
		OpVLs:       p.Info.OperationalVLs,
		LinkMTU:     smp.MTUBytes(mtu.Value),
		LinkOpVLs:   vls.Value,
	}
}

// linksJSON is the links document; nothing, when set, says why --check
// had nothing to check (then "clean" is false).
func linksJSON(links []pathav.Link, nothing string, counters *portcounters.Report) any {
	out := struct {
		Schema   string     `json:"schema"`
		Links    []linkJSON `json:"links"`
		Mismatch int        `json:"mismatches"`
		Clean    bool       `json:"clean"`
		Reason   string     `json:"reason,omitempty"`
	}{Schema: "ibdiag.links/v1", Links: make([]linkJSON, 0, len(links))}
	if nothing != "" {
		out.Reason = "nothing to check: " + nothing
	}
	for i := range links {
		l := &links[i]
		j := linkJSON{
			A: endOf(l.A, l.MTUA, l.VLsA), B: endOf(l.B, l.MTUB, l.VLsB),
			LinkMTU: smp.MTUBytes(l.MTUA.Value), OpVLs: l.VLsA.Value,
			Width: smp.WidthToken(l.Width), SupportedWidth: smp.WidthToken(l.SupportedWidth), EnabledWidth: smp.WidthToken(l.EnabledWidth),
			Speed: l.Speed.String(), SupportedSpeed: l.SupportedSpeed.String(), EnabledSpeed: l.EnabledSpeed.String(),
			Mismatch: l.Mismatch(), Problems: []problemJSON{},
		}
		for _, p := range l.Problems {
			j.Problems = append(j.Problems, problemJSON{string(p.Kind), p.Msg})
		}
		j.A.Counters, j.B.Counters = countersOf(counters, l.A), countersOf(counters, l.B)
		if l.Mismatch() {
			out.Mismatch++
		}
		out.Links = append(out.Links, j)
	}
	out.Clean = out.Mismatch == 0 && nothing == ""
	return out
}
