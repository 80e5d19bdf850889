//go:build linux

package ibsim

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A CONNECT that ibsim has queued but not answered cannot be taken back.
// When ibsim gets to it, it connects its slot socket to our :in<id>
// socket and exits (ibpanic "can't connect to in socket") if that socket
// is gone. So whoever gives up on such a CONNECT hands both sockets to a
// lingerer: a copy of the running executable started with lingerEnv set
// and the sockets as descriptors 3 (control) and 4 (data), in its own
// session so that terminal signals do not reach it, in "/" so that it
// does not keep the caller's working directory (and its mount) busy. It waits for ibsim's answer, releases the slot
// with DISCONNECT and exits. It never gives up while ibsim lives (a
// stopped or stalled ibsim is waited for, however long): it ends only
// when ibsim's socket disappears (ibsim ended) or ibsim answers. It
// ignores the signals a terminal or a careless kill sends (SIGINT,
// SIGHUP, SIGQUIT, SIGTERM, SIGPIPE); a SIGKILL of it makes ibsim exit
// when it answers the CONNECT. It keeps little memory: one P
// (GOMAXPROCS=1), and the executable's read-only pages paged out once
// it runs (read back only as far as its loop needs them).
// When it cannot be started, a goroutine does the same for as long as
// the process lives.

// lingerEnv selects the lingerer in a re-executed binary; its value is
// how often it checks that ibsim is still there (a time.Duration string;
// tests shorten it).
const lingerEnv = "IBDIAG_IBSIM_LINGER"

// lingerProbe is how often a lingerer checks that ibsim is still there.
const lingerProbe = 2 * time.Second

// testLingerProbe, when set (tests), is the probe period handed to the
// lingerer process.
var testLingerProbe time.Duration

// testHookLinger, if set, gets the lingerer process (tests wait for it).
var testHookLinger func(p *os.Process)

// testLingerEnv, when set (tests), is added to the lingerer's environment.
var testLingerEnv []string

func init() {
	if v, ok := os.LookupEnv(lingerEnv); ok {
		os.Exit(lingerMain(v))
	}
}

// handOff gives the sockets of a CONNECT in flight to a lingerer. The
// client's own copies are closed when a lingerer process took them.
func (c *Client) handOff() {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.handedOff {
		return
	}
	c.handedOff = true
	p, err := spawnLingerer(c.ctl, c.data)
	if err == nil {
		c.ctl.Close()
		c.data.Close()
		if h := testHookLinger; h != nil {
			h(p)
		} else {
			go p.Wait() // reap it if we live longer
		}
		return
	}
	go linger(c.ctl, c.data, lingerProbe)
}

// spawnLingerer starts the lingerer process with copies of the sockets.
//
// It hands over raw duplicates through syscall.ForkExec, not *os.File
// values through os.StartProcess: os.File.Fd puts a descriptor in
// blocking mode, and since a duplicate shares the socket's file status
// flags, a Read of ours still in flight on ctl would then block in the
// kernel past every deadline (seen: Dial stuck for minutes when Abort
// handed off a CONNECT to a stopped ibsim).
func spawnLingerer(ctl, data *os.File) (*os.Process, error) {
	cfd, err := dupConn(ctl)
	if err != nil {
		return nil, err
	}
	defer unix.Close(cfd)
	dfd, err := dupConn(data)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(null)
	probe := lingerProbe
	if testLingerProbe > 0 {
		probe = testLingerProbe
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"ibsim-linger"}, &syscall.ProcAttr{
		Dir: "/",
		// One P: the lingerer only waits, and every P costs memory.
		Env:   append([]string{lingerEnv + "=" + probe.String(), "GOMAXPROCS=1", "GOGC=20"}, testLingerEnv...),
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), uintptr(cfd), uintptr(dfd)},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return nil, err
	}
	return os.FindProcess(pid)
}

// dupConn returns a close-on-exec duplicate of c's descriptor, leaving
// its flags (non-blocking) as they are.
func dupConn(c *os.File) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// lingerMain is the lingerer process.
func lingerMain(arg string) int {
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGPIPE, unix.SIGQUIT, unix.SIGTERM)
	probe, err := time.ParseDuration(arg)
	if err != nil || probe <= 0 {
		probe = lingerProbe
	}
	ctl, err := fdConn(3, "ibsim-ctl")
	if err != nil {
		return 1
	}
	data := os.NewFile(4, "ibsim-data")
	debug.FreeOSMemory()
	dropReadOnlyPages()
	linger(ctl, data, probe)
	return 0
}

// dropReadOnlyPages asks the kernel to page out this process's read-only
// file-backed mappings (the executable's code and constants, which
// package initialisation touched far beyond what the lingerer runs).
// MADV_PAGEOUT loses nothing: clean pages are read back in when used
// again, and pages other processes map too are left alone. Writable
// mappings are not touched.
func dropReadOnlyPages() {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// address perms offset dev inode [path]
		if len(f) < 6 || f[1][1] == 'w' || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT)
	}
}

// linger waits for ibsim's answer to the CONNECT sent on ctl, for as long
// as ibsim lives (checked every probe), then releases the slot it got.
// data (our :in<id> socket) stays open until then.
func linger(ctl *os.File, data io.Closer, probe time.Duration) {
	defer data.Close()
	defer ctl.Close()
	var buf [CtlSize + 16]byte
	for {
		ctl.SetReadDeadline(time.Now().Add(probe))
		n, err := ctl.Read(buf[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Still nothing: is ibsim still there? It ignores a datagram
			// of one byte without a word. A write that cannot be queued
			// (a stopped ibsim's queue is full) says it is.
			ctl.SetWriteDeadline(time.Now().Add(probe))
			if _, err := ctl.Write(buf[:1]); errors.Is(err, unix.ECONNREFUSED) {
				return
			}
			continue
		}
		if err != nil {
			return // ibsim ended (ICMP error in inet mode) or worse
		}
		var reply Ctl
		if n != CtlSize || reply.UnmarshalBinary(buf[:n]) != nil {
			continue
		}
		switch reply.Type {
		case CtlError:
			return // refused: no slot to release
		case CtlConnect:
			slot := le.Uint32(reply.Data[0:])
			if slot >= MaxClients {
				return
			}
			disc := NewCtl(CtlDisconnect, slot, nil)
			disc.MarshalTo(buf[:])
			ctl.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := ctl.Write(buf[:CtlSize]); err != nil {
				return
			}
			for {
				n, err := ctl.Read(buf[:])
				if err != nil {
					return
				}
				if n == CtlSize && reply.UnmarshalBinary(buf[:n]) == nil && reply.Type == CtlDisconnect {
					return
				}
			}
		}
	}
}
