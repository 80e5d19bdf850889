package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/internal/progress"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricdot"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/slurmtopo"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// openFabric opens the transport; tests replace it (as in ibhops and
// ibavtrack).
var openFabric = attach.Open

const examples = `EXAMPLES:
   ibdiscover --sim testdata/fabrics/demo.net      discover the bundled demo fabric (embedded simulator)
   ibdiscover                                      discover the fabric behind the first active local port
   ibdiscover -hops 2 -from 0,1,3                  only the nodes within 2 hops of the node at DR path 0,1,3
   ibdiscover --ibsim -o 16 topo.txt               through a running ibsim, 16 SMPs on the wire, into topo.txt
   ibdiscover --sim fattree:levels=2,radix=8 -s    a generated fat tree, with progress lines on stderr
   ibdiscover -l --node-name-map names.map         list CAs, switches and routers by their mapped names
   ibdiscover -p | grep -v ' - '                   ports with no neighbour (ibnetdiscover's ports report)
   ibdiscover --cache today.cache                  discover and keep an ibnetdiscover-compatible cache
   ibdiscover --diff yesterday.cache               what changed since yesterday.cache was written
   ibdiscover --load-cache today.cache --json | jq '.nodes[] | select(.type=="switch") | .name'
                                                   switch names from a cache, no fabric needed
   ibdiscover --load-cache today.cache --svg fabric.svg
                                                   draw the fabric with Graphviz (spines at the top)
   ibdiscover --slurm --node-name-map names.map /etc/slurm/topology.conf
                                                   Slurm's topology.conf (topology/tree) for this fabric

EXIT STATUS:
   0 complete (inconsistencies are warnings on stderr); 1 fatal error; 2 bad
   arguments or input; 3 partial result (something is missing; the files
   written are named); 6 with --strict, the fabric answered inconsistently;
   130 interrupted (no output file replaced); 141 stdout closed by its reader.`

// newApp builds the command; stdout and stderr are where it writes.
func newApp(stdout, stderr io.Writer) *cli.App {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "full", Aliases: []string{"f"}, Usage: "append raw speed, width and VL capability codes to port lines"},
		&cli.BoolFlag{Name: "max_hops", Aliases: []string{"m"}, Usage: "report max hops discovered and the MADs ibnetdiscover uses on this fabric in the header (the SMPs ibdiscover sent go to stderr)"},
		&cli.BoolFlag{Name: "show", Aliases: []string{"s"}, Usage: "print ibnetdiscover's progress lines on stderr"},
		&cli.StringFlag{Name: "from", Usage: "start at the node at directed route `PATH` (0,p1,p2,...)"},
		&cli.IntFlag{Name: "hops", Value: -1, Usage: "discover only nodes at most `N` hops from the start node (0..63)", DefaultText: "no limit"},
		&cli.BoolFlag{Name: "no-mlnx-epi", Usage: "do not read the Mellanox ExtendedPortInfo (FDR10)"},
		&cli.BoolFlag{Name: "list", Aliases: []string{"l"}, Usage: "list CAs, switches and routers (ibnetdiscover -l)", Category: "Output"},
		&cli.BoolFlag{Name: "Hca_list", Aliases: []string{"H"}, Usage: "list CAs only", Category: "Output"},
		&cli.BoolFlag{Name: "Switch_list", Aliases: []string{"S"}, Usage: "list switches only", Category: "Output"},
		&cli.BoolFlag{Name: "Router_list", Aliases: []string{"R"}, Usage: "list routers only", Category: "Output"},
		&cli.BoolFlag{Name: "ports", Aliases: []string{"p"}, Usage: "ports report on stdout (ibnetdiscover -p)", Category: "Output"},
		&cli.BoolFlag{Name: "grouping", Aliases: []string{"g"}, Usage: "group nodes into chassis by SystemImageGUID", Category: "Output"},
		&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when present)", Category: "Output"},
		&cli.StringFlag{Name: "cache", Usage: "also write the fabric to `FILE` in ibnetdiscover's cache format", Category: "Output"},
		&cli.StringFlag{Name: "load-cache", Usage: "read the fabric from ibnetdiscover cache `FILE` instead of discovering it", Category: "Output"},
		&cli.StringFlag{Name: "diff", Usage: "print the differences from the fabric in ibnetdiscover cache `FILE`", Category: "Output"},
		&cli.StringFlag{Name: "diffcheck", Usage: "what --diff compares: `KEYS` from sw,ca,router,port,lid,nodedesc", DefaultText: "sw,ca,router,port", Category: "Output"},
		&cli.BoolFlag{Name: "json", Usage: "print the fabric as JSON (schema " + fabricjson.Schema + ")", Category: "Output"},
		&cli.BoolFlag{Name: "dot", Usage: "print the fabric as a Graphviz graph, by level, with port numbers and degraded links marked", Category: "Output"},
		&cli.StringFlag{Name: "svg", Usage: "also draw the fabric into `FILE` as SVG with Graphviz's dot", Category: "Output"},
		&cli.BoolFlag{Name: "slurm", Usage: "print a topology.conf for Slurm's topology/tree plugin", Category: "Output"},
		&cli.StringFlag{Name: "slurm-hostname", Usage: "with --slurm, a CA's host name from its name by `RULE`: word, full or re:REGEXP", DefaultText: "word", Category: "Output"},
	}
	flags = append(flags, attach.Flags(false)...)
	return &cli.App{
		Name:                   "ibdiscover",
		Usage:                  "discover an InfiniBand fabric and print its topology (ibnetdiscover-compatible)",
		UsageText:              "ibdiscover [options] [topology-file]",
		Description:            examples,
		Flags:                  flags,
		Writer:                 stdout,
		ErrWriter:              stderr,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Action: func(c *cli.Context) error {
			return discoverCmd(c, stdout, stderr)
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run is the whole command: it returns the exit status.
// The arguments ride in the context: ibnetdiscover's "last list flag
// wins" needs their order, which urfave/cli does not keep.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return cliapp.Run(withArgs(ctx, args), newApp(stdout, stderr), args, stderr)
}

func discoverCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() > 1 {
		return cliapp.Usage(strings.Join(c.Args().Slice(), " "), "at most one topology-file argument")
	}
	s, err := attach.FromContext(c)
	if err != nil {
		return cliapp.InputError(err)
	}
	cfg := s.Config()
	cfg.NoMlnxEPI = cfg.NoMlnxEPI || c.Bool("no-mlnx-epi")
	if c.IsSet("from") {
		p, err := smp.ParseDRPath(c.String("from"))
		if err != nil {
			return cliapp.Usage("-from "+c.String("from"), strings.TrimPrefix(err.Error(), "smp: "))
		}
		cfg.From = p
	}
	if c.IsSet("hops") {
		h := c.Int("hops")
		if h < 0 || h > smp.MaxHops {
			return cliapp.Usage("-hops "+strconv.Itoa(h), fmt.Sprintf("must be 0..%d", smp.MaxHops))
		}
		cfg.MaxHops = h
		cfg.StartOnly = h == 0
	}
	output := c.Args().First()
	sel, err := selectOutput(c)
	if err != nil {
		return err
	}
	paint := cliapp.Painter(c, stderr)
	rule, err := slurmtopo.ParseRule(c.String("slurm-hostname"))
	if err != nil {
		return cliapp.Usage("--slurm-hostname "+c.String("slurm-hostname"), strings.TrimPrefix(err.Error(), slurmtopo.ErrRule.Error()+" "+strconv.Quote(c.String("slurm-hostname"))+": "))
	}
	dotPath := ""
	if c.IsSet("svg") {
		if c.String("svg") == "" {
			return cliapp.Usage(`--svg ""`, "empty file name")
		}
		if dotPath, err = lookDot(); err != nil {
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--svg: %w", err))
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
			// A map asked for by name must be usable: refuse it.
			return cliapp.Usage("--node-name-map", err.Error())
		}
		// The default map: warn as ibnetdiscover does and run without it.
		var w nodenamemap.Warner
		if errors.As(err, &w) {
			io.WriteString(stderr, paint.Warn(strings.TrimSuffix(w.Warning(), "\n"))+"\n")
		} else {
			fmt.Fprintf(stderr, "%s %v\n", paint.Warn("ibdiscover: node name map:"), err)
		}
		names = nil
	}
	if sel.kind == outSlurm {
		// one name for two GUIDs would merge two hosts into one
		if err := slurmtopo.CheckNames(names.Entries()); err != nil {
			return cliapp.Usage("--node-name-map "+mapName(c), err.Error())
		}
	}

	// Output files are opened before discovery, so a bad path fails at
	// once; they are renamed into place together, only when all are
	// complete, and never after an interruption.
	var outs outfile.Set
	defer outs.Abort()
	var outF, cacheF, svgF *outfile.File
	if c.NArg() == 1 && output == "" {
		return cliapp.Usage(`topology-file ""`, "empty file name")
	}
	if output != "" {
		if outF, err = outs.Create(c.Context, output); err != nil {
			return cliapp.Exit(exitcode.Usage, err)
		}
	}
	if c.IsSet("cache") {
		f := c.String("cache")
		if f == "" {
			return cliapp.Usage(`--cache ""`, "empty file name")
		}
		if cacheF, err = outs.Create(c.Context, f); err != nil {
			return cliapp.Exit(exitcode.Usage, fmt.Errorf("--cache: %w", err))
		}
	}
	if dotPath != "" {
		if svgF, err = outs.Create(c.Context, c.String("svg")); err != nil {
			return cliapp.Exit(exitcode.Usage, fmt.Errorf("--svg: %w", err))
		}
	}
	namer := func(n *model.Node) string { return names.Name(n.GUID(), n.Description()) }

	// An incomplete cache (written by ibnetdiscover 44 after PortInfo
	// timeouts) loads with its dangling references skipped, and says so.
	loadCache := func(flag, f string) (*model.Fabric, error) {
		type loaded struct {
			fab     *model.Fabric
			skipped ibndcache.Skipped
		}
		l, err := infile.Load(c.Context, "--"+flag, f, func() (loaded, error) {
			// --max-nodes bounds a cache as it bounds discovery
			fab, skipped, err := ibndcache.LoadMax(f, s.MaxNodes)
			return loaded{fab, skipped}, err
		})
		if errors.Is(err, context.Canceled) {
			return nil, cliapp.InputError(err)
		}
		if errors.Is(err, ibndcache.ErrTooManyNodes) {
			return nil, cliapp.Exit(exitcode.Usage, fmt.Errorf("--%s: %w; --max-nodes raises the limit", flag, err))
		}
		if err != nil {
			return nil, cliapp.Exit(exitcode.Usage, fmt.Errorf("--%s: %w", flag, err))
		}
		fab, skipped := l.fab, l.skipped
		if skipped.Any() {
			fmt.Fprintf(stderr, "%s --%s: %s: incomplete cache: %v\n", paint.Warn("ibdiscover:"), flag, f, skipped)
		}
		return fab, nil
	}
	var old *model.Fabric
	if f := c.String("diff"); f != "" {
		if old, err = loadCache("diff", f); err != nil {
			return err
		}
	}

	var res *discover.Result
	if f := c.String("load-cache"); f != "" {
		fab, err := loadCache("load-cache", f)
		if err != nil {
			return err
		}
		res = &discover.Result{Fabric: fab, MaxHops: fab.MaxHops}
	} else {
		fab, err := openFabric(c.Context, s)
		if err != nil {
			return cliapp.Fail(err)
		}
		defer fab.Close()
		s.Note(stderr, "ibdiscover", "attached to "+fab.Desc)

		prog := progress.New(stderr, c.Bool("show"))
		// (the hooks only where they are used: a call per SMP and a
		// Progress per answer cost nothing when nothing is shown)
		if prog.Bar() {
			cfg.Progress = prog.Node
			cfg.Sent = prog.SMP
		}
		if cliapp.TestHooked() {
			cfg.Progress = func(p discover.Progress) { cliapp.TestEvent("node"); prog.Node(p) }
		}
		if prog.Lines() {
			cfg.IBNetDiscoverProgress = prog.Replayed
		}
		res, err = discover.Discover(c.Context, fab, cfg)
		prog.Done()
		if err != nil {
			if c.Context.Err() != nil {
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted before the start node answered"))
			}
			if c.IsSet("from") {
				// say where the route leads nowhere, if it does
				var pe *discover.PathError
				if errors.As(discover.CheckPath(c.Context, s.Querier(fab), cfg.From), &pe) {
					return cliapp.Usage("--from "+c.String("from"), pe.Error())
				}
			}
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("discover failed: %w", err))
		}
	}

	opts := topology.Options{
		Full:           c.Bool("full"),
		MaxHops:        c.Bool("max_hops"),
		HopsDiscovered: res.MaxHops,
		MADs:           headerMADs(res, c.String("load-cache") != ""),
		Generated:      time.Now(),
		Name:           namer,
		Group:          c.Bool("grouping"),
		Warn:           func(msg string) { fmt.Fprintf(stderr, "%s %s\n", paint.Warn("ibdiscover: warning:"), msg) },
	}
	if names.Len() == 0 {
		// every name is the description: the renderer appends it in
		// place instead of making a string per line
		opts.Name = nil
	}
	write := func(w io.Writer) error {
		switch sel.kind {
		case outList:
			return topology.WriteList(w, res.Fabric, sel.list, namer)
		case outDiff:
			return topology.WriteDiff(w, old, res.Fabric, sel.diffKeys, namer)
		case outJSON:
			return fabricjson.Write(w, res.Fabric, fabricjson.Options{Name: namer, Summary: summary(res, c.String("load-cache"))})
		case outDot:
			return fabricdot.Write(w, res.Fabric, fabricdot.Options{Name: namer})
		case outSlurm:
			src := "discovery"
			if f := c.String("load-cache"); f != "" {
				src = "cache " + f
			}
			r, err := slurmtopo.Write(w, res.Fabric, slurmtopo.Options{Name: namer, Host: rule, Source: src})
			for _, msg := range r.Warnings {
				fmt.Fprintf(stderr, "%s %s\n", paint.Warn("ibdiscover: --slurm:"), msg)
			}
			return err
		}
		return topology.WriteTopology(w, res.Fabric, opts)
	}
	if res.Interrupted {
		// An interrupted run never replaces an output file: what was
		// there stays, and stdout gets what was found so far.
		var kept []string
		for _, f := range []*outfile.File{outF, cacheF, svgF} {
			if f != nil {
				f.Abort()
				kept = append(kept, f.Name())
			}
		}
		if len(kept) > 0 {
			fmt.Fprintf(stderr, "%s %s left as %s\n", paint.Warn("ibdiscover: interrupted:"), strings.Join(kept, " and "), wasWere(len(kept)))
		}
		if outF != nil && sel.kind != outPorts {
			outF = nil // print to stdout instead
		}
		cacheF, svgF = nil, nil
	}
	switch {
	case sel.kind == outPorts:
		// Like ibnetdiscover: the report goes to stdout and the
		// topology file, if named, is created empty (by the commit of
		// every output below).
		err = topology.WritePorts(stdout, res.Fabric, namer)
	case outF != nil:
		err = write(outF)
	default:
		err = write(stdout)
	}
	failed := func(err error) error {
		if c.Context.Err() != nil { // e.g. Ctrl-C while waiting for a FIFO's reader
			return cliapp.Exit(exitcode.Interrupted, err)
		}
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if err != nil {
		return failed(err)
	}
	if cacheF != nil {
		if res.Fabric.MaxHops == 0 {
			res.Fabric.MaxHops = res.MaxHops // the header's "max hops discovered"
		}
		if err := ibndcache.Write(cacheF, res.Fabric); err != nil {
			if errors.Is(err, ibndcache.ErrTooManyPorts) {
				return failed(fmt.Errorf("--cache %s: not written: %w", c.String("cache"), err))
			}
			return failed(fmt.Errorf("caching the fabric failed: %w", err))
		}
	}
	if svgF != nil {
		if err := drawSVG(c.Context, dotPath, svgF, res.Fabric, namer); err != nil {
			return failed(fmt.Errorf("--svg: %w", err))
		}
	}
	// Every output is complete: replace the files together (a failure
	// here, a full disk, replaces none).
	if err := outs.Commit(); err != nil {
		return failed(err)
	}
	if c.Bool("max_hops") && c.String("load-cache") == "" {
		fmt.Fprintf(stderr, "ibdiscover: %d SMPs sent (%d retries); ibnetdiscover sends %d on this fabric\n", res.SMPs, res.Retries, res.IBNetDiscover.SMPs)
	}
	var files []string // the files holding the fabric (with -p the topology file is empty)
	for _, f := range []*outfile.File{outF, cacheF, svgF} {
		if f != nil && (f != outF || sel.kind != outPorts) {
			files = append(files, f.Name())
		}
	}
	return report(stderr, s, res, paint, files)
}

// headerMADs is -m's "Total MADs used": the SMPs ibnetdiscover sends on
// the discovered fabric (the replay of libibnetdisc predicts it exactly
// when every SMP is answered), so the header stays ibnetdiscover's byte
// for byte; 0 for a loaded cache, as ibnetdiscover --load-cache prints.
func headerMADs(res *discover.Result, loaded bool) int64 {
	if loaded {
		return res.SMPs
	}
	return int64(res.IBNetDiscover.SMPs)
}

func wasWere(n int) string {
	if n == 1 {
		return "it was"
	}
	return "they were"
}

// report prints SMP errors and problems on stderr and chooses the exit
// status: an incomplete result is partial (3), an inconsistent one only
// warns (or exits 6 with --strict). files are the output files written:
// a partial run names them, as they hold a partial fabric.
func report(stderr io.Writer, s attach.Settings, res *discover.Result, paint termout.Painter, files []string) error {
	s.ReportSMPErrors(stderr, "ibdiscover", res.Errors, res.Fabric, paint.Bad)
	attach.ReportProblems(stderr, "ibdiscover", res.Problems, paint.Bad, paint.Warn)
	o := exitcode.Outcome{Interrupted: res.Interrupted, Partial: res.Partial(), Inconsistent: res.Inconsistent(), Strict: s.Strict}
	if o.Partial && !o.Interrupted && len(files) > 0 {
		fmt.Fprintf(stderr, "%s %s %s a partial fabric (%d nodes)\n", paint.Warn("ibdiscover:"), strings.Join(files, " and "), holds(len(files)), len(res.Fabric.Nodes))
	}
	inconsistencies := len(res.Problems) - res.IncompleteProblems()
	switch code := o.Status(); code {
	case exitcode.Interrupted:
		return cliapp.Exit(code, fmt.Errorf("interrupted: partial result printed (%d nodes, %d SMPs)", len(res.Fabric.Nodes), res.SMPs))
	case exitcode.Partial:
		if res.Err != nil {
			return cliapp.Exit(code, fmt.Errorf("partial result printed: %s", s.DiscoveryErr(res.Err)))
		}
		return cliapp.Exit(code, fmt.Errorf("partial result printed: %d SMPs failed, %d ports not explored (%d retries)", len(res.Errors), res.IncompleteProblems(), res.Retries))
	case exitcode.Inconsistent:
		return cliapp.Exit(code, fmt.Errorf("--strict: the fabric answered inconsistently (%d %s)", inconsistencies, map[bool]string{true: "warning", false: "warnings"}[inconsistencies == 1]))
	}
	return nil
}

func holds(n int) string {
	if n == 1 {
		return "holds"
	}
	return "hold"
}
