package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/thresholdflag"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

const examples = `ibcheck discovers the fabric once, runs every check and prints what it
   found, the worst first, with where (node, GUID, port, LID, DR path) and
   the evidence. Checks: links, ids, mtu-vl, sm, counters, routes,
   credit-loops, baseline (only with --baseline).

EXAMPLES:
   ibcheck                                   every check on the fabric of the local port
   ibcheck --sim testdata/fabrics/fattree2.net
   ibcheck --checks routes,credit-loops      only those checks
   ibcheck --skip counters                   every check but the counters
   ibcheck --baseline good.cache             also what changed since good.cache was written
   ibcheck --load-cache today.cache          the checks a cache allows (no routes, no counters)
   ibcheck --json | jq '.findings[] | select(.severity=="critical")'
   ibcheck --textfile /var/lib/node_exporter/ib.prom   the metrics, for node_exporter
   ibcheck serve --listen :9315 --interval 1m          a Prometheus exporter

EXIT STATUS:
   0 every check ran and passed; 1 fatal error; 2 bad arguments or input;
   3 partial (part of the fabric did not answer, or a check could not run
   or not everywhere), nothing found; 4 problems found; 5 no check had
   anything to check (no SM ran, or a cache with nothing checkable);
   6 with --strict, the fabric answered inconsistently; 130 interrupted.`

// defaultThresholdFile is ibqueryerrors' default threshold file (tests
// change it).
var defaultThresholdFile = portcounters.DefaultThresholdFile

// openFabric opens the transport; tests replace it.
var openFabric = attach.Open

func newApp(stdout, stderr io.Writer) *cli.App {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "checks", Usage: "run only checks `LIST` (comma-separated: " + strings.Join(health.Checks, ", ") + ")"},
		&cli.StringFlag{Name: "skip", Usage: "run every check but `LIST` (comma-separated)"},
		&cli.StringFlag{Name: "baseline", Usage: "compare with the known-good fabric in ibnetdiscover cache `FILE` (the baseline check)"},
		&cli.StringFlag{Name: "load-cache", Usage: "check the fabric in ibnetdiscover cache `FILE` instead of discovering it (routes, credit loops and counters do not run)"},
		&cli.StringFlag{Name: "threshold-file", Usage: "error counter thresholds `FILE` (ibqueryerrors' format)", DefaultText: portcounters.DefaultThresholdFile + " when present"},
		&cli.IntFlag{Name: "max-op-vls", Value: 5, Usage: "OpenSM's max_op_vls `N` for the mtu-vl check (1-15)"},
		&cli.StringFlag{Name: "routing-engine", Value: "minhop", Usage: "compare route lengths with routing engine `NAME`'s hop counts (minhop, updn, ...)"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON (schema ibdiag.health/v1) instead of text"},
		&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when it exists)"},
		&cli.StringFlag{Name: "textfile", Usage: "sweep once and write the Prometheus metrics to `FILE` atomically (node_exporter's textfile format)"},
	}
	flags = append(flags, attach.Flags(true)...)
	return &cli.App{
		Name:                   "ibcheck",
		Usage:                  "every health check of the fabric on one discovery, findings ranked by severity",
		UsageText:              "ibcheck [options]\n   ibcheck --textfile FILE [options] (the Prometheus metrics, once)\n   ibcheck serve [--listen ADDR] [--interval DURATION] [options] (a Prometheus exporter)\n   ibcheck links [iblinkinfo's options] (iblinkinfo's output, byte for byte)",
		Description:            examples,
		Flags:                  flags,
		Writer:                 stdout,
		ErrWriter:              stderr,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Action: func(c *cli.Context) error {
			return checkCmd(c, stdout, stderr)
		},
		Commands:       []*cli.Command{linksCommand(stdout, stderr), serveCommand(stdout, stderr)},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run is the whole command: it returns the exit status.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return cliapp.Run(ctx, newApp(stdout, stderr), args, stderr)
}

// options are what a check run, serve and --textfile share, parsed.
type options struct {
	checks []string
	s      attach.Settings
	names  *nodenamemap.Map
	in     health.Input // without Result, Querier, SA, transport
}

func parseOptions(c *cli.Context, stderr io.Writer) (*options, error) {
	checks, err := health.ParseChecks(c.String("checks"), c.String("skip"))
	if err != nil {
		flag := "--checks"
		if _, e := health.ParseChecks("", c.String("skip")); e != nil {
			flag = "--skip"
		}
		return nil, cliapp.Usage(flag, err.Error())
	}
	baselineFile := c.String("baseline")
	if baselineFile == "" {
		if c.IsSet("checks") && strings.Contains(","+c.String("checks")+",", ",baseline,") {
			return nil, cliapp.Usage("--checks baseline", "needs --baseline FILE")
		}
		checks = without(checks, health.CheckBaseline)
	}
	if len(checks) == 0 {
		return nil, cliapp.Usage("--checks/--skip", "no check left to run")
	}
	vls := c.Int("max-op-vls")
	if vls < 1 || vls > 15 {
		return nil, cliapp.Usage(fmt.Sprintf("--max-op-vls %d", vls), "must be 1 to 15")
	}
	engine, err := routing.ParseEngine(c.String("routing-engine"))
	if err != nil {
		return nil, cliapp.Usage("--routing-engine "+c.String("routing-engine"), "not an OpenSM routing engine")
	}
	s, err := attach.FromContext(c)
	if err != nil {
		return nil, cliapp.InputError(err)
	}
	names, err := infile.Load(c.Context, "--node-name-map", c.String("node-name-map"), func() (*nodenamemap.Map, error) {
		return nodenamemap.Open(c.String("node-name-map"))
	})
	if errors.Is(err, context.Canceled) {
		return nil, cliapp.InputError(err)
	}
	if err != nil {
		if c.IsSet("node-name-map") {
			return nil, cliapp.Usage("--node-name-map", err.Error())
		}
		fmt.Fprintf(stderr, "ibcheck: warning: node name map: %v\n", err)
		names = nil
	}
	th, err := loadThresholds(c, stderr)
	if err != nil {
		return nil, err
	}
	in := health.Input{MaxOpVLs: uint8(vls), Engine: engine, BaselineKeys: topology.DiffDefault,
		Name: func(n *model.Node) string { return names.Name(n.GUID(), n.Description()) }}
	in.Counters.Thresholds = th
	return &options{checks: checks, s: s, names: names, in: in}, nil
}

func checkCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() > 0 {
		return cliapp.Usage(c.Args().First(), "ibcheck takes no arguments")
	}
	opts, err := parseOptions(c, stderr)
	if err != nil {
		return err
	}
	if f := c.String("textfile"); f != "" {
		return textfileCmd(c, stderr, opts, f)
	}
	checks, s, in, baselineFile := opts.checks, opts.s, opts.in, c.String("baseline")
	loadCache := func(flag, f string) (*model.Fabric, error) {
		fab, err := infile.Load(c.Context, flag, f, func() (*model.Fabric, error) {
			fab, skipped, err := ibndcache.LoadMax(f, s.MaxNodes)
			if err == nil && skipped.Any() {
				fmt.Fprintf(stderr, "ibcheck: warning: %s %s: incomplete cache: %v\n", flag, f, skipped)
			}
			return fab, err
		})
		if errors.Is(err, context.Canceled) {
			return nil, cliapp.InputError(err)
		}
		if err != nil {
			return nil, cliapp.Exit(exitcode.Usage, fmt.Errorf("%s: %w", flag, err))
		}
		return fab, nil
	}
	if baselineFile != "" {
		if in.Baseline, err = loadCache("--baseline", baselineFile); err != nil {
			return err
		}
	}
	var res *discover.Result
	if f := c.String("load-cache"); f != "" {
		fab, err := loadCache("--load-cache", f)
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
		s.Note(stderr, "ibcheck", "attached to "+fab.Desc)
		res, err = discover.Discover(c.Context, fab, s.Config())
		if err != nil {
			if c.Context.Err() != nil {
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted before the start node answered"))
			}
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("discover failed: %w", err))
		}
		if res.Interrupted {
			return cliapp.Exit(exitcode.Interrupted, fmt.Errorf("interrupted during discovery (%d nodes)", len(res.Fabric.Nodes)))
		}
		in.Querier = s.Querier(fab)
		attachInput(s, fab, checks, &in)
	}
	in.Result = res
	rep, err := health.Run(c.Context, in, checks)
	if c.Context.Err() != nil {
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted during the checks"))
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if c.Bool("json") {
		err = writeJSON(stdout, rep, res)
	} else {
		err = writeText(stdout, cliapp.Painter(c, stdout), rep, res)
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	s.ReportSMPErrors(stderr, "ibcheck", res.Errors, res.Fabric, nil)
	attach.ReportProblems(stderr, "ibcheck", res.Problems, nil, nil)
	o := exitcode.Outcome{
		Problem:        rep.Problems() > 0,
		Partial:        rep.Partial,
		NothingChecked: rep.NothingChecked(),
		Inconsistent:   res.Inconsistent(),
		Strict:         s.Strict,
	}
	if o.NothingChecked && o.Partial && !o.Problem {
		// nothing checked at all: say so (5), not "partial"
		o.Partial = false
	}
	switch code := o.Status(); code {
	case exitcode.Problem:
		if o.Partial {
			return cliapp.Exit(code, errors.New("problems found (some checks did not run everywhere)"))
		}
		return cliapp.Exit(code, nil)
	case exitcode.Partial:
		return cliapp.Exit(code, errors.New("partial result: some checks did not run everywhere (see the summary)"))
	case exitcode.NothingChecked:
		return cliapp.Exit(code, errors.New("nothing checked: no check had anything to check"))
	case exitcode.Inconsistent:
		return cliapp.Exit(code, errors.New("--strict: the fabric answered inconsistently"))
	}
	return nil
}

// attachInput completes in for a fabric opened: the SA for the credit
// loops check, the counters' transport.
func attachInput(s attach.Settings, fab *attach.Fabric, checks []string, in *health.Input) {
	if slices.Contains(checks, health.CheckCreditLoops) {
		// the SA gives the routes' SLs (asked only when the routes
		// have a loop on one VL); its LID is the local port's
		// MasterSMLID, as discovery read it
		in.NewSA = func(smLID uint16) (*sa.Client, error) {
			cl, err := sa.NewClient(fab, smLID)
			if err != nil {
				return nil, err
			}
			if s.Timeout > 0 {
				cl.Timeout = s.Timeout
			}
			cl.Retries = s.Retries
			return cl, nil
		}
	}
	if s.Sim != "" && s.SimSM {
		in.NoSMInfo = "the embedded simulator's SM (--sim-sm) is not a subnet manager: no port advertises IsSM or answers SMInfo"
	}
	in.Counters.Transport = fab
	in.Counters.Timeout, in.Counters.Retries, in.Counters.Outstanding = s.Timeout, s.Retries, s.Outstanding
}

// plural is "1 finding", "2 findings".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// loadThresholds reads the named threshold file, or ibqueryerrors'
// default one when it exists.
func loadThresholds(c *cli.Context, stderr io.Writer) (portcounters.Thresholds, error) {
	return thresholdflag.Load(c, "ibcheck", defaultThresholdFile, stderr)
}

// --- output ---

type jsonReport struct {
	Schema   string        `json:"schema"` // "ibdiag.health/v1"
	Summary  jsonSummary   `json:"summary"`
	Checks   []jsonCheck   `json:"checks"`
	Findings []jsonFinding `json:"findings"`
}

type jsonSummary struct {
	Clean          bool  `json:"clean"`
	Partial        bool  `json:"partial"`
	NothingChecked bool  `json:"nothing_checked"`
	Problems       int   `json:"problems"`
	Findings       int   `json:"findings"`
	Nodes          int   `json:"nodes"`
	DiscoverySMPs  int64 `json:"discovery_smps"`
	CheckSMPs      int64 `json:"check_smps"`
	CheckMADs      int64 `json:"check_mads"`
	SMPErrors      int   `json:"smp_errors"`
}

type jsonCheck struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Reason   string   `json:"reason,omitempty"`
	Where    []string `json:"where,omitempty"`
	Findings int      `json:"findings"`
	Problems int      `json:"problems"`
}

type jsonPlace struct {
	Node     string `json:"node"`
	Type     string `json:"type"`
	NodeGUID string `json:"node_guid"`
	PortGUID string `json:"port_guid,omitempty"`
	Port     *int   `json:"port,omitempty"`
	LID      int    `json:"lid,omitempty"`
	DRPath   string `json:"dr_path,omitempty"`
}

type jsonFinding struct {
	Check    string     `json:"check"`
	Kind     string     `json:"kind"`
	Severity string     `json:"severity"`
	Place    jsonPlace  `json:"place"`
	Peer     *jsonPlace `json:"peer,omitempty"`
	Message  string     `json:"message"`
	Evidence []string   `json:"evidence"`
}

func place(p health.Place) jsonPlace {
	j := jsonPlace{Node: p.Node, Type: p.Type, NodeGUID: fmt.Sprintf("0x%016x", p.NodeGUID), LID: int(p.LID), DRPath: p.DRPath}
	if p.PortGUID != 0 {
		j.PortGUID = fmt.Sprintf("0x%016x", p.PortGUID)
	}
	if p.Port >= 0 {
		n := p.Port
		j.Port = &n
	}
	return j
}

func writeJSON(w io.Writer, rep *health.Report, res *discover.Result) error {
	j := jsonReport{Schema: "ibdiag.health/v1", Checks: []jsonCheck{}, Findings: []jsonFinding{},
		Summary: jsonSummary{Partial: rep.Partial, NothingChecked: rep.NothingChecked(), Problems: rep.Problems(), Findings: len(rep.Findings),
			Nodes: len(res.Fabric.Nodes), DiscoverySMPs: res.SMPs, CheckSMPs: rep.SMPs, CheckMADs: rep.MADs, SMPErrors: len(res.Errors)}}
	j.Summary.Clean = !j.Summary.Partial && !j.Summary.NothingChecked && j.Summary.Problems == 0
	for _, c := range rep.Checks {
		j.Checks = append(j.Checks, jsonCheck{Name: c.Name, Status: string(c.Status), Reason: c.Reason, Where: c.Where, Findings: c.Findings, Problems: c.Problems})
	}
	for _, f := range rep.Findings {
		jf := jsonFinding{Check: f.Check, Kind: f.Kind, Severity: f.Severity.String(), Place: place(f.Place), Message: f.Message, Evidence: f.Evidence}
		if jf.Evidence == nil {
			jf.Evidence = []string{}
		}
		if f.Peer != nil {
			p := place(*f.Peer)
			jf.Peer = &p
		}
		j.Findings = append(j.Findings, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func writeText(w io.Writer, paint termout.Painter, rep *health.Report, res *discover.Result) error {
	sev := func(s health.Severity) string {
		t := strings.ToUpper(s.String())
		switch s {
		case health.Critical, health.Error:
			return paint.Bad(t)
		case health.Warning:
			return paint.Warn(t)
		}
		return t
	}
	b := &strings.Builder{}
	for _, f := range rep.Findings {
		fmt.Fprintf(b, "%s %s/%s: %s\n", sev(f.Severity), f.Check, f.Kind, f.Message)
		fmt.Fprintf(b, "    at %s\n", f.Place)
		if f.Peer != nil {
			fmt.Fprintf(b, "    peer %s\n", *f.Peer)
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(b, "    evidence: %s\n", e)
		}
	}
	if len(rep.Findings) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Checks (%d nodes):\n", len(res.Fabric.Nodes))
	for _, c := range rep.Checks {
		st := string(c.Status)
		switch c.Status {
		case health.Passed:
			st = paint.Good(st)
		case health.Failed:
			st = paint.Bad(st)
		default:
			st = paint.Warn(st)
		}
		fmt.Fprintf(b, "  %-13s %s", c.Name, st)
		if c.Findings > 0 {
			fmt.Fprintf(b, " (%s, %s)", plural(c.Problems, "problem"), plural(c.Findings, "finding"))
		}
		if c.Reason != "" {
			fmt.Fprintf(b, ": %s", c.Reason)
		}
		b.WriteString("\n")
		for _, wh := range c.Where {
			fmt.Fprintf(b, "      not checked: %s\n", wh)
		}
	}
	counts := map[health.Severity]int{}
	for _, f := range rep.Findings {
		counts[f.Severity]++
	}
	fmt.Fprintf(b, "Findings: %d critical, %d error, %d warning, %d info\n", counts[health.Critical], counts[health.Error], counts[health.Warning], counts[health.Info])
	result := paint.Good("clean")
	switch {
	case rep.Problems() > 0:
		result = paint.Bad("PROBLEMS FOUND")
	case rep.NothingChecked():
		result = paint.Warn("nothing checked")
	case rep.Partial:
		result = paint.Warn("partial: not every check ran everywhere")
	}
	if res.Partial() {
		b.WriteString("Discovery: partial (see the errors on stderr)\n")
	}
	fmt.Fprintf(b, "Result: %s\n", result)
	_, err := io.WriteString(w, b.String())
	return err
}
