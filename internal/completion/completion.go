// Package completion writes bash, zsh and fish completion scripts for a
// urfave/cli app: its subcommands, every flag name and alias, and what a
// flag's value or an operand is (a file, an InfiniBand device, one of a
// list of words, or nothing to offer). The scripts are static: completing never runs the
// tool. The commands' tests keep completions/ in step with the apps.
package completion

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// Value kinds of a flag or operand.
const (
	None   = ""       // free text: nothing to offer
	File   = "file"   // a path
	Device = "device" // an InfiniBand device name (/sys/class/infiniband)
	Choice = "choice" // one of Flag.Choices (or a comma-separated list of them)
)

// Choices are what a flag's value may be: one of Words, or with List a
// comma-separated list of them (--diffcheck sw,ca).
type Choices struct {
	Words []string
	List  bool
}

// Spec is what the scripts know of a tool.
type Spec struct {
	Name     string
	Flags    []Flag // the app's own
	Commands []Command
	// Operand is the kind of the app's (or, with commands, every
	// command's) operands.
	Operand string
}

// Command is one subcommand.
type Command struct {
	Name, Usage string
	Flags       []Flag
	Operand     string
}

// Flag is one option: its names ("f", "full"), whether it takes a value
// and of what kind.
type Flag struct {
	Names  []string
	Usage  string
	Value  bool
	Kind   string
	Label  string // the value's placeholder, lower case ("file", "n")
	Hidden bool
	// Choices are the values offered when Kind is Choice.
	Choices Choices
}

// placeholder is the `NAME` in a flag's usage text.
var placeholder = regexp.MustCompile("`([A-Z_]+)`")

// FromApp reads the spec of app (after app.Setup, so that -h is there).
// operand is the kind of the operands; choices are the values of the
// flags that take one of a few words, by flag name; extra are flags the
// app gets when it runs (cliapp's -V, --color). A flag's value is a file
// when its usage placeholder is FILE or SPEC, a device for -C/--Ca.
func FromApp(app *cli.App, operand string, choices map[string]Choices, extra ...cli.Flag) Spec {
	s := Spec{Name: app.Name, Operand: operand}
	flags := func(fs []cli.Flag) []Flag { return flagsOf(fs, choices) }
	s.Flags = flags(append(append([]cli.Flag{}, app.Flags...), extra...))
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		fs := append(append([]cli.Flag{}, c.Flags...), extra...) // cliapp gives commands them too
		if !c.HideHelp && !slices.ContainsFunc(fs, func(f cli.Flag) bool { return slices.Contains(f.Names(), "help") }) {
			fs = append(fs, cli.HelpFlag) // urfave/cli adds it when the command runs
		}
		s.Commands = append(s.Commands, Command{Name: c.Name, Usage: c.Usage, Flags: flags(fs), Operand: operand})
	}
	return s
}

func flagsOf(fs []cli.Flag, choices map[string]Choices) []Flag {
	var out []Flag
	for _, f := range fs {
		fl := Flag{Names: f.Names()}
		if d, ok := f.(cli.DocGenerationFlag); ok {
			fl.Usage = d.GetUsage()
			fl.Value = d.TakesValue()
		}
		if v, ok := f.(cli.VisibleFlag); ok {
			fl.Hidden = !v.IsVisible()
		}
		if fl.Value {
			fl.Label = "value"
			m := placeholder.FindStringSubmatch(fl.Usage)
			if m != nil {
				fl.Label = strings.ToLower(m[1])
			}
			switch {
			case m != nil && (m[1] == "FILE" || m[1] == "SPEC"):
				fl.Kind = File
			case slices.Contains(fl.Names, "Ca"):
				fl.Kind = Device
			}
			if c, ok := choices[fl.Names[0]]; ok {
				fl.Kind, fl.Choices = Choice, c
			}
		}
		fl.Usage = strings.ReplaceAll(fl.Usage, "`", "")
		out = append(out, fl)
	}
	return out
}

// dashed is the option as typed: -f or --full.
func dashed(n string) string {
	if len(n) == 1 {
		return "-" + n
	}
	return "--" + n
}

// words lists every name of the visible flags, dashed and sorted.
func words(fs []Flag) []string {
	var w []string
	for _, f := range fs {
		if f.Hidden {
			continue
		}
		for _, n := range f.Names {
			w = append(w, dashed(n))
		}
	}
	sort.Strings(w)
	return slices.Compact(w)
}

// dashedAll is every name dashed.
func dashedAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = dashed(n)
	}
	return out
}

// choiceFlags are the flags of fs whose values are Choices, once each
// (by first name), in name order.
func choiceFlags(fs []Flag) []Flag {
	var out []Flag
	for _, f := range fs {
		if f.Kind == Choice && !slices.ContainsFunc(out, func(g Flag) bool { return g.Names[0] == f.Names[0] }) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Names[0] < out[j].Names[0] })
	return out
}

// byKind groups the dashed names of the value-taking flags by kind
// (flags with Choices are not in it: each has its own case).
func byKind(fs []Flag) map[string][]string {
	m := map[string][]string{}
	for _, f := range fs {
		if !f.Value || f.Kind == Choice {
			continue
		}
		for _, n := range f.Names {
			m[f.Kind] = append(m[f.Kind], dashed(n))
		}
	}
	for k := range m {
		sort.Strings(m[k])
		m[k] = slices.Compact(m[k])
	}
	return m
}

// all is every flag of the spec (app and commands), for the value cases.
func (s Spec) all() []Flag {
	fs := append([]Flag{}, s.Flags...)
	for _, c := range s.Commands {
		fs = append(fs, c.Flags...)
	}
	return fs
}

const devices = `$(ls /sys/class/infiniband 2>/dev/null)`

// Bash writes the bash completion script.
func Bash(w io.Writer, s Spec) error {
	fn := "_" + s.Name
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s: subcommands, options and their files.\n", s.Name)
	fmt.Fprintf(&b, "# Generated from the tool's options (internal/completion); do not edit.\n\n")
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=\n")
	b.WriteString("\t[ \"$COMP_CWORD\" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	b.WriteString("\tCOMPREPLY=()\n")
	// the value of the option before
	kinds := byKind(s.all())
	b.WriteString("\tcase $prev in\n")
	for _, f := range choiceFlags(s.all()) {
		fmt.Fprintf(&b, "\t%s)\n", strings.Join(dashedAll(f.Names), "|"))
		words := strings.Join(f.Choices.Words, " ")
		if f.Choices.List {
			// the item after the last comma
			fmt.Fprintf(&b, "\t\tlocal pre=\n\t\t[[ $cur == *,* ]] && pre=${cur%%,*},\n")
			fmt.Fprintf(&b, "\t\tcompopt -o nospace 2>/dev/null\n\t\tCOMPREPLY=($(compgen -P \"$pre\" -W %q -- \"${cur##*,}\"))\n", words)
		} else {
			fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n", words)
		}
		b.WriteString("\t\treturn\n\t\t;;\n")
	}
	for _, k := range []string{File, Device, None} {
		names := kinds[k]
		if len(names) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\t%s)\n", strings.Join(names, "|"))
		switch k {
		case File:
			b.WriteString("\t\tcompopt -o filenames 2>/dev/null\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n")
		case Device:
			fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n", devices)
		}
		b.WriteString("\t\treturn\n\t\t;;\n")
	}
	b.WriteString("\tesac\n")
	if len(s.Commands) == 0 {
		fmt.Fprintf(&b, "\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n", strings.Join(words(s.Flags), " "))
		if s.Operand == File {
			b.WriteString("\tcompopt -o filenames 2>/dev/null\n\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n")
		}
		b.WriteString("}\n")
	} else {
		var names []string
		for _, c := range s.Commands {
			names = append(names, c.Name)
		}
		b.WriteString("\tlocal i cmd=\n\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase ${COMP_WORDS[i]} in\n")
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\tcmd=${COMP_WORDS[i]}\n\t\t\tbreak\n\t\t\t;;\n\t\tesac\n\tdone\n", strings.Join(names, "|"))
		b.WriteString("\tcase $cmd in\n")
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "\t%s)\n\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\tfi\n", c.Name, strings.Join(words(append(append([]Flag{}, s.Flags...), c.Flags...)), " "))
			if c.Operand == File {
				b.WriteString("\t\t[[ $cur == -* ]] || { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); }\n")
			}
			b.WriteString("\t\t;;\n")
		}
		// before the command: its name, or an option (the shared ones
		// are taken before the command name too)
		fmt.Fprintf(&b, "\t*)\n\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\telse\n\t\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\tfi\n\t\t;;\n\tesac\n}\n",
			strings.Join(words(append(unhide(s.Flags), shared(s.Commands)...)), " "), strings.Join(names, " "))
	}
	fmt.Fprintf(&b, "complete -F %s %s\n", fn, s.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// unhide returns fs with every flag visible (an app's hidden copies of
// its commands' shared flags are offered before the command name).
func unhide(fs []Flag) []Flag {
	out := append([]Flag{}, fs...)
	for i := range out {
		out[i].Hidden = false
	}
	return out
}

// shared returns the flags every command has.
func shared(cs []Command) []Flag {
	if len(cs) == 0 {
		return nil
	}
	var out []Flag
	for _, f := range cs[0].Flags {
		in := true
		for _, c := range cs[1:] {
			if !slices.ContainsFunc(c.Flags, func(g Flag) bool { return slices.Equal(g.Names, f.Names) }) {
				in = false
			}
		}
		if in {
			out = append(out, f)
		}
	}
	return out
}

// zshQuote makes s safe inside a single-quoted _arguments spec's
// description: no brackets or colons, quotes escaped.
func zshQuote(s string) string {
	r := strings.NewReplacer("[", "(", "]", ")", ":", " -", "'", `'\''`, "\\", "", "\n", " ")
	if i := strings.Index(s, "; "); i > 40 {
		s = s[:i]
	}
	if i := strings.Index(s, ", or "); i > 40 {
		s = s[:i]
	}
	if n := strings.Count(s, "(") - strings.Count(s, ")"); n > 0 {
		s += strings.Repeat(")", n)
	}
	return r.Replace(s)
}

// zshSpecs returns the _arguments specs of fs.
func zshSpecs(fs []Flag) []string {
	var out []string
	for _, f := range fs {
		if f.Hidden {
			continue
		}
		var dashedNames []string
		for _, n := range f.Names {
			dashedNames = append(dashedNames, dashed(n))
		}
		excl := ""
		if len(dashedNames) > 1 {
			excl = "'(" + strings.Join(dashedNames, " ") + ")'"
		}
		action := ""
		if f.Value {
			label := f.Label
			switch f.Kind {
			case File:
				action = ":" + label + ":_files"
			case Device:
				action = ":" + label + ":(" + devices + ")"
			case Choice:
				if f.Choices.List {
					action = ":" + label + ":_values -s , " + label + " " + strings.Join(f.Choices.Words, " ")
				} else {
					action = ":" + label + ":(" + strings.Join(f.Choices.Words, " ") + ")"
				}
			default:
				action = ":" + label + ": "
			}
		}
		desc := "[" + zshQuote(f.Usage) + "]" + action + "'"
		var names []string
		for _, d := range dashedNames {
			switch {
			case !f.Value:
				names = append(names, d)
			case len(d) == 2:
				names = append(names, d+"+")
			default:
				names = append(names, d+"=")
			}
		}
		if len(names) == 1 {
			out = append(out, excl+"'"+names[0]+desc)
			continue
		}
		out = append(out, excl+"{"+strings.Join(names, ",")+"}'"+desc)
	}
	return out
}

// Zsh writes the zsh completion function (a file named _<tool> on
// $fpath).
func Zsh(w io.Writer, s Spec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s: subcommands, options and their files.\n", s.Name, s.Name)
	b.WriteString("# Generated from the tool's options (internal/completion); do not edit.\n\n")
	operand := func(kind string) string {
		if kind == File {
			return "'*:file:_files'"
		}
		return "'*: :'"
	}
	args := func(indent, opts string, specs []string, tail ...string) {
		b.WriteString(indent + "_arguments " + opts + " \\\n")
		all := append(specs, tail...)
		for i, sp := range all {
			b.WriteString(indent + "\t" + sp)
			if i < len(all)-1 {
				b.WriteString(" \\")
			}
			b.WriteString("\n")
		}
	}
	if len(s.Commands) == 0 {
		args("", "-s -S", zshSpecs(s.Flags), operand(s.Operand))
	} else {
		b.WriteString("local curcontext=$curcontext state line\ntypeset -A opt_args\nlocal -a commands\ncommands=(\n")
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "\t'%s:%s'\n", c.Name, zshQuote(c.Usage))
		}
		b.WriteString(")\n")
		args("", "-C -s -S", zshSpecs(append(unhide(s.Flags), shared(s.Commands)...)), "'1: :->command'", "'*:: :->args'")
		b.WriteString("case $state in\ncommand)\n\t_describe command commands\n\t;;\nargs)\n\tcase $line[1] in\n")
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "\t%s)\n", c.Name)
			args("\t\t", "-s -S", zshSpecs(c.Flags), operand(c.Operand))
			b.WriteString("\t\t;;\n")
		}
		b.WriteString("\tesac\n\t;;\nesac\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
