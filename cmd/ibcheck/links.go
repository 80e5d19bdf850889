package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/linkinfo"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// linksCommand is ibcheck links, iblinkinfo's drop-in (pkg/linkinfo).
func linksCommand(stdout, stderr io.Writer) *cli.Command {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "line", Aliases: []string{"l"}, Usage: "(line mode) print all information for each link on a single line"},
		&cli.BoolFlag{Name: "additional", Aliases: []string{"p"}, Usage: "print additional port settings (HoqLife, VLStallCount)"},
		&cli.BoolFlag{Name: "down", Aliases: []string{"d"}, Usage: "print only down links"},
		&cli.StringFlag{Name: "switch", Aliases: []string{"S"}, Usage: "print only the node of port `GUID` (0x and hex digits)"},
		&cli.StringFlag{Name: "port-guid", Aliases: []string{"G"}, Usage: "the same as -S"},
		&cli.StringFlag{Name: "Direct", Aliases: []string{"D"}, Usage: "print only the node at directed route `PATH` (0,1,...)"},
		&cli.BoolFlag{Name: "switches-only", Usage: "output only switches"},
		&cli.BoolFlag{Name: "cas-only", Usage: "output only CAs"},
		&cli.StringFlag{Name: "node-name-map", Usage: "node name map `FILE` (default " + nodenamemap.DefaultPath + " when it exists)"},
		&cli.StringFlag{Name: "load-cache", Usage: "print the fabric in ibnetdiscover cache `FILE` instead of discovering it"},
	}
	return &cli.Command{
		Name:      "links",
		Usage:     "print every link as iblinkinfo does, byte for byte",
		UsageText: "ibcheck links [-l] [-p] [-d] [-S GUID | -D PATH] [--switches-only | --cas-only] [--node-name-map FILE] [--load-cache FILE] [fabric options]",
		Flags:     append(flags, fabricFlagsWithoutD()...),
		Action:    func(c *cli.Context) error { return linksCmd(c, stdout, stderr) },
	}
}

func linksCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() > 0 {
		return cliapp.Usage(c.Args().First(), "ibcheck links takes no arguments")
	}
	var o linkinfo.Options
	o.Line, o.Additional, o.Down = c.Bool("line"), c.Bool("additional"), c.Bool("down")
	switch {
	case c.Bool("switches-only") && c.Bool("cas-only"):
		return cliapp.Usage("--switches-only --cas-only", "give one of them")
	case c.Bool("switches-only"):
		o.Only = linkinfo.SwitchesOnly
	case c.Bool("cas-only"):
		o.Only = linkinfo.CAsOnly
	}
	for _, flag := range []string{"switch", "port-guid"} {
		if v := c.String(flag); v != "" {
			// as iblinkinfo's strtoull(v, 0): 0x for hex, else decimal
			g, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return cliapp.Usage("--"+flag+" "+v, "not a GUID (0x and hex digits, as iblinkinfo takes it)")
			}
			o.ByGUID, o.GUID = true, g
		}
	}
	if v := c.String("Direct"); v != "" {
		if c.String("load-cache") != "" {
			return cliapp.Usage("--Direct", "cannot be used with --load-cache (as iblinkinfo)")
		}
		p, err := smp.ParseDRPath(v)
		if err != nil {
			return cliapp.Usage("--Direct "+v, err.Error())
		}
		o.ByPath, o.Path = true, p
	}
	s, err := attach.FromContext(c)
	if err != nil {
		return cliapp.InputError(err)
	}
	names, err := infile.Load(c.Context, "--node-name-map", c.String("node-name-map"), func() (*nodenamemap.Map, error) {
		return nodenamemap.Open(c.String("node-name-map"))
	})
	switch {
	case err != nil && c.IsSet("node-name-map"):
		return cliapp.Usage("--node-name-map", err.Error())
	case err != nil:
		fmt.Fprintf(stderr, "ibcheck: warning: node name map: %v\n", err)
	default:
		o.Names = names
	}
	var fab *model.Fabric
	partial := false
	if f := c.String("load-cache"); f != "" {
		fab, err = infile.Load(c.Context, "--load-cache", f, func() (*model.Fabric, error) {
			fab, _, err := ibndcache.LoadMax(f, s.MaxNodes)
			return fab, err
		})
		if err != nil {
			return cliapp.Exit(exitcode.Usage, fmt.Errorf("--load-cache: %w", err))
		}
	} else {
		conn, err := openFabric(c.Context, s)
		if err != nil {
			return cliapp.Fail(err)
		}
		defer conn.Close()
		res, err := discover.Discover(c.Context, conn, s.Config())
		if err != nil {
			if c.Context.Err() != nil {
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted before the start node answered"))
			}
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("discover failed: %w", err))
		}
		if res.Interrupted {
			return cliapp.Exit(exitcode.Interrupted, fmt.Errorf("interrupted during discovery (%d nodes)", len(res.Fabric.Nodes)))
		}
		s.ReportSMPErrors(stderr, "ibcheck", res.Errors, res.Fabric, nil)
		fab, partial = res.Fabric, res.Partial()
	}
	if err := linkinfo.Render(stdout, fab, o); err != nil {
		if errors.Is(err, linkinfo.ErrPortNotFound) {
			return cliapp.Exit(exitcode.Usage, err)
		}
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if partial {
		return cliapp.Exit(exitcode.Partial, errors.New("partial result: part of the fabric did not answer"))
	}
	return nil
}

// fabricFlagsWithoutD are the fabric options, --debug without its -d:
// iblinkinfo's -d is --down.
func fabricFlagsWithoutD() []cli.Flag {
	fs := attach.Flags(true)
	for i, f := range fs {
		if b, ok := f.(*cli.BoolFlag); ok && b.Name == "debug" {
			nb := *b
			nb.Aliases = nil
			fs[i] = &nb
		}
	}
	return fs
}
