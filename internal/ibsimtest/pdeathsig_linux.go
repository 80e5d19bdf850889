package ibsimtest

import "syscall"

// setPdeathsig makes the kernel kill the child when the thread that
// started it exits.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
