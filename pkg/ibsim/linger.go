//go:build linux

package ibsim

import (
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
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
// session so that terminal signals do not reach it. It waits for ibsim's
// answer, releases the slot with DISCONNECT and exits; it gives up after
// lingerLimit, and earlier when ibsim's socket disappears (ibsim ended).
// When it cannot be started, a goroutine does the same for as long as
// the process lives.

// lingerEnv selects the lingerer in a re-executed binary; its value is
// the limit (a time.Duration string).
const lingerEnv = "IBDIAG_IBSIM_LINGER"

// lingerLimit bounds how long a lingerer waits for ibsim's answer.
const lingerLimit = 30 * time.Minute

// lingerProbe is how often a lingerer checks that ibsim is still there.
const lingerProbe = 2 * time.Second

// testHookLinger, if set, gets the lingerer process (tests wait for it).
var testHookLinger func(p *os.Process)

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
	go linger(c.ctl, c.data, lingerLimit)
}

// spawnLingerer starts the lingerer process with copies of the sockets.
//
// It hands over raw duplicates through syscall.ForkExec, not *os.File
// values through os.StartProcess: os.File.Fd puts a descriptor in
// blocking mode, and since a duplicate shares the socket's file status
// flags, a Read of ours still in flight on ctl would then block in the
// kernel past every deadline (seen: Dial stuck for minutes when Abort
// handed off a CONNECT to a stopped ibsim).
func spawnLingerer(ctl, data net.Conn) (*os.Process, error) {
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
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"ibsim-linger"}, &syscall.ProcAttr{
		Env:   []string{lingerEnv + "=" + lingerLimit.String()},
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
func dupConn(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, errors.New("ibsim: sockets without descriptors")
	}
	rc, err := sc.SyscallConn()
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
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGPIPE, unix.SIGQUIT)
	limit, err := time.ParseDuration(arg)
	if err != nil || limit <= 0 {
		limit = lingerLimit
	}
	ctl, err := fdConn(3, "ibsim-ctl")
	if err != nil {
		return 1
	}
	data := os.NewFile(4, "ibsim-data")
	linger(ctl, data, limit)
	return 0
}

// linger waits up to limit for ibsim's answer to the CONNECT sent on
// ctl, then releases the slot it got. data (our :in<id> socket) stays
// open until then.
func linger(ctl net.Conn, data io.Closer, limit time.Duration) {
	defer data.Close()
	defer ctl.Close()
	end := time.Now().Add(limit)
	var buf [CtlSize + 16]byte
	for time.Now().Before(end) {
		ctl.SetReadDeadline(minTime(end, time.Now().Add(lingerProbe)))
		n, err := ctl.Read(buf[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Still nothing: is ibsim still there? It ignores a datagram
			// of one byte without a word.
			ctl.SetWriteDeadline(time.Now().Add(lingerProbe))
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

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
