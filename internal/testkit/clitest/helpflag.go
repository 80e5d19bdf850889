package clitest

import (
	"flag"

	"github.com/urfave/cli/v2"
)

// The commands' tests run the tools in process, several at once where
// tests run in parallel. urfave/cli applies its one global help flag
// (cli.HelpFlag, a *cli.BoolFlag) to every app it runs and writes the
// flag's fields each time: a data race between two runs (a tool runs one
// app per process, so only tests meet it). In the test binaries, which
// import this package, the help flag is applied from a copy on each run;
// everything else (--help, completions, man pages) sees the same flag.
func init() {
	if bf, ok := cli.HelpFlag.(*cli.BoolFlag); ok {
		cli.HelpFlag = copyOnApply{bf}
	}
}

// copyOnApply is a BoolFlag whose Apply works on a copy.
type copyOnApply struct{ *cli.BoolFlag }

func (f copyOnApply) Apply(set *flag.FlagSet) error {
	c := *f.BoolFlag
	return c.Apply(set)
}
