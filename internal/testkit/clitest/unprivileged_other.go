//go:build !unix

package clitest

import "syscall"

// nobodyAttr: no credentials to drop off Unix (Unprivileged returns
// before it is needed: Geteuid is -1 there).
func nobodyAttr() *syscall.SysProcAttr { return nil }
