//go:build unix

package clitest

import "syscall"

// nobodyAttr starts a child as NobodyUID, group NobodyUID, without
// supplementary groups.
func nobodyAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyUID, Gid: NobodyUID}}
}
