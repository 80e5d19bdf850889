package main

import (
	"errors"
	"fmt"
	"io"
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
	"github.com/ibfabric/ibdiag/pkg/smp"
)

func pathCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "path",
		Usage:     "follow the forwarding tables from SRC to DST and print the address vector (path MTU, static rate, hops)",
		UsageText: "ibavtrack path [--json] [fabric options] SRC DST   (LID, port or node GUID, or node name)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		}, commonFlags()...),
		Action: func(c *cli.Context) error { return pathCmd(c, stdout, stderr) },
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
	f := s.res.Fabric
	if why := routing.NothingToCheck(f, true); why != "" {
		// No path can be followed: say why instead of "no such LID".
		s.partial(stderr)
		return nothingToCheckJSON(stdout, c.Bool("json"), pathSchema, why)
	}
	src, slid, err := resolveLID(f, "SRC", c.Args().Get(0))
	if err != nil {
		return err
	}
	dst, dlid, err := resolveLID(f, "DST", c.Args().Get(1))
	if err != nil {
		return err
	}
	p, err := pathav.ResolveLIDs(f, s.tables, src, slid, dst, dlid)
	partial := s.partial(stderr)
	if err != nil {
		var re *routing.RouteError
		if errors.As(err, &re) || errors.Is(err, routing.ErrNotActive) {
			return cliapp.Exit(exitcode.Problem, fmt.Errorf("no path from %s to %s: %v", c.Args().Get(0), c.Args().Get(1), err))
		}
		return cliapp.Exit(exitcode.Problem, fmt.Errorf("%s to %s: %v", c.Args().Get(0), c.Args().Get(1), err))
	}
	if c.Bool("json") {
		err = writeJSON(stdout, pathJSONOf(p))
	} else {
		err = writePath(stdout, p)
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	switch s.outcome(partial).Status() {
	case exitcode.Partial:
		return cliapp.Exit(exitcode.Partial, errors.New("partial result printed: "+s.partialWhy()))
	case exitcode.Inconsistent:
		return errStrict
	}
	return nil
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

// writePath prints the AV and the per-port table.
func writePath(w io.Writer, p *pathav.Path) error {
	paint := termout.NewPainter(w)
	av := &p.AV
	fmt.Fprintf(w, "From %s\nTo   %s\n", portLabel(p.Src, av.SLID), portLabel(p.Dst, av.DLID))
	fmt.Fprintf(w, "  DLID %d  SLID %d  SL %d\n", av.DLID, av.SLID, av.SL)
	fmt.Fprintf(w, "  MTU  %s (code %d), set by %s\n", smp.MTUText(av.MTU), av.MTU, av.MTULimit)
	fmt.Fprintf(w, "  Rate %s Gb/s (code %d), set by %s\n", pathav.GbpsText(av.Rate), av.Rate, av.RateLimit)
	fmt.Fprintf(w, "  Hops %d\n", av.HopCount)
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

func pathJSONOf(p *pathav.Path) any {
	out := struct {
		Schema string         `json:"schema"`
		Src    portRefJSON    `json:"src"`
		Dst    portRefJSON    `json:"dst"`
		AV     avJSON         `json:"av"`
		Ports  []pathPortJSON `json:"ports"`
	}{Schema: pathSchema, Src: portRefOf(p.Src), Dst: portRefOf(p.Dst), AV: avJSONOf(&p.AV)}
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
