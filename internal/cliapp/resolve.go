package cliapp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/ibfabric/ibdiag/internal/suggest"
	"github.com/ibfabric/ibdiag/pkg/model"
)

// PortError is the usage error for a port the user named by spec that f
// could not resolve (err from model.Fabric.ResolveLID). where is the flag
// or operand that took spec ("--switch", "DST"; "" for an operand with no
// name). The one line names the input once, "DST LID 99: not in the
// fabric", and for a name that matches no node suggests the nearest node
// names and descriptions (name gives a node's name; nil: its
// description). hint, if not empty, is added in parentheses to a LID
// that is not in the fabric.
func PortError(where, spec string, err error, f *model.Fabric, name func(*model.Node) string, hint string) error {
	join := func(a, b string) string {
		if a == "" {
			return b
		}
		return a + " " + b
	}
	msg := err.Error()
	// model names the LID or GUID it parsed ("LID 99: not in the
	// fabric") or quotes the name; the input is named here instead
	what := strconv.Quote(spec)
	for _, q := range []string{strconv.Quote(spec), strconv.Quote(strings.TrimSpace(spec))} {
		if strings.HasPrefix(msg, q+": ") {
			msg = msg[len(q)+2:]
			break
		}
	}
	for _, kind := range []string{"LID ", "GUID "} {
		if strings.HasPrefix(msg, kind) {
			if i := strings.Index(msg, ": "); i >= 0 {
				what, msg = msg[:i], msg[i+2:]
			}
			if kind == "LID " && hint != "" && errors.Is(err, model.ErrNotFound) {
				msg += " (" + hint + ")"
			}
			return Usage(join(where, what), msg)
		}
	}
	if errors.Is(err, model.ErrNotFound) {
		msg = "not a node name or description in the fabric" + suggest.DidYouMean(suggest.Closest(strings.TrimSpace(spec), nodeNames(f, name), 3), strconv.Quote)
	}
	return Usage(join(where, what), msg)
}

// nodeNames lists every node's description and, when it differs, its
// name.
func nodeNames(f *model.Fabric, name func(*model.Node) string) []string {
	var out []string
	for _, n := range f.Nodes {
		d := n.Description()
		out = append(out, d)
		if name != nil {
			if m := name(n); m != d {
				out = append(out, m)
			}
		}
	}
	return out
}

// NotASwitch is the usage error for a port that is not a switch's where
// a switch is wanted: "--lft h1: a CA, not a switch", the node's name
// added when spec is not that name.
func NotASwitch(where, spec, typ, name string) error {
	if spec == name || strings.TrimSpace(spec) == strings.TrimSpace(name) {
		return Usage(where+" "+spec, "a "+typ+", not a switch")
	}
	return Usage(where+" "+spec, strconv.Quote(name)+" is a "+typ+", not a switch")
}
