package cliapp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/suggest"
)

// alwaysFlags are names every app and command takes that are not in its
// Flags before it runs (urfave/cli adds -h/--help then).
var alwaysFlags = []string{"help", "h"}

// checkOptions returns a usage error for the first option of args (up to
// "--") that names none of flags: "-hop: unknown option (did you mean
// -hops?)". Operands and the values of options that take one are
// skipped. With groups (the parser's short option handling), a
// single-dash word that is no flag's name is taken as short options
// written together ("-lH") when each letter is a one-letter
// flag and every letter but the last is a boolean; otherwise it is the
// mistyped long option it looks like (urfave/cli would split "-hop" into
// -h -o p and complain about -o's value).
func checkOptions(flags []cli.Flag, args []string, groups bool) error {
	takes := valueFlags(flags)
	known := flagNames(flags)
	for _, n := range alwaysFlags {
		known[n] = true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if !isOption(a) {
			continue
		}
		name := optName(a)
		if known[name] {
			if takes[name] && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		if groups && !strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && shortGroup(name, known, takes) {
			if takes[name[len(name)-1:]] {
				i++
			}
			continue
		}
		return unknownOption(a, name, known)
	}
	return nil
}

// shortGroup reports whether name is one-letter options written
// together, every one but the last a boolean.
func shortGroup(name string, known, takes map[string]bool) bool {
	if len(name) < 2 {
		return false
	}
	for i := 0; i < len(name); i++ {
		l := name[i : i+1]
		if !known[l] || (takes[l] && i < len(name)-1) {
			return false
		}
	}
	return true
}

// unknownOption is the error for option a (name without dashes).
func unknownOption(a, name string, known map[string]bool) error {
	dash := "-"
	if strings.HasPrefix(a, "--") {
		dash = "--"
	}
	var long []string
	for n := range known {
		if len(n) > 1 {
			long = append(long, n)
		}
	}
	sort.Strings(long)
	cands := long
	if len(name) == 1 {
		cands = nil // every letter is one edit from every other
	}
	typed := a
	if i := strings.IndexByte(typed, '='); i >= 0 {
		typed = typed[:i]
	}
	hint := suggest.DidYouMean(suggest.Closest(name, cands, 1), func(n string) string {
		if len(n) == 1 {
			return "-" + n
		}
		return dash + n
	})
	if hint == "" {
		hint = " (see --help)"
	}
	return &ExitError{Code: exitcode.Usage, Err: fmt.Errorf("%s: unknown option%s", typed, hint)}
}
