//go:build unix && !linux

package ibsimtest

import "syscall"

// setPdeathsig does nothing: there is no parent-death signal here (and
// no ibsim).
func setPdeathsig(*syscall.SysProcAttr) {}
