//go:build unix && !linux

package ibsimtest

import "syscall"

// ProcAttr is the process attributes of every process a test starts: its
// own process group (killed as a group). Only Linux has a parent-death
// signal.
func ProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
