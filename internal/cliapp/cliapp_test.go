package cliapp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

func testApp(got *[]string) *cli.App {
	return &cli.App{
		Name: "tool",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "full", Aliases: []string{"f"}},
			&cli.IntFlag{Name: "hops"},
			&cli.StringFlag{Name: "from"},
		},
		Action: func(c *cli.Context) error {
			*got = append(*got, "full="+boolText(c.Bool("full")), "hops="+strconv.Itoa(c.Int("hops")), "from="+c.String("from"))
			*got = append(*got, c.Args().Slice()...)
			if c.Args().First() == "fail" {
				return Exit(exitcode.Partial, errors.New("partial result"))
			}
			return nil
		},
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestReorder(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"tool", "out.txt", "-f"}, []string{"full=true", "hops=0", "from=", "out.txt"}},
		{[]string{"tool", "a", "-hops", "2", "b", "-from=0,1"}, []string{"full=false", "hops=2", "from=0,1", "a", "b"}},
		{[]string{"tool", "-hops", "-1", "x"}, []string{"full=false", "hops=-1", "from=", "x"}},
		{[]string{"tool", "--", "-f"}, []string{"full=false", "hops=0", "from=", "-f"}},
	}
	for _, tt := range tests {
		var got []string
		var errb bytes.Buffer
		if code := Run(context.Background(), testApp(&got), tt.args, &errb); code != 0 {
			t.Errorf("%v: exit %d: %s", tt.args, code, errb.String())
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestRunErrors(t *testing.T) {
	var got []string
	var errb bytes.Buffer
	if code := Run(context.Background(), testApp(&got), []string{"tool", "fail"}, &errb); code != exitcode.Partial {
		t.Errorf("exit %d, want %d", code, exitcode.Partial)
	}
	if errb.String() != "tool: partial result\n" {
		t.Errorf("stderr %q", errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), testApp(&got), []string{"tool", "out.txt", "-from"}, &errb); code != exitcode.Usage {
		t.Errorf("dangling option: exit %d, want %d", code, exitcode.Usage)
	}
	if errb.String() != "tool: -from: option requires an argument\n" {
		t.Errorf("dangling option: stderr %q", errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), testApp(&got), []string{"tool", "-hops", "x"}, &errb); code != exitcode.Usage {
		t.Errorf("bad flag value: exit %d, want %d", code, exitcode.Usage)
	}
	if strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(errb.String(), "tool: ") {
		t.Errorf("bad flag value: stderr %q, want one line", errb.String())
	}
}

// TestInternalError: a panic in an action is one line and exit status 1
// (never the bad-input status 2), with no stack; EPIPE on standard output
// ends the run quietly with 141.
func TestInternalError(t *testing.T) {
	tests := []struct {
		name   string
		action func(*cli.Context) error
		code   int
		stderr string
	}{
		{"panic", func(*cli.Context) error { panic("boom") }, exitcode.Fatal,
			"tool: internal error: boom (please report it, with the command line)\n"},
		{"nil map", func(*cli.Context) error { var m map[string]int; m["x"]++; return nil }, exitcode.Fatal,
			"tool: internal error: assignment to entry in nil map (please report it, with the command line)\n"},
		{"broken pipe", func(*cli.Context) error {
			return Exit(exitcode.Fatal, fmt.Errorf("write /dev/stdout: %w", syscall.EPIPE))
		},
			StatusBrokenPipe, ""},
	}
	for _, tc := range tests {
		var stderr bytes.Buffer
		app := &cli.App{Name: "tool", Action: tc.action}
		code := Run(context.Background(), app, []string{"tool"}, &stderr)
		if code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("%s: exit %d stderr %q, want %d %q", tc.name, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

// TestReorderCommands: a command's options given before its name are
// moved after it; the app's own options stay before it.
func TestReorderCommands(t *testing.T) {
	app := &cli.App{
		Name:  "tool",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "global"}},
		Commands: []*cli.Command{{
			Name: "run",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "sim", Aliases: []string{"s"}},
				&cli.BoolFlag{Name: "ibsim"},
				&cli.BoolFlag{Name: "json"},
			},
		}},
	}
	tests := []struct{ args, want []string }{
		{[]string{"tool", "--ibsim", "run"}, []string{"tool", "run", "--ibsim"}},
		{[]string{"tool", "--sim", "x.net", "--global", "run", "a", "--json"}, []string{"tool", "--global", "run", "--sim", "x.net", "--json", "a"}},
		{[]string{"tool", "-s=x", "run", "a"}, []string{"tool", "run", "-s=x", "a"}},
		{[]string{"tool", "--sim", "run", "run"}, []string{"tool", "run", "--sim", "run"}},
		{[]string{"tool", "--sim", "x"}, []string{"tool", "--sim", "x"}},
		{[]string{"tool", "--", "run"}, []string{"tool", "--", "run"}},
	}
	for _, tt := range tests {
		got, err := Reorder(app, tt.args)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

// TestVersion: -V and --version print one version line on stdout and
// exit 0, before any action runs, with or without subcommands.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"tool", "-V"}, {"tool", "--version"}, {"tool", "x.txt", "-V"}} {
		var got []string
		var out, errb bytes.Buffer
		app := testApp(&got)
		app.Writer = &out
		if code := Run(context.Background(), app, args, &errb); code != 0 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if s := out.String(); !strings.HasPrefix(s, "tool version ") || strings.Count(s, "\n") != 1 || len(got) != 0 {
			t.Errorf("%v: stdout %q, action ran: %v", args, s, got)
		}
	}
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"sub", "-V"}, {"sub", "run", "--version"}} {
		out.Reset()
		app := &cli.App{Name: "sub", Writer: &out, Commands: []*cli.Command{{Name: "run", Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}},
			Action: func(*cli.Context) error { t.Error("action ran"); return nil }}}}
		if code := Run(context.Background(), app, args, &errb); code != 0 || !strings.HasPrefix(out.String(), "sub version ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// TestNamesOnce: with the flags' names computed once after parsing, IsSet
// and the values still answer as urfave/cli's own lookups do: for a flag
// given by its name or by an alias, one not given, and, from a
// subcommand, one of its parent's.
func TestNamesOnce(t *testing.T) {
	type answer struct {
		set   map[string]bool
		value string
		count int
	}
	var got answer
	names := []string{"sim", "s", "verbose", "v", "json", "hops", "global", "g", "nope"}
	action := func(c *cli.Context) error {
		got = answer{set: map[string]bool{}, value: c.String("sim"), count: c.Count("verbose")}
		for _, n := range names {
			got.set[n] = c.IsSet(n)
		}
		for _, f := range c.Command.Flags {
			if _, ok := f.(namedFlag); !ok {
				t.Errorf("flag %v: names not computed once", f.Names())
			}
		}
		return nil
	}
	flags := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "sim", Aliases: []string{"s"}},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Count: new(int)},
			&cli.BoolFlag{Name: "json"},
			&cli.IntFlag{Name: "hops"},
		}
	}
	tests := []struct {
		args []string
		set  []string
		sim  string
		v    int
	}{
		{[]string{"tool", "--sim", "a.net", "-v", "-v"}, []string{"sim", "s", "verbose", "v"}, "a.net", 2},
		{[]string{"tool", "-s", "b.net", "--json"}, []string{"sim", "s", "json"}, "b.net", 0},
		{[]string{"tool", "--hops=0"}, []string{"hops"}, "", 0},
		{[]string{"tool"}, nil, "", 0},
		{[]string{"tool", "-g", "run", "-s", "c.net"}, []string{"sim", "s", "global", "g"}, "c.net", 0},
	}
	for _, tt := range tests {
		got = answer{}
		app := &cli.App{Name: "tool", Flags: flags(), Action: action}
		if tt.args[len(tt.args)-1] == "c.net" {
			app = &cli.App{Name: "tool", Flags: []cli.Flag{&cli.BoolFlag{Name: "global", Aliases: []string{"g"}}},
				Commands: []*cli.Command{{Name: "run", Flags: flags(), Action: action}}}
		}
		var errb bytes.Buffer
		if code := Run(context.Background(), app, tt.args, &errb); code != 0 {
			t.Fatalf("%v: exit %d, %s", tt.args, code, errb.String())
		}
		want := map[string]bool{}
		for _, n := range names {
			want[n] = false
		}
		for _, n := range tt.set {
			want[n] = true
		}
		if !reflect.DeepEqual(got.set, want) || got.value != tt.sim || got.count != tt.v {
			t.Errorf("%v: IsSet %v, sim %q, verbose %d; want %v, %q, %d", tt.args, got.set, got.value, got.count, want, tt.sim, tt.v)
		}
	}
}

// TestTwoForms: one flag given under two of its names is one flag, as
// getopt makes it (urfave/cli alone refuses "Cannot use two forms of the
// same flag"): a list accumulates in order, a value is the last one.
func TestTwoForms(t *testing.T) {
	tests := []struct{ args, want []string }{
		{[]string{"tool", "-s", "a", "--suppress", "b", "--suppress=c", "x"}, []string{"s=a,b,c", "o=", "x"}},
		{[]string{"tool", "--suppress", "a", "-s=b"}, []string{"s=a,b", "o="}},
		{[]string{"tool", "-o", "one", "--output", "two", "-s", "a"}, []string{"s=a", "o=two"}},
		{[]string{"tool", "--output=one", "-o", "-s"}, []string{"s=", "o=-s"}}, // "-s" is -o's value
		{[]string{"tool", "-s", "a", "--", "--suppress"}, []string{"s=a", "o=", "--suppress"}},
	}
	for _, tt := range tests {
		var got []string
		app := &cli.App{
			Name: "tool",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "s", Aliases: []string{"suppress"}},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
			},
			Action: func(c *cli.Context) error {
				got = append(got, "s="+strings.Join(c.StringSlice("s"), ","), "o="+c.String("output"))
				got = append(got, c.Args().Slice()...)
				return nil
			},
		}
		var errb bytes.Buffer
		if code := Run(context.Background(), app, tt.args, &errb); code != 0 {
			t.Errorf("%v: exit %d: %s", tt.args, code, errb.String())
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, want %v", tt.args, got, tt.want)
		}
	}
}
