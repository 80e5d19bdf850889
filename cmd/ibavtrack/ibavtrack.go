package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

const examples = `EXAMPLES:
   ibavtrack links --sim testdata/fabrics/mixed.net          link MTU / VL / width / speed table
   ibavtrack links --check                                   exit 4 when a link runs below what it could
   ibavtrack path 3 7                                        the AV from LID 3 to LID 7 (the SA's PathRecord, else computed)
   ibavtrack path 3 7 --check                                exit 4 when the SA's PathRecord disagrees with the route
   ibavtrack path "hostA mlx5_0" 0x0011750000000e01 --json   by node name and port GUID, as JSON
   ibavtrack watch 7 12 --interval 5s                        report every AV change toward LIDs 7 and 12
   ibavtrack errors --threshold-file thresholds --check      ports whose error counters exceed thresholds (as ibqueryerrors)
   ibavtrack mcast --members --smkey 1                       multicast groups' members (as saquery -m --smkey 1)
   ibavtrack watch --mcast 0xc000 --interval 5s              report every change of a multicast group's AV

EXIT STATUS:
   0 done; 1 fatal error; 2 bad arguments or input; 3 partial result (part
   of the fabric did not answer, a PMA query failed); 4 links --check found
   a mismatch, errors --check found a port beyond a threshold, path
   found no route, or path --check found the SA's PathRecord disagreeing
   with the route; 5 nothing to check (no LIDs or forwarding tables: no SM
   has run); 6 with --strict, the fabric answered inconsistently; 130
   interrupted; 141 stdout closed by its reader.`

// openFabric opens the transport; tests replace it to keep a handle on
// the embedded simulator.
var openFabric = attach.Open

// newApp builds the command; stdout and stderr are where it writes.
func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "ibavtrack",
		Usage:           "check link MTU/VL settings, compute path address vectors and watch them change",
		UsageText:       "ibavtrack links|path|watch|errors|mcast [options] [arguments]",
		Description:     examples,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// the shared options are the commands' own; Reorder moves them
		// after the command name wherever they are given
		Flags: attach.HiddenFlags(true),
		Commands: []*cli.Command{
			linksCommand(stdout, stderr),
			pathCommand(stdout, stderr),
			watchCommand(stdout, stderr),
			errorsCommand(stdout, stderr),
			mcastCommand(stdout, stderr),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cliapp.Usage(c.Args().First(), "unknown command (want links, path, watch, errors or mcast)")
			}
			return cliapp.Exit(exitcode.Usage, errors.New("a command is required: links, path, watch, errors or mcast"))
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// commonFlags are the discovery flags every subcommand takes.
func commonFlags() []cli.Flag {
	return append([]cli.Flag{}, attach.Flags(true)...)
}

// outputFlag is --output, as ibhops has it.
func outputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", Usage: "write the output to `FILE` (atomically) instead of stdout"}
}

// withOutput is the action of a command that takes --output FILE: the
// file is created before the fabric is opened (a bad path fails at
// once) and replaces FILE only when the command printed its whole
// output: not after bad input, a fatal error or an interruption (then
// FILE is left as it was). A partial result is written and the file
// named as holding one, as ibhops does.
func withOutput(stdout, stderr io.Writer, cmd func(c *cli.Context, stdout, stderr io.Writer) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		name := c.String("output")
		if name == "" {
			return cmd(c, stdout, stderr)
		}
		f, err := outfile.CreateContext(c.Context, name)
		if err != nil {
			return cliapp.Usage("--output", err.Error())
		}
		defer f.Abort()
		err = cmd(c, f, stderr)
		switch code := cliapp.Code(err); {
		case c.Context.Err() != nil || code == exitcode.Interrupted:
			fmt.Fprintf(stderr, "ibavtrack: interrupted: %s left as it was\n", f.Name())
			return err
		case code == exitcode.Usage || code == exitcode.Fatal || code == cliapp.StatusBrokenPipe:
			return err
		case code == exitcode.Partial:
			fmt.Fprintf(stderr, "ibavtrack: %s holds a partial result\n", f.Name())
		}
		if cerr := f.Commit(); cerr != nil {
			return cliapp.Exit(exitcode.Fatal, cerr)
		}
		return err
	}
}

// run is the whole command: it returns the exit status.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return cliapp.Run(ctx, newApp(stdout, stderr), args, stderr)
}

// session is an open fabric and what one sweep found on it.
type session struct {
	fab      *attach.Fabric
	settings attach.Settings
	cfg      discover.Config

	res    *discover.Result
	tables *routing.Tables
	// lftErrors counts LFT blocks that could not be read.
	lftErrors int
}

// openSession checks the shared flags and opens the transport.
func openSession(c *cli.Context) (*session, error) {
	s, err := attach.FromContext(c)
	if err != nil {
		return nil, cliapp.InputError(err)
	}
	// Only an explicit clearing flag opens the fabric for Sets.
	s.AllowSet = c.Bool("clear-errors") || c.Bool("clear-counts")
	cfg := s.Config()
	fab, err := openFabric(c.Context, s)
	if err != nil {
		return nil, cliapp.Fail(err) // usage 2, interrupted 130, else 1
	}
	s.Note(c.App.ErrWriter, "ibavtrack", "attached to "+fab.Desc)
	return &session{fab: fab, settings: s, cfg: cfg}, nil
}

func (s *session) Close() error { return s.fab.Close() }

// reattach closes the transport and opens it again with the same
// settings (watch, after ibsim went away).
func (s *session) reattach(ctx context.Context) error {
	s.fab.Close()
	fab, err := openFabric(ctx, s.settings)
	if err != nil {
		return cliapp.Fail(err)
	}
	s.fab = fab
	return nil
}

// sweep discovers the fabric and, with lfts, reads the forwarding tables.
func (s *session) sweep(ctx context.Context, lfts bool) error {
	res, err := discover.Discover(ctx, s.fab, s.cfg)
	if err != nil {
		if ctx.Err() != nil {
			return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted before the start node answered"))
		}
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("discover failed: %w", err))
	}
	s.res, s.tables, s.lftErrors = res, nil, 0
	if res.Interrupted {
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted during discovery"))
	}
	if !lfts {
		return nil
	}
	q := s.settings.Querier(s.fab)
	t, err := routing.Read(ctx, q, res.Fabric, q.Window.Max())
	if err != nil {
		if ctx.Err() != nil {
			return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while reading forwarding tables"))
		}
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("reading forwarding tables: %w", err))
	}
	s.tables, s.lftErrors = t, len(q.Errors())
	return nil
}

// readCounters reads every port's PerfMgt counters (each port on its
// own) on the fabric of the last sweep. Reading never clears them.
func (s *session) readCounters(ctx context.Context) (*portcounters.Report, error) {
	cfg := portcounters.Config{Querier: s.settings.Querier(s.fab), Transport: s.fab, Timeout: s.settings.Timeout, Retries: s.settings.Retries,
		Outstanding: s.settings.Outstanding, PerPort: true}
	rep, err := portcounters.Read(ctx, cfg, s.res.Fabric)
	if err != nil {
		if ctx.Err() != nil {
			return nil, cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while reading port counters"))
		}
		return nil, cliapp.Exit(exitcode.Fatal, fmt.Errorf("reading port counters: %w", err))
	}
	return rep, nil
}

// partial reports on stderr what the last sweep missed (and, as
// warnings, the inconsistencies it found) and returns whether anything
// was missed.
func (s *session) partial(stderr io.Writer) bool {
	r := s.res
	s.settings.ReportSMPErrors(stderr, "ibavtrack", r.Errors, r.Fabric, nil)
	attach.ReportProblems(stderr, "ibavtrack", r.Problems, nil, nil)
	if s.lftErrors > 0 {
		fmt.Fprintf(stderr, "ibavtrack: %d forwarding table blocks could not be read\n", s.lftErrors)
	}
	return r.Partial() || s.lftErrors > 0
}

// partialWhy says what the last sweep missed, in a few words.
func (s *session) partialWhy() string {
	r := s.res
	var why []string
	if r.Err != nil {
		why = append(why, s.settings.DiscoveryErr(r.Err))
	}
	if len(r.Errors) > 0 {
		why = append(why, fmt.Sprintf("%d SMPs failed", len(r.Errors)))
	}
	if n := r.IncompleteProblems(); n > 0 {
		why = append(why, fmt.Sprintf("%d ports not explored", n))
	}
	if s.lftErrors > 0 {
		why = append(why, fmt.Sprintf("%d forwarding table blocks not read", s.lftErrors))
	}
	if len(why) == 0 {
		return "part of the fabric did not answer"
	}
	return strings.Join(why, ", ")
}

// complete reports whether the last sweep saw the whole fabric (no SMP
// failed, no port left unexplored, every forwarding table read).
func (s *session) complete() bool {
	r := s.res
	return r != nil && !r.Partial() && s.lftErrors == 0
}

// outcome is the exit outcome of one sweep's result (Partial must be set
// by the caller from partial's return).
func (s *session) outcome(partial bool) exitcode.Outcome {
	return exitcode.Outcome{Partial: partial, Inconsistent: s.res.Inconsistent(), Strict: s.settings.Strict}
}

// errStrict is the error of a sweep that exits Inconsistent.
var errStrict = cliapp.Exit(exitcode.Inconsistent, errors.New("--strict: the fabric answered inconsistently"))

// nothingToCheck is the exit error of a check that had nothing to check.
func nothingToCheck(reason string) error {
	return cliapp.Exit(exitcode.NothingChecked, errors.New("nothing to check: "+reason))
}

// nothingToCheckJSON is nothingToCheck for a command whose --json
// document, when nothing was checked, is {schema, clean: false, reason}.
func nothingToCheckJSON(stdout io.Writer, asJSON bool, schema, reason string) error {
	if asJSON {
		writeJSON(stdout, struct {
			Schema string `json:"schema"`
			Clean  bool   `json:"clean"`
			Reason string `json:"reason"`
		}{schema, false, "nothing to check: " + reason})
	}
	return nothingToCheck(reason)
}

// resolve finds a port the user names (LID, GUID or node name).
func resolve(f *model.Fabric, what, spec string) (*model.Port, error) {
	p, _, err := resolveLID(f, what, spec)
	return p, err
}

// resolveLID is resolve that also returns the LID meant: the LID given
// (any of an LMC range), else the port's base LID.
func resolveLID(f *model.Fabric, what, spec string) (*model.Port, uint16, error) {
	p, lid, err := f.ResolveLID(spec, nil)
	if err != nil {
		return nil, 0, cliapp.PortError(what, spec, err, f, nil, "")
	}
	return p, lid, nil
}

// localPort is the logical port the tool is attached at.
func localPort(f *model.Fabric) *model.Port {
	n := f.From
	if n == nil {
		return nil
	}
	num := int(f.FromPort)
	if n.IsSwitch() {
		num = 0
	}
	if pp := n.Port(num); pp != nil {
		if p := f.PortByGUID(pp.GUID); p != nil {
			return p
		}
	}
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONCompact writes v as one line of JSON.
func writeJSONCompact(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
