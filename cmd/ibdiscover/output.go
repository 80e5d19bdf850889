package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// outKind is the one output a run produces.
type outKind int

const (
	outTopology outKind = iota
	outPorts
	outList
	outDiff
	outJSON
	outDot
	outSlurm
)

// outputSel is the chosen output and its parameters.
type outputSel struct {
	kind     outKind
	list     topology.ListKinds
	diffKeys topology.DiffKeys
}

type argsKey struct{}

// withArgs keeps the raw command line in ctx: the list flags' order
// matters (the last one given wins, as in ibnetdiscover).
func withArgs(ctx context.Context, args []string) context.Context {
	return context.WithValue(ctx, argsKey{}, args)
}

// valueFlags are the flags that take a value (their value is skipped
// when looking for list flags).
var valueFlags = map[string]bool{
	"from": true, "hops": true, "max-nodes": true, "node-name-map": true, "cache": true,
	"load-cache": true, "diff": true, "diffcheck": true, "Ca": true, "C": true, "Port": true,
	"P": true, "ibsim-sockname": true, "sim": true, "sim-host": true, "timeout": true, "t": true,
	"retries": true, "outstanding-smps": true, "o": true, "max-smps": true,
	"slurm-hostname": true, "svg": true,
}

var listFlags = map[string]topology.ListKinds{
	"l": topology.ListAll, "list": topology.ListAll,
	"H": topology.ListCAs, "Hca_list": topology.ListCAs,
	"S": topology.ListSwitches, "Switch_list": topology.ListSwitches,
	"R": topology.ListRouters, "Router_list": topology.ListRouters,
}

// lastList returns the list kinds of the last list flag in args, 0 if none.
func lastList(args []string) topology.ListKinds {
	var k topology.ListKinds
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			if a == "--" {
				break
			}
			continue
		}
		if strings.HasPrefix(a, "--") || len(a) == 2 || !isBundle(a[1:]) {
			name := strings.TrimLeft(a, "-")
			if j := strings.IndexByte(name, '='); j >= 0 {
				continue // --flag=value
			}
			if v, ok := listFlags[name]; ok {
				k = v
			} else if valueFlags[name] {
				i++
			}
			continue
		}
		for _, c := range a[1:] {
			if v, ok := listFlags[string(c)]; ok {
				k = v
			}
		}
	}
	return k
}

// isBundle reports whether s is a bundle of one-letter boolean flags.
func isBundle(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("fmslHSRpg", c) {
			return false
		}
	}
	return true
}

// selectOutput applies ibnetdiscover's precedence: -p, then the last list
// flag, then --diff, then the topology. --json, --dot and --slurm are
// ours: they exclude the other outputs.
func selectOutput(c *cli.Context) (outputSel, error) {
	sel := outputSel{kind: outTopology, diffKeys: topology.DiffDefault}
	if c.IsSet("diffcheck") {
		k, err := topology.ParseDiffCheck(c.String("diffcheck"))
		if err != nil {
			return sel, cliapp.Usage("--diffcheck "+c.String("diffcheck"), err.Error())
		}
		sel.diffKeys = k
	}
	lists := c.Bool("list") || c.Bool("Hca_list") || c.Bool("Switch_list") || c.Bool("Router_list")
	machine := 0
	for _, f := range []string{"json", "dot", "slurm"} {
		if c.Bool(f) {
			machine++
		}
	}
	if machine > 1 || (machine == 1 && (lists || c.Bool("ports") || c.IsSet("diff"))) {
		return sel, cliapp.Usage("--json/--dot/--slurm", "choose one output: --json, --dot, --slurm, -p, a list or --diff")
	}
	if c.IsSet("slurm-hostname") && !c.Bool("slurm") {
		return sel, cliapp.Usage("--slurm-hostname", "only with --slurm")
	}
	switch {
	case c.Bool("json"):
		sel.kind = outJSON
	case c.Bool("dot"):
		sel.kind = outDot
	case c.Bool("slurm"):
		sel.kind = outSlurm
	case c.Bool("ports"):
		sel.kind = outPorts
	case lists:
		sel.kind = outList
		args, _ := c.Context.Value(argsKey{}).([]string)
		if sel.list = lastList(args); sel.list == 0 {
			sel.list = topology.ListAll
		}
	case c.IsSet("diff"):
		sel.kind = outDiff
	}
	return sel, nil
}

// summary is the discovery summary of the JSON output.
func summary(res *discover.Result, loadedFrom string) fabricjson.Summary {
	s := fabricjson.Summary{
		Source:      "discovery",
		SMPs:        res.SMPs,
		Retries:     res.Retries,
		MaxHops:     res.MaxHops,
		Interrupted: res.Interrupted,
	}
	if loadedFrom != "" {
		s.Source = "cache"
		s.CacheFile = loadedFrom
	}
	for _, e := range res.Errors {
		msg := e.Err.Error()
		s.Errors = append(s.Errors, fabricjson.SMPError{Path: e.Path, Attr: e.Attr, Mod: e.Mod, Err: msg})
	}
	for _, p := range res.Problems {
		s.Problems = append(s.Problems, fabricjson.Problem{Kind: p.Kind, Msg: p.Msg, Paths: p.Paths, Incomplete: p.Incomplete()})
	}
	if res.Err != nil {
		s.Fatal = res.Err.Error()
	}
	return s
}
