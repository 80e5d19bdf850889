package cliapp

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// cmdApp is an app with one command, "links", with flags of its own.
func cmdApp(ran *bool) *cli.App {
	return &cli.App{
		Name:            "tool",
		Writer:          new(bytes.Buffer),
		HideHelpCommand: true,
		Flags:           []cli.Flag{&cli.BoolFlag{Name: "ibsim", Hidden: true}},
		Commands: []*cli.Command{{
			Name:  "links",
			Usage: "list the links",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "ibsim"},
				&cli.BoolFlag{Name: "check"},
				&cli.StringFlag{Name: "sim"},
			},
			Action: func(*cli.Context) error { *ran = true; return nil },
		}},
	}
}

// TestUnknownOption: an option no flag has is one line naming what the
// user typed and the nearest flag, not urfave/cli's complaint about a
// flag the short-option splitting made up ("-hop" read as -h -o p).
func TestUnknownOption(t *testing.T) {
	tests := []struct {
		cmds bool
		args []string
		want string // stderr; "" for a run that works
	}{
		{false, []string{"tool", "-hop", "2"}, "tool: -hop: unknown option (did you mean -hops?)\n"},
		{false, []string{"tool", "--hop=2"}, "tool: --hop: unknown option (did you mean --hops?)\n"},
		{false, []string{"tool", "out.txt", "--frm", "0,1"}, "tool: --frm: unknown option (did you mean --from?)\n"},
		{false, []string{"tool", "--ful"}, "tool: --ful: unknown option (did you mean --full?)\n"},
		{false, []string{"tool", "--bogus"}, "tool: --bogus: unknown option (see --help)\n"},
		{false, []string{"tool", "-x"}, "tool: -x: unknown option (see --help)\n"},
		{false, []string{"tool", "-ff"}, ""},         // short options together
		{false, []string{"tool", "-hops", "-1"}, ""}, // a value that looks like an option
		{false, []string{"tool", "--", "-hop"}, ""},  // an operand
		{true, []string{"tool", "links", "--chek"}, "tool: --chek: unknown option (did you mean --check?)\n"},
		{true, []string{"tool", "--chek", "links"}, "tool: --chek: unknown option (did you mean --check?)\n"},
		{true, []string{"tool", "--ibsm", "links"}, "tool: --ibsm: unknown option (did you mean --ibsim?)\n"},
		{true, []string{"tool", "--check", "links", "--sim", "x"}, ""},
	}
	for _, tt := range tests {
		var got []string
		ran := false
		app := testApp(&got)
		app.UseShortOptionHandling = true
		if tt.cmds {
			app = cmdApp(&ran)
		}
		var errb bytes.Buffer
		code := Run(context.Background(), app, tt.args, &errb)
		wantCode := exitcode.Usage
		if tt.want == "" {
			wantCode = exitcode.OK
		}
		if code != wantCode || errb.String() != tt.want {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tt.args, code, errb.String(), wantCode, tt.want)
		}
	}
}

// TestHelpCommand: "tool help" and "tool help CMD" print the help of the
// app and of the command; "tool help nosuch" is one line.
func TestHelpCommand(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdout     string // a line the help must have
		wantStderr string
	}{
		{[]string{"tool", "help"}, exitcode.OK, "COMMANDS:", ""},
		{[]string{"tool", "help", "links"}, exitcode.OK, "tool links - list the links", ""},
		{[]string{"tool", "help", "nosuch"}, exitcode.Usage, "", "tool: help nosuch: no such command (want links)\n"},
	}
	for _, tt := range tests {
		ran := false
		app := cmdApp(&ran)
		var out, errb bytes.Buffer
		app.Writer = &out
		code := Run(context.Background(), app, tt.args, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.stdout) || errb.String() != tt.wantStderr || ran {
			t.Errorf("%v: exit %d, ran %v, stderr %q, stdout:\n%s", tt.args, code, ran, errb.String(), out.String())
		}
	}
}

// TestHelpLayout: the names column holds a flag's name and one-letter
// aliases (its other long aliases go after the usage), so that one flag
// with many aliases does not push every usage to the right; booleans say
// no "(default: false)".
func TestHelpLayout(t *testing.T) {
	app := &cli.App{
		Name: "tool",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "outstanding-smps", Aliases: []string{"o", "max-smps", "outstanding_smps"}, Value: 4, Usage: "at most `N` SMPs"},
			&cli.BoolFlag{Name: "full", Aliases: []string{"f"}, Usage: "full lines"},
			&cli.BoolFlag{Name: "sm", Value: true, Usage: "run the SM"},
		},
		Action: func(*cli.Context) error { return nil },
	}
	var out bytes.Buffer
	app.Writer = &out
	if code := Run(context.Background(), app, []string{"tool", "-h"}, new(bytes.Buffer)); code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"   --outstanding-smps N, -o N  at most N SMPs (also --max-smps, --outstanding_smps) (default: 4)\n",
		"   --full, -f                  full lines\n",
		"   --sm                        run the SM (default: true)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "(default: false)") {
		t.Errorf("help says (default: false):\n%s", out.String())
	}
}

// TestColorFlag: every app and command takes --color, and a bad value is
// one line.
func TestColorFlag(t *testing.T) {
	for _, args := range [][]string{{"tool", "--color=never"}, {"tool", "--color", "always", "x"}} {
		var got []string
		if code := Run(context.Background(), testApp(&got), args, new(bytes.Buffer)); code != exitcode.OK {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	ran := false
	if code := Run(context.Background(), cmdApp(&ran), []string{"tool", "links", "--color=never"}, new(bytes.Buffer)); code != exitcode.OK || !ran {
		t.Errorf("links --color=never: exit %d, ran %v", code, ran)
	}
	var got []string
	var errb bytes.Buffer
	if code := Run(context.Background(), testApp(&got), []string{"tool", "--color=yes"}, &errb); code != exitcode.Usage ||
		errb.String() != "tool: --color yes: want auto, always or never\n" {
		t.Errorf("--color=yes: exit %d, stderr %q", code, errb.String())
	}
}

// TestFlagNamesOf checks that flagNamesOf gives what urfave/cli's Names
// gives, with one allocation (Names runs a regular expression per name).
func TestFlagNamesOf(t *testing.T) {
	for _, f := range []cli.Flag{
		&cli.BoolFlag{Name: "check"},
		&cli.StringFlag{Name: "ca", Aliases: []string{"C", "device"}},
		&cli.IntFlag{Name: "outstanding", Aliases: []string{"o", "max-smps"}},
		&cli.GenericFlag{Name: "g"},
		&cli.DurationFlag{Name: "timeout", Aliases: []string{"t"}},
		&cli.StringSliceFlag{Name: "s"},
		&cli.Int64Flag{Name: "other-type", Aliases: []string{"x"}},
		&cli.StringFlag{Name: "v1, form", Aliases: []string{"a b"}},
		namedFlag{Flag: &cli.BoolFlag{Name: "n"}, names: []string{"n"}},
	} {
		got, want := flagNamesOf(f), f.Names()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("flagNamesOf(%v) = %q, Names() = %q", f, got, want)
		}
	}
	f := &cli.StringFlag{Name: "threshold-file", Aliases: []string{"T"}}
	if n := testing.AllocsPerRun(10, func() { flagNamesOf(f) }); n > 1 {
		t.Errorf("flagNamesOf: %v allocations, want 1", n)
	}
}
