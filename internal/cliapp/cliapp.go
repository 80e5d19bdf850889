// Package cliapp runs the suite's urfave/cli commands the same way: one
// line on stderr for an error ("tool: <input>: <problem>"), and the exit
// status the action chose (internal/exitcode).
package cliapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/outfile"
	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/internal/version"
)

// ExitError carries an exit status (and an optional message) out of an
// action.
type ExitError struct {
	Code int
	Err  error // nil: exit with Code silently
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Unwrap returns the message's error.
func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an error that makes Run exit with code, printing err.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Usage returns a usage error (exit status 2) naming the input and the
// problem.
func Usage(input, msg string) error {
	return &ExitError{Code: exitcode.Usage, Err: &attach.UsageError{Input: input, Msg: msg}}
}

// Fail returns err as an exit error: bad input (*attach.UsageError) exits
// with exitcode.Usage, anything else with exitcode.Fatal.
func Fail(err error) error {
	var ue *attach.UsageError
	if errors.As(err, &ue) {
		return &ExitError{Code: exitcode.Usage, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		// A signal stopped the run before it had anything to show.
		return &ExitError{Code: exitcode.Interrupted, Err: fmt.Errorf("interrupted: %w", err)}
	}
	return &ExitError{Code: exitcode.Fatal, Err: err}
}

// InputError returns err, from reading an input, as an exit error: a
// usage error (exit status 2), or an interruption (exitcode.Interrupted)
// when the run was cancelled while the input was read (a FIFO waiting
// for a writer).
func InputError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &ExitError{Code: exitcode.Interrupted, Err: err}
	}
	return &ExitError{Code: exitcode.Usage, Err: err}
}

// Code returns the exit status an error carries (exitcode.Usage for
// errors of the command line parser, which carry none).
func Code(err error) int {
	if err == nil {
		return exitcode.OK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return exitcode.Usage
}

// VersionFlag is -V/--version, which every tool takes (as the
// infiniband-diags do): it prints version.Line on stdout and exits 0.
func VersionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version, commit and Go version, and exit"}
}

// ColorFlag is --color=WHEN, which every tool takes: auto (colour on a
// terminal, unless NO_COLOR is set or TERM=dumb), always or never.
func ColorFlag() cli.Flag {
	return &cli.StringFlag{Name: "color", Value: string(termout.Auto), Usage: "colour messages and marks `WHEN`: auto (on a terminal, unless NO_COLOR is set or TERM=dumb), always or never", DefaultText: string(termout.Auto), Category: "Messages"}
}

// Painter returns the painter for w that the command line's --color asks
// for.
func Painter(c *cli.Context, w io.Writer) termout.Painter {
	m, _ := termout.ParseMode(c.String("color")) // checked before the action
	return termout.NewPainterMode(w, m)
}

// Run runs app with args and returns the exit status, printing one line
// "<app name>: <error>" on stderr when the action failed. It adds
// -V/--version to the app and its commands.
//
// A panic in the action is an internal error: one line asking to report
// it, exit status exitcode.Fatal (never the bad-input status), and no
// temporary output file left behind. An action that failed writing to a
// standard output closed by its reader (EPIPE, e.g. "| head -1") ends
// quietly with status StatusBrokenPipe, its output files aborted; the
// signal side of a broken pipe (SIGPIPE caught so that the write fails
// with EPIPE, the run cancelled, the process ending by SIGPIPE) is Main's.
func Run(ctx context.Context, app *cli.App, args []string, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			outfile.AbortAll()
			fmt.Fprintf(stderr, "%s: internal error: %v (please report it, with the command line)\n", app.Name, r)
			code = exitcode.Fatal
		}
	}()
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.HideVersion = true // ours, not urfave/cli's -v
	withVersion := func(flags []cli.Flag, before cli.BeforeFunc) ([]cli.Flag, cli.BeforeFunc) {
		return append(flags, VersionFlag(), ColorFlag()), func(c *cli.Context) error {
			namesOnce(c.Command)
			if c.Bool("version") {
				fmt.Fprintln(app.Writer, version.Line(app.Name))
				return &ExitError{Code: exitcode.OK}
			}
			if _, err := termout.ParseMode(c.String("color")); err != nil {
				return Usage("--color "+c.String("color"), err.Error())
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
	app.Flags, app.Before = withVersion(app.Flags, app.Before)
	for _, c := range app.Commands {
		c.Flags, c.Before = withVersion(c.Flags, c.Before)
	}
	// A flag that does not parse is one line on stderr, not the help.
	usage := func(_ *cli.Context, err error, _ bool) error {
		return &ExitError{Code: exitcode.Usage, Err: errors.New(firstLine(err.Error()))}
	}
	app.OnUsageError = usage
	for _, c := range app.Commands {
		c.OnUsageError = usage
	}
	args, err := helpCommand(app, args)
	if err == nil {
		args, err = Reorder(app, args)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", app.Name, err)
		return Code(err)
	}
	err = app.RunContext(ctx, args)
	if err == nil {
		return exitcode.OK
	}
	if errors.Is(err, syscall.EPIPE) {
		return StatusBrokenPipe
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", app.Name, ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "%s: %v\n", app.Name, firstLine(err.Error()))
	return exitcode.Usage
}

// helpCommand turns "tool help" into "tool -h" and "tool help CMD" into
// "tool CMD -h" for an app with commands (urfave/cli's own help command
// is hidden: it would print the help's template with the shared flags
// twice).
func helpCommand(app *cli.App, args []string) ([]string, error) {
	if len(app.Commands) == 0 || len(args) < 2 || args[1] != "help" {
		return args, nil
	}
	switch {
	case len(args) == 2:
		return []string{args[0], "-h"}, nil
	case len(args) == 3 && app.Command(args[2]) != nil:
		return []string{args[0], args[2], "-h"}, nil
	}
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return nil, Usage("help "+strings.Join(args[2:], " "), "no such command (want "+strings.Join(names, ", ")+")")
}

// namesOnce gives cmd's flags, now that its command line is parsed, names
// computed once. urfave/cli (v2.27) recomputes a flag's names, with a
// regular expression per name, each time it looks a flag up, and after
// the Before hook it asks IsSet of every name of every flag (to run flag
// actions, which the suite does not use): for an unset flag IsSet looks
// through all the flags, so a command of 60 flags ran some 4,000 regular
// expressions (2 ms and 0.3 MB in a run). Past Before, urfave/cli and the
// actions use a command's Flags only for their names and IsSet, which
// the wrapper keeps; the help and the completion, which need the flags'
// own types, are over by then.
func namesOnce(cmd *cli.Command) {
	if cmd == nil {
		return
	}
	for i, f := range cmd.Flags {
		if _, done := f.(namedFlag); !done {
			cmd.Flags[i] = namedFlag{Flag: f, names: flagNamesOf(f)}
		}
	}
}

// namedFlag is a flag whose names were computed once.
type namedFlag struct {
	cli.Flag
	names []string
}

func (f namedFlag) Names() []string { return f.names }

// flagNamesOf returns f.Names() without urfave/cli's regular expression
// for the flag types the suite uses (Reorder alone asked for the names of
// every command's flags: 0.17 MB of garbage in every run). A name with a
// comma or a space, which the expression cuts, goes through f.Names().
func flagNamesOf(f cli.Flag) []string {
	var name string
	var aliases []string
	switch f := f.(type) {
	case namedFlag:
		return f.names
	case *cli.BoolFlag:
		name, aliases = f.Name, f.Aliases
	case *cli.StringFlag:
		name, aliases = f.Name, f.Aliases
	case *cli.IntFlag:
		name, aliases = f.Name, f.Aliases
	case *cli.GenericFlag:
		name, aliases = f.Name, f.Aliases
	case *cli.DurationFlag:
		name, aliases = f.Name, f.Aliases
	case *cli.StringSliceFlag:
		name, aliases = f.Name, f.Aliases
	default:
		return f.Names()
	}
	out := make([]string, 0, 1+len(aliases))
	out = append(out, name)
	out = append(out, aliases...)
	for _, n := range out {
		if strings.ContainsAny(n, ", ") {
			return f.Names()
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Reorder moves options before operands, as getopt does for the C tools,
// so "ibdiscover topo.txt -f" works like "ibdiscover -f topo.txt"
// (urfave/cli stops parsing at the first operand). Options keep their
// relative order; "--" ends the options. With subcommands, the options
// after the command name are reordered among the command's own, and the
// command's options given before its name ("ibavtrack --ibsim links")
// are moved after it, so the shared options go either side of the
// command. An option that takes a value but ends the line is an error
// (moved before the operands it would take one of them as its value).
func Reorder(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	if len(app.Commands) == 0 {
		if err := checkOptions(app.Flags, args[1:], app.UseShortOptionHandling); err != nil {
			return nil, err
		}
		rest, err := reorder(app.Flags, args[1:])
		return append([]string{args[0]}, rest...), err
	}
	// global options, then the command name, then its arguments; an
	// option before the name takes a value if the app's or any command's
	// option of that name does
	takes := valueFlags(app.Flags)
	all := append([]cli.Flag{}, app.Flags...)
	for _, c := range app.Commands {
		for n := range valueFlags(c.Flags) {
			takes[n] = true
		}
		all = append(all, c.Flags...)
	}
	var before [][]string // options before the command, with their values
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args, nil
		}
		if !isOption(a) {
			cmd := app.Command(a)
			if cmd == nil {
				return args, nil
			}
			if err := checkOptions(all, args[1:i], app.UseShortOptionHandling); err != nil {
				return nil, err
			}
			if err := checkOptions(cmd.Flags, args[i+1:], app.UseShortOptionHandling || cmd.UseShortOptionHandling); err != nil {
				return nil, err
			}
			own := flagNames(cmd.Flags)
			global := []string{args[0]}
			var moved []string
			for _, o := range before {
				if own[optName(o[0])] {
					moved = append(moved, o...)
				} else {
					global = append(global, o...)
				}
			}
			rest, err := reorder(cmd.Flags, append(moved, args[i+1:]...))
			return append(append(global, a), rest...), err
		}
		o := []string{a}
		if takes[optName(a)] && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			o = append(o, args[i])
		}
		before = append(before, o)
	}
	if err := checkOptions(all, args[1:], app.UseShortOptionHandling); err != nil {
		return nil, err
	}
	return args, nil
}

// flagNames maps every name of the flags.
func flagNames(flags []cli.Flag) map[string]bool {
	m := make(map[string]bool)
	for _, f := range flags {
		for _, n := range flagNamesOf(f) {
			m[n] = true
		}
	}
	return m
}

func reorder(flags []cli.Flag, args []string) ([]string, error) {
	takes := valueFlags(flags)
	rename := oneForm(flags, takes, args)
	var opts, operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i:]...)
			break
		}
		if !isOption(a) {
			operands = append(operands, a)
			continue
		}
		if to, ok := rename[optName(a)]; ok {
			dashes := len(a) - len(strings.TrimLeft(a, "-"))
			a = a[:dashes] + to + a[dashes+len(optName(a)):]
		}
		opts = append(opts, a)
		if takes[optName(a)] && !strings.Contains(a, "=") {
			if i+1 == len(args) {
				if len(operands) > 0 {
					return nil, fmt.Errorf("%s: option requires an argument", a)
				}
				break // nothing to take: let the parser say so
			}
			i++
			opts = append(opts, args[i])
		}
	}
	return append(opts, operands...), nil
}

// oneForm maps the names to rewrite so that a flag given under two of its
// names ("-s X --suppress Y") reaches urfave/cli under one, which refuses
// two forms of one flag: every later form becomes the first one used, so
// a repeated list accumulates and a repeated value is the last one, as
// getopt gives them. Flags used under one name are left as typed.
func oneForm(flags []cli.Flag, takes map[string]bool, args []string) map[string]string {
	var first map[string]string // name -> first name used of its flag
	var multi [][]string        // the names of each flag that has several
	for _, f := range flags {
		if names := flagNamesOf(f); len(names) > 1 {
			multi = append(multi, names)
		}
	}
	if len(multi) == 0 {
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !isOption(a) {
			continue
		}
		n := optName(a)
		if takes[n] && !strings.Contains(a, "=") {
			i++ // its value
		}
		for _, names := range multi {
			if !slices.Contains(names, n) {
				continue
			}
			if first == nil {
				first = make(map[string]string)
			}
			if _, seen := first[names[0]]; !seen {
				first[names[0]] = n
			}
			break
		}
	}
	var rename map[string]string
	for _, names := range multi {
		to, used := first[names[0]]
		if !used {
			continue
		}
		for _, n := range names {
			if n != to {
				if rename == nil {
					rename = make(map[string]string)
				}
				rename[n] = to
			}
		}
	}
	return rename
}

func isOption(a string) bool { return len(a) > 1 && a[0] == '-' }

func optName(a string) string {
	n := strings.TrimLeft(a, "-")
	if i := strings.IndexByte(n, '='); i >= 0 {
		n = n[:i]
	}
	return n
}

// valueFlags maps every name of the flags that take a value.
func valueFlags(flags []cli.Flag) map[string]bool {
	m := make(map[string]bool)
	for _, f := range flags {
		tv, ok := f.(interface{ TakesValue() bool })
		if !ok || !tv.TakesValue() {
			continue
		}
		for _, n := range flagNamesOf(f) {
			m[n] = true
		}
	}
	return m
}
