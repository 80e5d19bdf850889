package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/internal/thresholdflag"
	"github.com/ibfabric/ibdiag/pkg/chassis"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// errorsOutstanding bounds the MADs errors has in flight (discovery and
// PerfMgt reads) when -o is not given. Each one in flight costs a
// goroutine and its buffers: through ibsim, on the 2,144-node tree, 32
// instead of 64 cut 0.8 MB of peak RSS (16: 0.9 MB, but 1.3 times the wall
// time at load 26); still 16 times ibqueryerrors' window (libibnetdisc's
// 2, its PerfMgt reads one at a time).
const errorsOutstanding = 32

// errorsWindow is the most MADs errors has in flight: -o when given
// (set), else at most errorsOutstanding.
func errorsWindow(set bool, o int) int {
	if set {
		return o
	}
	return min(o, errorsOutstanding)
}

// defaultThresholdFile is ibqueryerrors' default; tests change it.
var defaultThresholdFile = portcounters.DefaultThresholdFile

// suppressions records ibqueryerrors' suppressed counters in the order
// of the command line: every -s list and every -c adds to it, as
// ibqueryerrors' option handler does (its "Suppressed:" line lists them
// in that order, repeats included).
type suppressions struct{ names []string }

// suppressFlag is -s/--suppress (a list) or, with common, -c (no value).
type suppressFlag struct {
	s      *suppressions
	common bool
}

// Set records one -s list, or one -c (the flag package passes "true").
// urfave/cli copies a flag's String() ("") to its other names after
// parsing: an empty value adds nothing.
func (f suppressFlag) Set(v string) error {
	if f.common {
		if v != "" {
			f.s.names = append(f.s.names, "PortRcvSwitchRelayErrors")
		}
		return nil
	}
	for _, name := range strings.Split(v, ",") {
		if name != "" { // (strtok skips empty fields)
			f.s.names = append(f.s.names, name)
		}
	}
	return nil
}

func (f suppressFlag) String() string { return "" }

// IsBoolFlag makes -c take no value.
func (f suppressFlag) IsBoolFlag() bool { return f.common }

// noValueFlag is a GenericFlag that takes no value (-c): the option
// reordering and the completions ask TakesValue.
type noValueFlag struct{ *cli.GenericFlag }

func (noValueFlag) TakesValue() bool { return false }

func errorsCommand(stdout, stderr io.Writer) *cli.Command {
	sup := &suppressions{}
	return &cli.Command{
		Name:  "errors",
		Usage: "read every port's PerfMgt error counters and list the ports beyond their thresholds, as ibqueryerrors",
		UsageText: "ibavtrack errors [--threshold-file FILE] [--node-name-map FILE] [-s LIST] [-c] [--switch] [--ca] [--router]\n" +
			"   [-G GUID | -D PATH] [--load-cache FILE] [--data | --counters] [--details] [-r] [--check] [--json] [--clear-errors] [--clear-counts] [--output FILE] [fabric options]\n" +
			"   (reading never changes a counter; --clear-errors/--clear-counts send PortCounters Sets)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "threshold-file", Usage: "thresholds in ibqueryerrors' format, `FILE` (default " + portcounters.DefaultThresholdFile + " when it exists)"},
			&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when present, as ibqueryerrors)"},
			&cli.GenericFlag{Name: "suppress", Aliases: []string{"s"}, Value: suppressFlag{s: sup}, Usage: "do not judge the counters `LIST` (comma-separated names, as ibqueryerrors -s; repeated lists add up)"},
			noValueFlag{&cli.GenericFlag{Name: "suppress-common", Aliases: []string{"c"}, Value: suppressFlag{s: sup, common: true}, Usage: "do not judge PortRcvSwitchRelayErrors (as ibqueryerrors -c)"}},
			&cli.BoolFlag{Name: "switch", Usage: "read switches only (with --ca/--router: those types)"},
			&cli.BoolFlag{Name: "ca", Usage: "read CAs only (with --switch/--router: those types)"},
			&cli.BoolFlag{Name: "router", Usage: "read routers only (with --switch/--ca: those types)"},
			&cli.BoolFlag{Name: "check", Usage: "exit 4 when a port is beyond a threshold"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON (schema ibdiag.errors/v1) instead of ibqueryerrors' format"},
			&cli.BoolFlag{Name: "clear-errors", Aliases: []string{"k"}, Usage: "after reading, reset the error counters (a PerfMgt Set, as ibqueryerrors -k)"},
			&cli.BoolFlag{Name: "clear-counts", Aliases: []string{"K"}, Usage: "after reading, reset the data counters (a PerfMgt Set, as ibqueryerrors -K)"},
			&cli.BoolFlag{Name: "data", Usage: "add the data counters that are not 0 to each port reported (as ibqueryerrors --data)"},
			&cli.BoolFlag{Name: "counters", Usage: "print every port's data counters instead of the errors (as ibqueryerrors --counters)"},
			&cli.StringFlag{Name: "port-guid", Aliases: []string{"G"}, Usage: "report only the node holding the port of GUID `GUID` (as ibqueryerrors -G)"},
			&cli.StringFlag{Name: "S", Usage: "the same as -G (as ibqueryerrors -S)"},
			&cli.StringFlag{Name: "Direct", Aliases: []string{"D"}, Usage: "report only the node at directed route `PATH` (0,1,...) from the port attached to (as ibqueryerrors -D)"},
			&cli.StringFlag{Name: "load-cache", Usage: "take the fabric from ibnetdiscover cache `FILE` instead of discovering it (the counters are read from the fabric, by the cache's LIDs; as ibqueryerrors --load-cache)"},
			&cli.BoolFlag{Name: "report-port", Aliases: []string{"r"}, Usage: "add a \"Link info\" line (link state, width, speed, the peer) after each port line (as ibqueryerrors -r)"},
			&cli.BoolFlag{Name: "details", Usage: "read and print PortRcvErrorDetails and PortXmitDiscardDetails of the ports whose PortRcvErrors or PortXmitDiscards are reported (as ibqueryerrors --details)"},
			&cli.BoolFlag{Name: "skip-sl", Usage: "accepted for ibqueryerrors' --skip-sl: ibavtrack asks the SA for no SL (PerfMgt MADs go on SL 0)"},
			&cli.BoolFlag{Name: "GNDN", Aliases: []string{"R"}, Usage: "accepted for ibqueryerrors' -R (obsolete there; does nothing)"},
			outputFlag(),
		}, commonFlags()...),
		Action: withOutput(stdout, stderr, func(c *cli.Context, stdout, stderr io.Writer) error {
			return errorsCmd(c, sup.names, stdout, stderr)
		}),
	}
}

// loadThresholds reads the named threshold file, or ibqueryerrors'
// default one when it exists.
func loadThresholds(c *cli.Context, stderr io.Writer) (portcounters.Thresholds, error) {
	return thresholdflag.Load(c, "ibavtrack", defaultThresholdFile, stderr)
}

// selectNode finds the node -G/-S GUID or -D PATH names, as ibqueryerrors
// reports only it: the node holding the port of that GUID, or at the end
// of that directed route. For a CA or router it also returns the port
// libibnetdisc's one-hop discovery from there knows (the port of the GUID,
// or the one the route enters); 0 otherwise. No option: nil.
func selectNode(c *cli.Context, f *model.Fabric) (*model.Node, int, error) {
	n, q, _, err := selectNodePeer(c, f)
	return n, q, err
}

// selectNodePeer is selectNode that also returns, for -D to a CA or
// router more than one hop away, the peer ibqueryerrors -r shows for its
// port: libibnetdisc retracts the route to the switch before it and links
// the CA to that switch's port the route entered it by.
func selectNodePeer(c *cli.Context, f *model.Fabric) (*model.Node, int, *model.PhysPort, error) {
	flag, spec := "", ""
	for _, name := range []string{"port-guid", "S", "Direct"} {
		if c.IsSet(name) {
			if flag != "" {
				return nil, 0, nil, cliapp.Usage("-"+flag+" and -"+name, "choose one")
			}
			flag, spec = name, c.String(name)
		}
	}
	switch flag {
	case "":
		return nil, 0, nil, nil
	case "Direct":
		path, err := smp.ParseDRPath(spec)
		if err != nil {
			return nil, 0, nil, cliapp.Usage("-D "+spec, err.Error())
		}
		n, q := f.From, int(f.FromPort)
		var peer *model.PhysPort // the port the route entered the node before n by
		for i := 1; i <= int(path.Len()); i++ {
			if i > 1 {
				peer = n.Port(q)
			}
			pp := n.Port(int(path.Port(i)))
			if pp == nil || pp.Remote == nil {
				return nil, 0, nil, cliapp.Usage("-D "+spec, fmt.Sprintf("no link at port %d of %q (hop %d)", path.Port(i), n.Description(), i))
			}
			n, q = pp.Remote.Node, int(pp.Remote.Num)
		}
		if n.IsSwitch() {
			return n, 0, nil, nil
		}
		return n, q, peer, nil
	}
	in := "-G " + spec
	if flag == "S" {
		in = "-S " + spec
	}
	g, ok := cStrtoull(spec)
	if !ok {
		return nil, 0, nil, cliapp.Usage(in, "not a GUID")
	}
	pp := f.PortByGUID(g)
	if pp == nil {
		return nil, 0, nil, cliapp.Usage(in, "no port of the fabric has this GUID")
	}
	if pp.Node.IsSwitch() {
		return pp.Node, 0, nil, nil
	}
	return pp.Node, int(pp.Phys.Num), nil, nil
}

// cStrtoull reads a GUID as C's strtoull(s, NULL, 0) does (0x
// hexadecimal, 0 octal, else decimal, up to the first other character);
// ok is false when no digit is read or the value overflows.
func cStrtoull(s string) (uint64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	s = strings.TrimPrefix(s, "+")
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0"):
		base = 8
	}
	end := 0
	for end < len(s) && strings.IndexByte("0123456789abcdef"[:base], s[end]|0x20) >= 0 {
		end++
	}
	if end == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:end], base, 64)
	return v, err == nil
}

func errorsCmd(c *cli.Context, suppressed []string, stdout, stderr io.Writer) error {
	if c.NArg() > 0 {
		return cliapp.Usage(c.Args().First(), "errors takes no arguments")
	}
	th, err := loadThresholds(c, stderr)
	if err != nil {
		return err
	}
	for _, name := range suppressed {
		if !th.Suppress(name) {
			// ibqueryerrors ignores it silently; say so.
			fmt.Fprintf(stderr, "ibavtrack: warning: --suppress: unknown counter %q ignored\n", name)
		}
	}
	var types []uint8
	for flag, t := range map[string]uint8{"switch": smp.NodeSwitch, "ca": smp.NodeCA, "router": smp.NodeRouter} {
		if c.Bool(flag) {
			types = append(types, t)
		}
	}
	names, err := infile.Load(c.Context, "--node-name-map", c.String("node-name-map"), func() (*nodenamemap.Map, error) {
		return nodenamemap.Open(c.String("node-name-map"))
	})
	if errors.Is(err, context.Canceled) {
		return cliapp.InputError(err)
	}
	if err != nil {
		if c.IsSet("node-name-map") {
			return cliapp.Usage("--node-name-map", err.Error())
		}
		// The default map: warn and run without it, as ibqueryerrors.
		fmt.Fprintf(stderr, "ibavtrack: warning: node name map: %v\n", err)
		names = nil
	}
	var cached *model.Fabric
	if f := c.String("load-cache"); f != "" {
		if c.IsSet("Direct") {
			return cliapp.Usage("--load-cache and -D", "a cache has no directed routes to follow (ibqueryerrors refuses them together too)")
		}
		fab, skipped, err := ibndcache.LoadSkipped(f)
		if err != nil {
			return cliapp.Exit(exitcode.Usage, fmt.Errorf("--load-cache: %w", err))
		}
		if skipped.Any() {
			fmt.Fprintf(stderr, "ibavtrack: warning: --load-cache: %s: incomplete cache: %v\n", f, skipped)
		}
		cached = fab
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	s.settings.Outstanding = errorsWindow(c.IsSet("outstanding-smps"), s.settings.Outstanding)
	s.cfg.Outstanding = s.settings.Outstanding
	if cached != nil {
		s.res = &discover.Result{Fabric: cached}
	} else if err := s.sweep(c.Context, false); err != nil {
		return err
	}
	// PMAs are reached by LID: without LIDs no SM ran and nothing can be
	// read. Say so (exit 5) instead of failing every port.
	if why := routing.NothingToCheck(s.res.Fabric, false); why != "" {
		s.partial(stderr)
		return nothingToCheckJSON(stdout, c.Bool("json"), portcounters.Schema, why)
	}
	only, onlyPort, peer, err := selectNodePeer(c, s.res.Fabric)
	if err != nil {
		return err
	}
	cfg := portcounters.Config{
		Querier: s.settings.Querier(s.fab), Transport: s.fab, Timeout: s.settings.Timeout, Retries: s.settings.Retries,
		Outstanding: s.settings.Outstanding, Thresholds: th,
		ClearErrors: c.Bool("clear-errors"), ClearCounts: c.Bool("clear-counts"), Types: types,
		// --counters reads every port on its own (no AllPortSelect sum)
		PerPort: c.Bool("counters"),
		// the text report prints only the ports beyond a threshold (and
		// the failures); --json and --counters print every port
		OverOnly: !c.Bool("json") && !c.Bool("counters"),
		Details:  c.Bool("details") && !c.Bool("counters"),
		Node:     only, Port: onlyPort,
	}
	rep, rerr := portcounters.Read(c.Context, cfg, s.res.Fabric)
	if rerr != nil && c.Context.Err() != nil {
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while reading port counters"))
	}
	if rerr != nil {
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("reading port counters: %w", rerr))
	}
	rep.Names = names
	if c.Bool("counters") {
		rep.ForgetErrors()
	}
	if c.Bool("json") {
		err = writeJSON(stdout, rep.JSON())
	} else {
		o := portcounters.IBQueryErrorsOptions{Data: c.Bool("data"), CountersOnly: c.Bool("counters"), ReportPort: c.Bool("report-port"),
			NoPeers: only != nil && !only.IsSwitch() && !c.IsSet("Direct"), Peer: peer}
		if o.ReportPort && chassis.HasExtPorts(s.res.Fabric) {
			o.ExtPort = chassis.Group(s.res.Fabric).ExtPort
		}
		err = portcounters.WriteIBQueryErrorsOptions(stdout, rep, o)
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	partial := s.partial(stderr)
	for _, f := range rep.Failures {
		fmt.Fprintf(stderr, "ibavtrack: PMA %v\n", f)
	}
	for i := range rep.Nodes {
		if e := rep.Nodes[i].ClearErr; e != nil {
			fmt.Fprintf(stderr, "ibavtrack: clearing counters: %v\n", e)
			partial = true
		}
	}
	_, _, _, bad := rep.Summary()
	switch {
	case c.Bool("check") && bad > 0:
		return cliapp.Exit(exitcode.Problem, fmt.Errorf("%d ports have errors beyond threshold", bad))
	case partial || len(rep.Failures) > 0:
		return cliapp.Exit(exitcode.Partial, fmt.Errorf("partial result printed: %d PMA queries failed", len(rep.Failures)))
	}
	return nil
}
