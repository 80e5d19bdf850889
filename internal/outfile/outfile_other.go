//go:build !unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// errNoReader never happens where there are no FIFOs.
var errNoReader = errors.New("no reader")

func openNonblock(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }

func keepMode(f *os.File, old fs.FileInfo) error { return f.Chmod(old.Mode() & fs.ModePerm) }

func mayFollow(string, fs.FileInfo) error { return nil }

func openDescriptor(int) (*os.File, error) {
	return nil, errors.New("descriptor names are not supported on this system")
}

func ownedByCaller(fs.FileInfo) bool { return false }

func makerGone(int, time.Time) bool { return false }
