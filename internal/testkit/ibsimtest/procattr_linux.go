package ibsimtest

import "syscall"

// ProcAttr is the process attributes of every ibsim, OpenSM and C tool a
// test starts: its own process group (killed as a group), and SIGKILL
// when the test process dies, so a test binary killed mid-run (go test's
// timeout, SIGKILL from a CI runner) leaves no simulator behind.
//
// The kernel sends the parent-death signal when the thread that started
// the child ends; the Go runtime keeps its threads, except one a
// goroutine locked and did not unlock: do not start processes from such
// a goroutine.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
