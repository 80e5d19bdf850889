//go:build unix

package infile

import (
	"os"
	"syscall"
)

// openWriter opens the FIFO at path for writing without waiting for a
// reader (it fails with ENXIO when there is none).
func openWriter(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
}
