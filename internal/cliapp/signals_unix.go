//go:build unix

package cliapp

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// raiseAbort sends SIGABRT to this process, which the runtime's handler
// turns into its goroutine dump and exit, and waits for it.
func raiseAbort() {
	syscall.Kill(os.Getpid(), syscall.SIGABRT)
	select {}
}

// watchReader stops the run as soon as the writer's file is a pipe or
// FIFO whose reader has gone (poll reports POLLERR on its write end),
// without waiting for a write to fail. The returned function ends the
// watch.
func (p *pipeWriter) watchReader() (stop func()) {
	f := p.File()
	if f == nil {
		return func() {}
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return func() {}
	}
	wakeR, wakeW, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wakeR.Close()
		fds := []unix.PollFd{{Fd: int32(f.Fd())}, {Fd: int32(wakeR.Fd()), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil, fds[1].Revents != 0:
				return
			case fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0:
				p.broken.Store(f)
				p.s.brokenPipe()
				return
			}
		}
	}()
	return func() {
		wakeW.Close()
		<-done
	}
}

// canTellReaderGone: readerGone can tell.
const canTellReaderGone = true

// readerGone reports whether f is the write end of a pipe, FIFO or socket
// whose reader has gone (poll reports POLLERR or POLLHUP at once).
func readerGone(f *os.File) bool {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLOUT}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
	}
}
