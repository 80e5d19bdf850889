//go:build unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// errNoReader: a FIFO has no reader yet (ENXIO from a non-blocking open).
var errNoReader = syscall.ENXIO

// openNonblock opens a target that is not a regular file for writing
// without waiting for a FIFO's reader, then makes it blocking again.
func openNonblock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, errNoReader
		}
		return nil, err
	}
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// keepMode gives the temporary file f the mode of the file it replaces
// (set-id and sticky bits included) and, when permitted, its owner and
// group (root replacing a user's file).
func keepMode(f *os.File, old fs.FileInfo) error {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
			f.Chown(int(st.Uid), int(st.Gid)) // best effort: not permitted for others
		}
	}
	return f.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
}
