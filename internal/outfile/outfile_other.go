//go:build !unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
)

// errNoReader never happens where there are no FIFOs.
var errNoReader = errors.New("no reader")

func openNonblock(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }

func keepMode(f *os.File, old fs.FileInfo) error { return f.Chmod(old.Mode() & fs.ModePerm) }
