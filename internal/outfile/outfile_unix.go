//go:build unix

package outfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
// group (root replacing a user's file). The owner first: a chown clears
// the set-id bits.
func keepMode(f *os.File, old fs.FileInfo) error {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
			f.Chown(int(st.Uid), int(st.Gid)) // best effort: not permitted for others
		}
	}
	return f.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
}

// mayFollow applies the kernel's fs.protected_symlinks rule to the
// symbolic link at link (lst is its Lstat): in a sticky world-writable
// directory a link is followed only when its owner is the caller (the
// effective user) or the directory's owner.
func mayFollow(link string, lst fs.FileInfo) error {
	ls, ok := lst.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	dir := filepath.Dir(link)
	dst, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write: %w", unwrapPath(err))
	}
	if dst.Mode()&fs.ModeSticky == 0 || dst.Mode().Perm()&0o002 == 0 {
		return nil
	}
	ds, ok := dst.Sys().(*syscall.Stat_t)
	if !ok || int(ls.Uid) == os.Geteuid() || ls.Uid == ds.Uid {
		return nil
	}
	return fmt.Errorf("%w: it is owned by uid %d, neither you nor the owner (uid %d) of %s, a sticky world-writable directory (the kernel's fs.protected_symlinks rule)",
		ErrUnsafeLink, ls.Uid, ds.Uid, dir)
}

// openDescriptor returns a duplicate of the inherited descriptor fd for
// writing in place: writes go where fd's own writes go (at its offset,
// appending when it was opened O_APPEND), and closing it leaves fd open.
func openDescriptor(fd int) (*os.File, error) {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return nil, fmt.Errorf("%w: descriptor %d", ErrClosedDescriptor, fd)
		}
		return nil, fmt.Errorf("descriptor %d: %w", fd, err)
	}
	if fl&unix.O_ACCMODE == unix.O_RDONLY {
		return nil, fmt.Errorf("descriptor %d is open only for reading", fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, fmt.Errorf("descriptor %d is a directory", fd)
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("descriptor %d: %w", fd, err)
	}
	return os.NewFile(uintptr(nfd), "/dev/fd/"+strconv.Itoa(fd)), nil
}

// ownedByCaller reports whether st's file belongs to the effective user.
func ownedByCaller(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Geteuid()
}

// makerGone reports whether the process pid that wrote a file last
// modified at mtime has ended: no process has that PID, or the one that
// has it started after mtime (Linux's /proc tells; elsewhere a live PID
// counts as the maker).
func makerGone(pid int, mtime time.Time) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	start, ok := processStart(pid)
	return ok && start.After(mtime.Add(time.Second))
}

// processStart is when process pid started, from /proc/PID/stat's
// starttime (clock ticks after boot, USER_HZ = 100) and /proc/stat's
// btime.
func processStart(pid int) (time.Time, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state); starttime is field 22
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	s, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range bytes.Split(s, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("btime ")); ok {
			bt, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(bt, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), true
		}
	}
	return time.Time{}, false
}
