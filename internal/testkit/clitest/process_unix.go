//go:build unix

package clitest

import "syscall"

// processExists reports whether a process with this PID runs.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
