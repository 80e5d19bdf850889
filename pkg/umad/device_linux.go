//go:build linux

package umad

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Open selects a port with Select (ca "" and port <= 0 mean "choose") and
// opens its umad device. The Device's Ref field tells which port it uses.
func Open(fs *FS, ca string, port int) (*Device, error) {
	ref, err := Select(fs, ca, port)
	if err != nil {
		return nil, err
	}
	d, err := OpenPath(ref.Device)
	if err != nil {
		return nil, err
	}
	d.Ref = ref
	return d, nil
}

// OpenPath opens a umad device by path, e.g. "/dev/infiniband/umad0",
// and registers the SMP agents.
func OpenPath(path string) (*Device, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openErr(path, err)
	}
	// A non-blocking descriptor goes to the runtime poller, so Close
	// interrupts the reader's pending read.
	f := os.NewFile(uintptr(fd), path)
	return newDevice(f, fileIoctl(f), path)
}

// openErr turns open(2) errors into the package's advice-carrying errors.
func openErr(path string, err error) error {
	switch {
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		err = fmt.Errorf("%w (%w)", ErrPermission, err)
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO):
		err = fmt.Errorf("device node missing (%w): %w", err, ErrNoUmad)
	}
	return &transport.OpError{Op: "open", Source: path, Err: err}
}

// fileIoctl returns an ioctlFunc issuing ioctl(2) on f's descriptor.
func fileIoctl(f *os.File) ioctlFunc {
	return func(req uint, arg []byte) error {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		var errno unix.Errno
		cerr := rc.Control(func(fd uintptr) {
			var p unsafe.Pointer
			if len(arg) > 0 {
				p = unsafe.Pointer(&arg[0])
			}
			_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(p))
		})
		if cerr != nil {
			return cerr
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
