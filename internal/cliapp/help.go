package cliapp

import (
	"strings"

	"github.com/urfave/cli/v2"
)

func init() { cli.FlagStringer = helpLine(cli.FlagStringer) }

// helpLine wraps urfave/cli's flag line of the help ("names\tusage") so
// that the names column stays narrow and the usage says only what helps:
// the column lists a flag's name and its one-letter aliases, its other
// long aliases go after the usage as "(also --max-smps)", and a boolean
// that is off by default does not say "(default: false)".
func helpLine(orig cli.FlagStringFunc) cli.FlagStringFunc {
	return func(f cli.Flag) string {
		s := orig(f)
		names, usage, ok := strings.Cut(s, "\t")
		if !ok {
			return s
		}
		usage = strings.TrimSuffix(usage, " (default: false)")
		parts := strings.Split(names, ", ")
		keep := parts[:1]
		var also []string
		for _, p := range parts[1:] {
			n, _, _ := strings.Cut(p, " ")
			if len(strings.TrimLeft(n, "-")) == 1 {
				keep = append(keep, p)
			} else {
				also = append(also, n)
			}
		}
		if len(also) > 0 {
			a := "(also " + strings.Join(also, ", ") + ")"
			if i := strings.LastIndex(usage, " (default: "); i >= 0 {
				usage = usage[:i] + " " + a + usage[i:]
			} else {
				usage += " " + a
			}
		}
		return strings.Join(keep, ", ") + "\t" + usage
	}
}
