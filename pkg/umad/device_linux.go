//go:build linux

package umad

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
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

// writeSlice is how long a write into a full descriptor waits before it
// looks at its ctx and Close again.
const writeSlice = 50 * time.Millisecond

// testHookWriteBlocked, if set, runs when a write found the descriptor
// full.
var testHookWriteBlocked func()

// writeBounded writes the record b to w. When w is a non-blocking
// descriptor that is full, it waits for room in slices of writeSlice and
// gives up at deadline, when ctx is done or when quit is closed, instead
// of waiting in the runtime poller for as long as the kernel takes.
func writeBounded(ctx context.Context, w io.Writer, b []byte, deadline time.Time, quit <-chan struct{}) error {
	sc, ok := w.(syscall.Conn)
	if !ok {
		_, err := w.Write(b)
		return err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		_, err := w.Write(b)
		return err
	}
	var werr error
	write := func(fd uintptr) bool {
		for {
			_, werr = unix.Write(int(fd), b)
			if werr != unix.EINTR {
				return true
			}
		}
	}
	for first := true; ; first = false {
		if err := rc.Write(write); err != nil {
			return err
		}
		if werr != unix.EAGAIN {
			return werr
		}
		if h := testHookWriteBlocked; first && h != nil {
			h()
		}
		select {
		case <-ctx.Done():
			return timeoutErr(ctx)
		case <-quit:
			return transport.ErrClosed
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("device takes no requests: %w", transport.ErrTimeout)
		}
		ms := int(min(left, writeSlice)/time.Millisecond) + 1
		if err := rc.Control(func(fd uintptr) {
			fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			unix.Poll(fds[:], ms)
		}); err != nil {
			return err
		}
	}
}
