package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

const examples = `With no mode option, ibhops discovers the fabric and prints its LID hop
   matrix exactly as OpenSM writes opensm-lid-matrix.dump: one block per
   switch, in OpenSM's switch order (NodeGUID byte-reversed, ascending: the
   order of OpenSM's switch map on x86), a row for every switch LID.
   SRC, DST and SWITCH are a LID (decimal or 0x1f), a port or node GUID
   (0x followed by more than 4 hex digits), or a node name (node name map)
   or NodeDescription.

EXAMPLES:
   ibhops --sim testdata/fabrics/fattree2.net        the hop matrix of a simulated fat tree
   ibhops --ibsim > lid-matrix.dump                  compare with OpenSM's opensm-lid-matrix.dump
   ibhops H0 H7                                      least hops between two ports (names, LIDs or GUIDs)
   ibhops --switch S0                                one switch's hops to every LID, with its neighbours
   ibhops --trace 3 7                                the route from LID 3 to LID 7, as ibtracert prints it
   ibhops --lft 0x0000000000200000                   one switch's forwarding table, as ibroute prints it
   ibhops -D --lft 0,1 0x10 0x20                     LIDs 0x10-0x20 of the switch at directed route 0,1, as ibroute -D 0,1 0x10 0x20
   ibhops --mft S0                                   one switch's multicast forwarding table, as ibroute -M prints it
   ibhops --check-routes                             follow every switch-to-LID route through the LFTs
   ibhops --check-routes --json | jq .summary        the same, machine-readable
   ibhops --check-mcast --smkey 1                    check every multicast group's tree (members listed by OpenSM's SA)

EXIT STATUS:
   0 done, nothing wrong; 1 fatal error; 2 bad arguments or input; 3 partial
   result (SMPs failed); 4 a problem was found (--check-routes or
   --check-mcast findings, a broken --trace route, no path between SRC and
   DST); 5 nothing to check (--check-routes, --trace before any SM ran: no
   LIDs or no tables; --check-mcast: no SM, no group, no MFT programmed); 6
   with --strict, the fabric answered inconsistently; 130 interrupted (the
   --output file is not replaced); 141 stdout closed by its reader.`

// openFabric opens the transport; tests replace it to hand the tool a
// simulator they changed.
var openFabric = attach.Open

// discoverFabric discovers the fabric; tests replace it to share one
// discovery among runs that only read the same fabric.
var discoverFabric = discover.Discover

// newApp builds the command; stdout and stderr are where it writes.
func newApp(stdout, stderr io.Writer) *cli.App {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "switch", Usage: "print switch `SWITCH`'s hops to every LID and its neighbours as tables"},
		&cli.BoolFlag{Name: "trace", Usage: "trace the route from SRC to DST through the forwarding tables (ibtracert's format)"},
		&cli.StringFlag{Name: "lft", Usage: "print switch `SWITCH`'s linear forwarding table (ibroute's format); then optional arguments STARTLID [ENDLID] limit the LIDs, as ibroute's"},
		&cli.BoolFlag{Name: "Direct", Aliases: []string{"D"}, Usage: "--lft's SWITCH is a directed route from the port attached to (0,1,...), as ibroute -D"},
		&cli.StringFlag{Name: "mft", Usage: "print switch `SWITCH`'s multicast forwarding table (ibroute -M's format)"},
		&cli.BoolFlag{Name: "check-routes", Usage: "read every switch's forwarding table and check every switch-to-LID route"},
		&cli.BoolFlag{Name: "check-mcast", Usage: "check each multicast group the SA lists: its switches' MFT entries form one loop-free tree reaching its members only, at its MTU and rate"},
		&cli.StringFlag{Name: "smkey", Usage: "with --check-mcast, SM_Key `KEY` sent to the SA (as saquery --smkey), so that OpenSM lists each group's members"},
		&cli.StringFlag{Name: "routing-engine", Value: "minhop", Usage: "hop matrix of OpenSM routing engine `NAME`: minhop, updn, dnup, file, ftree, lash, dor, torus-2QoS, nue, dfsssp, sssp (dump, SRC DST, --switch, --check-routes)"},
		&cli.BoolFlag{Name: "routed", Usage: "hops along the switches' forwarding tables instead of a routing engine's matrix (dump; SRC DST: the route to DST's exact LID)"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text (every mode)"},
		&cli.IntFlag{Name: "limit", Value: 50, Usage: "with --check-routes or --check-mcast, print at most `N` findings of each kind as text (0: all)"},
		&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when it exists)"},
		&cli.StringFlag{Name: "output", Usage: "write the output to `FILE` (atomically) instead of stdout"},
	}
	flags = append(flags, attach.Flags(true)...)
	return &cli.App{
		Name:                   "ibhops",
		Usage:                  "LID hop matrix (opensm-lid-matrix.dump), least-hop queries, route traces and route checks",
		UsageText:              "ibhops [options]\n   ibhops [options] SRC DST\n   ibhops [options] --switch SWITCH | [-D] --lft SWITCH [STARTLID [ENDLID]] | --mft SWITCH | --trace SRC DST | --check-routes | --check-mcast [--smkey KEY]",
		Description:            examples,
		Flags:                  flags,
		Writer:                 stdout,
		ErrWriter:              stderr,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Action: func(c *cli.Context) error {
			return hopsCmd(c, stdout, stderr)
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run is the whole command: it returns the exit status.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return cliapp.Run(ctx, newApp(stdout, stderr), args, stderr)
}

// mode is what one run does.
type mode int

const (
	modeDump mode = iota
	modeQuery
	modeSwitch
	modeTrace
	modeLFT
	modeMFT
	modeCheck
	modeMCast
)

// tool holds what every mode needs once the fabric is discovered.
type tool struct {
	ctx      context.Context
	settings attach.Settings
	fab      *attach.Fabric
	res      *discover.Result
	f        *model.Fabric
	names    *nodenamemap.Map
	json     bool
	limit    int
	// engine is the routing engine whose matrix the dump, queries and
	// --switch use; routed uses the forwarding tables instead.
	engine routing.Engine
	routed bool
	q      *discover.Querier
	// notes are printed on stderr after the output.
	notes []string
	// problem is set when the mode found something wrong (exit 4).
	problem bool
	// partial is set when SMPs after discovery failed (exit 3).
	partial bool
	// nothing, when set, says why the check had nothing to check (exit 5);
	// nothingIn names the mode in that message ("--trace: ") if needed.
	nothing, nothingIn string
	// output is the output file written, if any.
	output string
	// unroutedRule names the engine's rule for the routes it leaves out
	// on purpose (--check-routes; "" when it has none).
	unroutedRule string
	// smKey is --smkey: the SM_Key --check-mcast sends to the SA.
	smKey uint64
}

func (t *tool) note(format string, a ...any) { t.notes = append(t.notes, fmt.Sprintf(format, a...)) }

// name is the node's name: the node name map's, else its NodeDescription.
func (t *tool) name(n *model.Node) string { return t.names.Name(n.GUID(), n.Description()) }

func (t *tool) nameFunc() func(*model.Node) string {
	if t.names.Len() == 0 {
		return nil
	}
	return t.name
}

// resolve finds the logical port a user named; errors are usage errors
// naming the input.
func (t *tool) resolve(flag, spec string) (*model.Port, error) {
	p, _, err := t.resolveLID(flag, spec)
	return p, err
}

// resolveLID is resolve that also returns the LID meant: the LID given
// (any of an LMC range), else the port's base LID.
func (t *tool) resolveLID(flag, spec string) (*model.Port, uint16, error) {
	p, lid, err := t.f.ResolveLID(spec, t.nameFunc())
	if err != nil {
		hint := ""
		if t.f.MaxLID() == 0 {
			hint = routing.NoLIDs
		}
		return nil, 0, cliapp.PortError(flag, spec, err, t.f, t.nameFunc(), hint)
	}
	return p, lid, nil
}

// resolveDirect resolves --lft's SWITCH given as a directed route (-D):
// the switch at the end of the route from the port attached to, and the
// route as ibroute names it ("DR path slid 65535; dlid 65535; 0,1").
func (t *tool) resolveDirect(spec string) (*model.Node, string, error) {
	in := "-D --lft " + spec
	path, err := smp.ParseDRPath(spec)
	if err != nil {
		return nil, "", cliapp.Usage(in, err.Error())
	}
	n := t.f.From
	for i := 1; i <= int(path.Len()) && n != nil; i++ {
		pp := n.Port(int(path.Port(i)))
		if pp == nil || pp.Remote == nil {
			return nil, "", cliapp.Usage(in, fmt.Sprintf("no link at port %d of %s %q (hop %d)", path.Port(i), nodeType(n), t.name(n), i))
		}
		n = pp.Remote.Node
	}
	if !n.IsSwitch() {
		return nil, "", cliapp.Usage(in, fmt.Sprintf("%s %q is not a switch", nodeType(n), t.name(n)))
	}
	return n, "DR path slid 65535; dlid 65535; " + path.String(), nil
}

// cStrtoul parses s as C's strtoul(s, NULL, 0) does for ibroute's LID
// arguments (leading blanks; 0x hexadecimal, 0 octal, else decimal; the
// digits up to the first that is not one), within 0..0xFFFF; ok is false
// for a negative or larger value.
func cStrtoul(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	s = strings.TrimPrefix(s, "+")
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && strings.ContainsAny(s[2:3], "0123456789abcdefABCDEF"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0"):
		base = 8
	}
	v := 0
	for _, ch := range s {
		d := strings.IndexRune("0123456789abcdef", ch|0x20)
		if d < 0 || d >= base {
			break
		}
		if v = v*base + d; v > 0xFFFF {
			return 0, false
		}
	}
	return v, true
}

// resolveSwitch is resolve for a switch.
func (t *tool) resolveSwitch(flag, spec string) (*model.Node, error) {
	p, err := t.resolve(flag, spec)
	if err != nil {
		return nil, err
	}
	if !p.Node.IsSwitch() {
		typ := nodeType(p.Node)
		if typ == "ca" {
			typ = "CA"
		}
		return nil, cliapp.NotASwitch(flag, spec, typ, t.name(p.Node))
	}
	return p.Node, nil
}

func hopsCmd(c *cli.Context, stdout, stderr io.Writer) error {
	// Mode and arguments.
	m := modeDump
	set := []string{}
	if c.IsSet("switch") {
		m = modeSwitch
		set = append(set, "--switch")
	}
	if c.Bool("trace") {
		m = modeTrace
		set = append(set, "--trace")
	}
	if c.IsSet("lft") {
		m = modeLFT
		set = append(set, "--lft")
	}
	if c.IsSet("mft") {
		m = modeMFT
		set = append(set, "--mft")
	}
	if c.Bool("check-routes") {
		m = modeCheck
		set = append(set, "--check-routes")
	}
	if c.Bool("check-mcast") {
		m = modeMCast
		set = append(set, "--check-mcast")
	}
	if len(set) > 1 {
		return cliapp.Usage(strings.Join(set, " and "), "choose one mode")
	}
	args := c.Args().Slice()
	switch {
	case m == modeDump && len(args) == 1 && args[0] == "help":
		return cli.ShowAppHelp(c) // as "ibavtrack help"
	case m == modeDump && len(args) == 2:
		m = modeQuery
	case m == modeTrace && len(args) != 2:
		return cliapp.Usage("--trace", "needs two arguments: SRC DST")
	case m == modeDump && len(args) != 0:
		return cliapp.Usage(strings.Join(args, " "), "give two ports (SRC DST) or none")
	case m == modeLFT && len(args) > 2:
		return cliapp.Usage(strings.Join(args, " "), "--lft takes at most STARTLID ENDLID")
	case m != modeTrace && m != modeDump && m != modeLFT && len(args) != 0:
		return cliapp.Usage(strings.Join(args, " "), "no arguments with "+set[0])
	case c.Bool("Direct") && m != modeLFT:
		return cliapp.Usage("-D/--Direct", "only with --lft")
	}
	// ibroute's STARTLID and ENDLID (C strtoul, base 0; 0 = from the
	// first, to LinearFDBTop)
	var lftRange [2]int
	for i, a := range args {
		if m != modeLFT {
			break
		}
		v, ok := cStrtoul(a)
		if !ok {
			return cliapp.Usage(a, "not a LID (decimal, 0x hexadecimal or 0 octal, as ibroute)")
		}
		lftRange[i] = v
	}
	engine, err := routing.ParseEngine(c.String("routing-engine"))
	if err != nil {
		names := make([]string, len(routing.Engines))
		for i, e := range routing.Engines {
			names[i] = string(e)
		}
		return cliapp.Usage("--routing-engine "+c.String("routing-engine"), "not an OpenSM routing engine (one of "+strings.Join(names, ", ")+")")
	}
	routed := c.Bool("routed")
	switch {
	case routed && c.IsSet("routing-engine"):
		return cliapp.Usage("--routed and --routing-engine", "choose one")
	case routed && m != modeDump && m != modeQuery:
		return cliapp.Usage("--routed", "only with the dump or SRC DST")
	case c.IsSet("routing-engine") && m != modeDump && m != modeQuery && m != modeSwitch && m != modeCheck:
		return cliapp.Usage("--routing-engine", "only with the dump, SRC DST, --switch or --check-routes")
	case engine == routing.Torus2QoS && m != modeDump:
		return cliapp.Usage("--routing-engine torus-2QoS", "builds no hop matrix to query: use --routed")
	}
	var smKey uint64
	if c.IsSet("smkey") {
		if m != modeMCast {
			return cliapp.Usage("--smkey", "only with --check-mcast")
		}
		if smKey, err = strconv.ParseUint(c.String("smkey"), 0, 64); err != nil {
			return cliapp.Usage("--smkey "+c.String("smkey"), "not an SM_Key (a 64-bit number, decimal or 0x hexadecimal)")
		}
	}
	if c.Int("limit") < 0 {
		return cliapp.Usage("--limit "+strconv.Itoa(c.Int("limit")), "must be 0 or more")
	}
	s, err := attach.FromContext(c)
	if err != nil {
		return cliapp.InputError(err)
	}
	cfg := s.Config()

	t := &tool{ctx: c.Context, settings: s, json: c.Bool("json"), limit: c.Int("limit"), engine: engine, routed: routed, smKey: smKey}
	names, err := infile.Load(c.Context, "--node-name-map", c.String("node-name-map"), func() (*nodenamemap.Map, error) {
		return nodenamemap.Open(c.String("node-name-map"))
	})
	if errors.Is(err, context.Canceled) {
		return cliapp.InputError(err)
	}
	if err != nil {
		if c.IsSet("node-name-map") {
			// A map asked for by name must be usable: refuse it.
			return cliapp.Usage("--node-name-map", err.Error())
		}
		// The default map: warn as infiniband-diags and go on without it.
		var pe *nodenamemap.ParseError
		if errors.As(err, &pe) {
			fmt.Fprint(stderr, pe.Warning())
		} else {
			fmt.Fprintf(stderr, "ibhops: node name map: %v\n", err)
		}
		names = nil
	}
	t.names = names

	// The output file is opened before discovery, so a bad path fails at
	// once; it is renamed into place only when complete.
	var outs outfile.Set
	defer outs.Abort()
	var outF *outfile.File
	if c.IsSet("output") {
		out := c.String("output")
		if out == "" {
			return cliapp.Usage(`--output ""`, "empty file name")
		}
		if outF, err = outs.Create(c.Context, out); err != nil {
			return cliapp.Usage("--output", err.Error())
		}
	}

	fab, err := openFabric(c.Context, s)
	if err != nil {
		return cliapp.Fail(err) // usage 2, interrupted 130, else 1
	}
	defer fab.Close()
	t.fab = fab
	s.Note(stderr, "ibhops", "attached to "+fab.Desc)
	res, err := discoverFabric(c.Context, fab, cfg)
	if err != nil {
		if c.Context.Err() != nil {
			return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted before the start node answered"))
		}
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("discover failed: %w", err))
	}
	if res.Interrupted {
		return cliapp.Exit(exitcode.Interrupted, fmt.Errorf("interrupted during discovery (%d nodes, %d SMPs)", len(res.Fabric.Nodes), res.SMPs))
	}
	t.res = res
	t.f = res.Fabric
	t.q = s.Querier(fab)

	// Resolve the ports first: a bad name is a usage error, before any
	// output.
	var write func(io.Writer) error
	switch m {
	case modeDump:
		write = t.dump
	case modeQuery:
		a, err := t.resolve("", args[0])
		if err != nil {
			return err
		}
		b, dlid, err := t.resolveLID("", args[1])
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return t.query(w, a, b, dlid) }
	case modeSwitch:
		sw, err := t.resolveSwitch("--switch", c.String("switch"))
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return t.switchTable(w, sw) }
	case modeTrace:
		// A trace follows the forwarding tables: without LIDs or tables
		// there is no route to follow.
		if why := routing.NothingToCheck(t.f, true); why != "" {
			if !t.json {
				return cliapp.Exit(exitcode.NothingChecked, errors.New("--trace: nothing to check: "+why))
			}
			// JSON still says why, as --check-routes does.
			t.nothing, t.nothingIn = why, "--trace: "
			write = func(w io.Writer) error { return writeJSON(w, nothingJSON("ibdiag.trace/v1", why)) }
			break
		}
		a, err := t.resolve("--trace", args[0])
		if err != nil {
			return err
		}
		b, dlid, err := t.resolveLID("--trace", args[1])
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return t.trace(w, a, b, dlid) }
	case modeLFT:
		var sw *model.Node
		portID := ""
		if c.Bool("Direct") {
			sw, portID, err = t.resolveDirect(c.String("lft"))
		} else {
			sw, err = t.resolveSwitch("--lft", c.String("lft"))
		}
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return t.lft(w, sw, portID, lftRange[0], lftRange[1]) }
	case modeMFT:
		sw, err := t.resolveSwitch("--mft", c.String("mft"))
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return t.mft(w, sw) }
	case modeCheck:
		write = t.checkRoutes
	case modeMCast:
		write = t.checkMCast
	}
	if outF != nil {
		err = write(outF)
		if err == nil && c.Context.Err() == nil {
			// An interrupted run never replaces the output file.
			err = outs.Commit()
		}
	} else {
		err = write(stdout)
	}
	if c.Context.Err() != nil {
		if outF != nil {
			outF.Abort()
			fmt.Fprintf(stderr, "ibhops: interrupted: %s left as it was\n", outF.Name())
		}
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted"))
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if outF != nil {
		t.output = outF.Name()
	}
	return t.report(stderr)
}

// report prints discovery errors and notes on stderr and chooses the
// exit status (exitcode.Outcome): a problem found (4) before a partial
// result (3), nothing to check (5) and, with --strict, inconsistencies (6).
func (t *tool) report(stderr io.Writer) error {
	res := t.res
	t.settings.ReportSMPErrors(stderr, "ibhops", res.Errors, res.Fabric, nil)
	attach.ReportProblems(stderr, "ibhops", res.Problems, nil, nil)
	for _, n := range t.notes {
		fmt.Fprintf(stderr, "ibhops: %s\n", n)
	}
	o := exitcode.Outcome{
		Problem:        t.problem,
		Partial:        res.Partial() || t.partial,
		NothingChecked: t.nothing != "",
		Inconsistent:   res.Inconsistent(),
		Strict:         t.settings.Strict,
	}
	if o.Partial && t.output != "" {
		fmt.Fprintf(stderr, "ibhops: %s holds a partial result\n", t.output)
	}
	switch code := o.Status(); code {
	case exitcode.Problem:
		if o.Partial {
			return cliapp.Exit(code, errors.New("problems found (on a partial view of the fabric)"))
		}
		return cliapp.Exit(code, nil)
	case exitcode.Partial:
		if res.Err != nil {
			return cliapp.Exit(code, fmt.Errorf("partial result: %s", t.settings.DiscoveryErr(res.Err)))
		}
		return cliapp.Exit(code, fmt.Errorf("partial result: %d SMPs failed in discovery and after it", len(res.Errors)+len(t.q.Errors())))
	case exitcode.NothingChecked:
		return cliapp.Exit(code, fmt.Errorf("%snothing to check: %s", t.nothingIn, t.nothing))
	case exitcode.Inconsistent:
		return cliapp.Exit(code, errors.New("--strict: the fabric answered inconsistently"))
	}
	return nil
}
