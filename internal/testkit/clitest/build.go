package clitest

import (
	"os"
	"os/exec"
)

// BuildFlags are the go build flags every shipped binary is built with
// (Makefile's BUILDFLAGS): urfave/cli without its markdown and man page
// generators (blackfriday, go-md2man), which the tools never call but
// text/template's reflection would otherwise keep, about 0.7 MB of every
// process's peak RSS. Without the tag the tools still build and behave
// the same.
var BuildFlags = []string{"-tags=urfave_cli_no_docs"}

// GoBuild returns the command that builds package pkg into bin as the
// Makefile does: BuildFlags, and without cgo (CGO_ENABLED=0; the cgo
// resolver would link libc in).
func GoBuild(gobin, bin, pkg string) *exec.Cmd {
	args := append([]string{"build"}, BuildFlags...)
	cmd := exec.Command(gobin, append(args, "-o", bin, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
