package completion

import (
	"fmt"
	"io"
	"strings"
)

// fishQuote makes s one single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// fishDesc is a flag's usage cut to a short description (as zsh's).
func fishDesc(s string) string {
	for _, sep := range []string{"; ", ", or "} {
		if i := strings.Index(s, sep); i > 40 {
			s = s[:i]
		}
	}
	if n := strings.Count(s, "(") - strings.Count(s, ")"); n > 0 {
		s += strings.Repeat(")", n)
	}
	return s
}

// fishFlags writes a complete line for every visible flag of fs, under
// condition cond ("" for none).
func fishFlags(b *strings.Builder, name, cond string, fs []Flag) {
	for _, f := range fs {
		if f.Hidden {
			continue
		}
		b.WriteString("complete -c " + name)
		if cond != "" {
			b.WriteString(" -n " + fishQuote(cond))
		}
		for _, n := range f.Names {
			if len(n) == 1 {
				b.WriteString(" -s " + n)
			} else {
				b.WriteString(" -l " + n)
			}
		}
		if f.Value {
			switch f.Kind {
			case File:
				b.WriteString(" -r -F")
			case Device:
				b.WriteString(" -x -a " + fishQuote("("+strings.TrimSuffix(strings.TrimPrefix(devices, "$("), ")")+")"))
			case Choice:
				words := strings.Join(f.Choices.Words, " ")
				if f.Choices.List {
					b.WriteString(" -x -a " + fishQuote("(__fish_complete_list , \"string split ' ' -- '"+words+"'\")"))
				} else {
					b.WriteString(" -x -a " + fishQuote(words))
				}
			default:
				b.WriteString(" -x")
			}
		}
		b.WriteString(" -d " + fishQuote(fishDesc(f.Usage)) + "\n")
	}
}

// Fish writes the fish completion script (a file named <tool>.fish in a
// directory of $fish_complete_path).
func Fish(w io.Writer, s Spec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s: subcommands, options and their files.\n", s.Name)
	b.WriteString("# Generated from the tool's options (internal/completion); do not edit.\n\n")
	if len(s.Commands) == 0 {
		if s.Operand != File {
			fmt.Fprintf(&b, "complete -c %s -f\n", s.Name)
		}
		fishFlags(&b, s.Name, "", s.Flags)
	} else {
		var names []string
		for _, c := range s.Commands {
			names = append(names, c.Name)
		}
		seen := "__fish_seen_subcommand_from " + strings.Join(names, " ")
		fmt.Fprintf(&b, "complete -c %s -f\n", s.Name)
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", s.Name, fishQuote("not "+seen), c.Name, fishQuote(fishDesc(c.Usage)))
		}
		// before the command: the options every command takes (given
		// there, they are moved after the command name)
		fishFlags(&b, s.Name, "not "+seen, dedup(append(unhide(s.Flags), shared(s.Commands)...)))
		for _, c := range s.Commands {
			b.WriteString("\n")
			fishFlags(&b, s.Name, "__fish_seen_subcommand_from "+c.Name, c.Flags)
			if c.Operand == File {
				fmt.Fprintf(&b, "complete -c %s -n %s -F\n", s.Name, fishQuote("__fish_seen_subcommand_from "+c.Name))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dedup drops the flags whose first name an earlier flag of fs has.
func dedup(fs []Flag) []Flag {
	var out []Flag
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.Names[0]] {
			seen[f.Names[0]] = true
			out = append(out, f)
		}
	}
	return out
}
