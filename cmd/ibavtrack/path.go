package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/termtable"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

func pathCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "path",
		Usage:     "follow the forwarding tables from SRC to DST and print the address vector (from the SA when one answers, else computed: path MTU, static rate, hops)",
		UsageText: "ibavtrack path [--json] [--check] [--output FILE] [fabric options] SRC DST   (LID, port or node GUID, or node name)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.BoolFlag{Name: "check", Usage: "exit 4 when the PathRecord of the SA disagrees with the route (MTU or rate above what it carries, an SL a hop drops)"},
			outputFlag(),
		}, commonFlags()...),
		Action: withOutput(stdout, stderr, pathCmd),
	}
}

func pathCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() != 2 {
		return cliapp.Usage(strings.Join(c.Args().Slice(), " "), "path needs SRC and DST")
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.sweep(c.Context, true); err != nil {
		return err
	}
	var paint *termout.Painter
	if !c.Bool("json") {
		p := cliapp.Painter(c, stdout)
		paint = &p
	}
	return s.path(c.Context, stdout, stderr, c.Args().Get(0), c.Args().Get(1), paint, c.Bool("check"))
}

// path prints the path from srcSpec to dstSpec on the fabric of the last
// sweep (JSON when paint is nil) and returns what decides the exit
// status, as the path command does after its sweep; the tests call it
// for many pairs after one sweep.
func (s *session) path(ctx context.Context, stdout, stderr io.Writer, srcSpec, dstSpec string, paint *termout.Painter, check bool) error {
	f := s.res.Fabric
	if why := routing.NothingToCheck(f, true); why != "" {
		// No path can be followed: say why instead of "no such LID".
		s.partial(stderr)
		return nothingToCheckJSON(stdout, paint == nil, pathSchema, why)
	}
	src, slid, err := resolveLID(f, "SRC", srcSpec)
	if err != nil {
		return err
	}
	dst, dlid, err := resolveLID(f, "DST", dstSpec)
	if err != nil {
		return err
	}
	p, err := pathav.ResolveLIDs(f, s.tables, src, slid, dst, dlid)
	partial := s.partial(stderr)
	if err != nil {
		var re *routing.RouteError
		if errors.As(err, &re) || errors.Is(err, routing.ErrNotActive) {
			return cliapp.Exit(exitcode.Problem, fmt.Errorf("no path from %s to %s: %v", srcSpec, dstSpec, err))
		}
		return cliapp.Exit(exitcode.Problem, fmt.Errorf("%s to %s: %v", srcSpec, dstSpec, err))
	}
	av, err := s.avFromSA(ctx, p)
	if err != nil {
		return err
	}
	if av.incomplete != nil {
		fmt.Fprintf(stderr, "ibavtrack: checking the SA's PathRecord: %v\n", av.incomplete)
		partial = true
	}
	if paint == nil {
		err = writeJSON(stdout, pathJSONOf(p, av))
	} else {
		err = writePath(stdout, *paint, p, av)
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if check && len(av.problems) > 0 {
		return cliapp.Exit(exitcode.Problem, fmt.Errorf("the SA's PathRecord disagrees with the route: %d problems", len(av.problems)))
	}
	switch s.outcome(partial).Status() {
	case exitcode.Partial:
		return cliapp.Exit(exitcode.Partial, errors.New("partial result printed: "+s.partialWhy()))
	case exitcode.Inconsistent:
		return errStrict
	}
	return nil
}

// avSource is where the printed AV came from and what comparing the
// SA's PathRecord with the route found.
type avSource struct {
	source string // pathav.SourceSA or SourceComputed
	note   string // why computed, or the SM's LID
	pr     *sa.PathRecord
	// computed is the AV the route gives (before the SA's replaced it).
	computed   model.AV
	problems   []pathav.Finding
	incomplete error // some SLtoVL tables could not be read
}

// avFromSA asks the SA (at the local port's MasterSMLID) for p's
// PathRecord; when one answers, p's AV becomes the SA's and the two are
// compared. Without an SA the AV stays computed and the note says why.
func (s *session) avFromSA(ctx context.Context, p *pathav.Path) (avSource, error) {
	out := avSource{source: pathav.SourceComputed, computed: p.AV}
	timeout := s.settings.Timeout
	smLID, err := sa.MasterSMLID(ctx, s.fab, timeout)
	var c *sa.Client
	if err == nil {
		c, err = sa.NewClient(s.fab, smLID)
	}
	var pr sa.PathRecord
	if err == nil {
		if timeout > 0 {
			c.Timeout = timeout
		}
		c.Retries = s.settings.Retries
		pr, err = pathav.QueryPathRecord(ctx, c, p.AV.SLID, p.AV.DLID)
	}
	if ctx.Err() != nil {
		return out, cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while asking the SA"))
	}
	if err != nil {
		out.note = "no PathRecord from the SA: " + err.Error()
		return out, nil
	}
	out.source, out.pr = pathav.SourceSA, &pr
	out.note = fmt.Sprintf("the SM at LID %d", smLID)
	pathav.ApplyPathRecord(p, &pr)
	q := s.settings.Querier(s.fab)
	read := func(ctx context.Context, n *model.Node, in, port uint8) (smp.SLtoVLMappingTable, error) {
		var t smp.SLtoVLMappingTable
		var buf [smp.DataSize]byte
		if err := q.Get(ctx, n.Path, smp.AttrSLtoVLMappingTable, smp.SL2VLModifier(in, port), buf[:]); err != nil {
			return t, err
		}
		return t, t.UnmarshalBinary(buf[:])
	}
	out.problems, out.incomplete = pathav.CheckPathRecord(ctx, p, &pr, read)
	if ctx.Err() != nil {
		return out, cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while reading SLtoVL tables"))
	}
	return out, nil
}

// portLabel names a path's end and the LID the path uses ("LID 5 of
// 4-7" under an LMC).
func portLabel(p *model.Port, lid uint16) string {
	l := strconv.Itoa(int(lid))
	if lo, hi := p.LIDRange(); lo != hi {
		l = fmt.Sprintf("%d of %d-%d", lid, lo, hi)
	}
	return fmt.Sprintf("%q[%d] (LID %s, port GUID 0x%016x)", p.Node.Description(), p.Phys.Num, l, p.GUID)
}

// writePath prints the AV, where it came from, what comparing it with
// the route found and the per-port table.
func writePath(w io.Writer, paint termout.Painter, p *pathav.Path, src avSource) error {
	av := &p.AV
	fmt.Fprintf(w, "From %s\nTo   %s\n", portLabel(p.Src, av.SLID), portLabel(p.Dst, av.DLID))
	if src.source == pathav.SourceSA {
		fmt.Fprintf(w, "  AV from the SA's PathRecord (%s)\n", src.note)
	} else {
		fmt.Fprintf(w, "  AV computed from the forwarding tables (%s)\n", src.note)
	}
	fmt.Fprintf(w, "  DLID %d  SLID %d  SL %d\n", av.DLID, av.SLID, av.SL)
	fmt.Fprintf(w, "  MTU  %s (code %d), set by %s%s\n", smp.MTUText(av.MTU), av.MTU, av.MTULimit, routeDiffers(av.MTU != src.computed.MTU, smp.MTUText(src.computed.MTU)))
	fmt.Fprintf(w, "  Rate %s Gb/s (code %d), set by %s%s\n", pathav.GbpsText(av.Rate), av.Rate, av.RateLimit, routeDiffers(av.Rate != src.computed.Rate, pathav.GbpsText(src.computed.Rate)+" Gb/s"))
	fmt.Fprintf(w, "  Hops %d\n", av.HopCount)
	if pr := src.pr; pr != nil {
		fmt.Fprintf(w, "  P_Key 0x%04x  PacketLife %d  HopLimit %d  FlowLabel 0x%x  TClass %d  Reversible %v  Preference %d\n",
			pr.PKey, pr.PacketLife, pr.HopLimit, pr.FlowLabel, pr.TClass, pr.Reversible, pr.Preference)
	}
	for _, f := range src.problems {
		fmt.Fprintf(w, "  %s %s\n", paint.Warn("Problem:"), f.Msg)
	}
	header := []string{"Hop", "Node", "Port", "Role", "LID", "MTUCap", "Width", "Speed", "Rate", "Sets"}
	rows := make([][]string, 0, len(p.Ports))
	for _, pp := range p.Ports {
		hop := "-"
		if pp.Hop >= 0 {
			hop = strconv.Itoa(pp.Hop + 1)
		}
		var sets []string
		if pp.SetsMTU {
			sets = append(sets, "MTU")
		}
		if pp.SetsRate {
			sets = append(sets, "rate")
		}
		mark := strings.Join(sets, ", ")
		row := []string{hop, pp.Port.Node.Description(), strconv.Itoa(int(pp.Port.Num)), pp.Role.String(),
			lidText(pp.Port), smp.MTUText(pp.MTUCap), smp.WidthToken(pp.Port.Info.LinkWidthActive),
			pathav.ActiveSpeed(pp.Port).String(), pathav.GbpsText(pp.Rate) + " Gb/s", paint.Warn(mark)}
		rows = append(rows, row)
	}
	return termtable.Write(w, header, rows)
}

// routeDiffers is the note after an SA value the route computes
// otherwise.
func routeDiffers(differs bool, computed string) string {
	if !differs {
		return ""
	}
	return " (the route computes " + computed + ")"
}

// pathRecordJSON is every field of the SA's PathRecord.
type pathRecordJSON struct {
	ServiceID          string `json:"service_id"`
	DGID               string `json:"dgid"`
	SGID               string `json:"sgid"`
	DLID               uint16 `json:"dlid"`
	SLID               uint16 `json:"slid"`
	RawTraffic         bool   `json:"raw_traffic"`
	FlowLabel          uint32 `json:"flow_label"`
	HopLimit           uint8  `json:"hop_limit"`
	TClass             uint8  `json:"tclass"`
	Reversible         bool   `json:"reversible"`
	NumbPath           uint8  `json:"numb_path"`
	PKey               string `json:"pkey"`
	QoSClass           uint16 `json:"qos_class"`
	SL                 uint8  `json:"sl"`
	MTUSelector        uint8  `json:"mtu_selector"`
	MTU                uint8  `json:"mtu"`
	RateSelector       uint8  `json:"rate_selector"`
	Rate               uint8  `json:"rate"`
	PacketLifeSelector uint8  `json:"packet_life_selector"`
	PacketLife         uint8  `json:"packet_life"`
	Preference         uint8  `json:"preference"`
}

func pathRecordJSONOf(p *sa.PathRecord) *pathRecordJSON {
	if p == nil {
		return nil
	}
	return &pathRecordJSON{
		ServiceID: fmt.Sprintf("0x%016x", p.ServiceID), DGID: netip.AddrFrom16(p.DGID).String(), SGID: netip.AddrFrom16(p.SGID).String(),
		DLID: p.DLID, SLID: p.SLID, RawTraffic: p.RawTraffic, FlowLabel: p.FlowLabel, HopLimit: p.HopLimit, TClass: p.TClass,
		Reversible: p.Reversible, NumbPath: p.NumbPath, PKey: fmt.Sprintf("0x%04x", p.PKey), QoSClass: p.QoSClass, SL: p.SL,
		MTUSelector: p.MTUSelector, MTU: p.MTU, RateSelector: p.RateSelector, Rate: p.Rate,
		PacketLifeSelector: p.PacketLifeSelector, PacketLife: p.PacketLife, Preference: p.Preference,
	}
}

// avProblemJSON is one disagreement between the SA and the route.
type avProblemJSON struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Hop     int    `json:"hop"`
	At      string `json:"at"`
}

type pathPortJSON struct {
	Hop      int     `json:"hop"`
	Node     string  `json:"node"`
	NodeGUID string  `json:"node_guid"`
	Port     int     `json:"port"`
	Role     string  `json:"role"`
	LID      uint16  `json:"lid"`
	MTUCap   int     `json:"mtu_cap"`
	Width    string  `json:"width"`
	Speed    string  `json:"speed"`
	Rate     uint8   `json:"rate"`
	RateGbps float64 `json:"rate_gbps"`
	SetsMTU  bool    `json:"sets_mtu"`
	SetsRate bool    `json:"sets_rate"`
}

type avJSON struct {
	DLID      uint16  `json:"dlid"`
	SLID      uint16  `json:"slid"`
	SL        uint8   `json:"sl"`
	MTU       uint8   `json:"mtu"`
	MTUBytes  int     `json:"mtu_bytes"`
	Rate      uint8   `json:"rate"`
	RateGbps  float64 `json:"rate_gbps"`
	Hops      uint8   `json:"hops"`
	MTULimit  string  `json:"mtu_limit"`
	RateLimit string  `json:"rate_limit"`
}

func avJSONOf(av *model.AV) avJSON {
	return avJSON{DLID: av.DLID, SLID: av.SLID, SL: av.SL, MTU: av.MTU, MTUBytes: smp.MTUBytes(av.MTU),
		Rate: av.Rate, RateGbps: smp.RateGbps(av.Rate), Hops: av.HopCount,
		MTULimit: av.MTULimit, RateLimit: av.RateLimit}
}

// portRefJSON names a port as ibhops's JSON does (same fields, same
// types): the node's type, name (its NodeDescription), GUIDs, the port
// number (0 for a switch), base LID and LMC.
type portRefJSON struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	NodeGUID string `json:"node_guid"`
	PortGUID string `json:"port_guid"`
	Port     int    `json:"port"`
	LID      uint16 `json:"lid"`
	LMC      uint8  `json:"lmc"`
}

func portRefOf(p *model.Port) portRefJSON {
	return portRefJSON{
		Type: smp.NodeTypeLower(p.Node.Type()), Name: p.Node.Description(),
		NodeGUID: fmt.Sprintf("0x%016x", p.Node.GUID()), PortGUID: fmt.Sprintf("0x%016x", p.GUID),
		Port: int(p.Phys.Num), LID: p.BaseLID(), LMC: p.LMC(),
	}
}

// pathSchema names path's JSON form (docs/path.schema.json), also the
// form of the document that says why no path could be followed.
const pathSchema = "ibdiag.path/v1"

func pathJSONOf(p *pathav.Path, src avSource) any {
	out := struct {
		Schema       string          `json:"schema"`
		Src          portRefJSON     `json:"src"`
		Dst          portRefJSON     `json:"dst"`
		AV           avJSON          `json:"av"`
		AVSource     string          `json:"av_source"`
		AVSourceNote string          `json:"av_source_note"`
		PathRecord   *pathRecordJSON `json:"path_record"`
		ComputedAV   avJSON          `json:"computed_av"`
		Problems     []avProblemJSON `json:"problems"`
		Ports        []pathPortJSON  `json:"ports"`
	}{Schema: pathSchema, Src: portRefOf(p.Src), Dst: portRefOf(p.Dst), AV: avJSONOf(&p.AV),
		AVSource: src.source, AVSourceNote: src.note, PathRecord: pathRecordJSONOf(src.pr), ComputedAV: avJSONOf(&src.computed),
		Problems: []avProblemJSON{}}
	for _, f := range src.problems {
		out.Problems = append(out.Problems, avProblemJSON{Kind: f.Kind, Message: f.Msg, Hop: f.Hop, At: pathav.PortName(f.Port)})
	}
	for _, pp := range p.Ports {
		out.Ports = append(out.Ports, pathPortJSON{
			Hop: pp.Hop + 1, Node: pp.Port.Node.Description(), NodeGUID: fmt.Sprintf("0x%016x", pp.Port.Node.GUID()),
			Port: int(pp.Port.Num), Role: pp.Role.String(), LID: pp.Port.BaseLID(),
			MTUCap: smp.MTUBytes(pp.MTUCap), Width: smp.WidthToken(pp.Port.Info.LinkWidthActive),
			Speed: pathav.ActiveSpeed(pp.Port).String(), Rate: pp.Rate, RateGbps: smp.RateGbps(pp.Rate),
			SetsMTU: pp.SetsMTU, SetsRate: pp.SetsRate,
		})
	}
	return out
}
