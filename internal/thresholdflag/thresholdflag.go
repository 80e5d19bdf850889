// Package thresholdflag reads the error-counter threshold file that
// --threshold-file names (ibqueryerrors' format), for the commands that
// check port counters.
package thresholdflag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
)

// Load reads the file --threshold-file names or, without the flag,
// defaultFile when it exists (ibqueryerrors' default). A FIFO without a
// writer ends at Ctrl-C; a file that cannot be read or parsed is a usage
// error naming it; warnings go to stderr after "tool: warning: ".
func Load(c *cli.Context, tool, defaultFile string, stderr io.Writer) (portcounters.Thresholds, error) {
	name, explicit := c.String("threshold-file"), c.IsSet("threshold-file")
	if !explicit {
		name = defaultFile
	}
	data, err := infile.Load(c.Context, "--threshold-file", name, func() ([]byte, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, portcounters.MaxThresholdFile+1))
	})
	if errors.Is(err, context.Canceled) {
		return portcounters.Thresholds{}, cliapp.InputError(err)
	}
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return portcounters.Thresholds{}, nil
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return portcounters.Thresholds{}, cliapp.Usage("--threshold-file "+name, err.Error())
	}
	th, warnings, err := portcounters.ParseThresholds(name, data)
	if err != nil {
		return th, cliapp.Exit(exitcode.Usage, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", tool, w)
	}
	return th, nil
}
