//go:build linux

package ibsim

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests' lingerers are this test binary, built with -race, whose
// runtime sleeps a second before exiting (GORACE atexit_sleep_ms, 1000 by
// default) after the lingerer is done: a second of nothing for every test
// that waits for its lingerer to end.
func init() { testLingerEnv = []string{"GORACE=atexit_sleep_ms=0"} }

// TestHandOffKeepsNonblocking: handing the sockets to a lingerer leaves
// ours non-blocking, so a Read still in flight stays bounded by its
// deadline. (Passing them as *os.File made os.File.Fd put the shared
// socket in blocking mode; a Dial whose CONNECT Abort handed off then
// blocked in read(2) for as long as ibsim was stopped.)
func TestHandOffKeepsNonblocking(t *testing.T) {
	var conns [2]*os.File
	for i := range conns {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[1])
		if conns[i], err = fdConn(fds[0], "test"); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	p, err := spawnLingerer(conns[0], conns[1])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Kill(); p.Wait() }()
	rc, err := conns[0].SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	if flags&unix.O_NONBLOCK == 0 {
		t.Fatal("the client's socket is in blocking mode after the hand-off")
	}
	conns[0].SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var buf [8]byte
	if _, err := conns[0].Read(buf[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after the hand-off: %v, want its deadline", err)
	}
}
