//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestOutputDescriptor: "ibhops --output /dev/stdout >> app.log" appends
// to app.log through the descriptor the shell opened (its earlier content
// stays, app.log is not replaced), through the built tool.
func TestOutputDescriptor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			clitest.Skip(t, "no go command to build ibhops")
		}
	}
	bin := filepath.Join(t.TempDir(), "ibhops")
	if out, err := clitest.GoBuild(gobin, bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build ibhops: %v\n%s", err, out)
	}
	dump, stderr, code := runOurs(t, "--sim", fabrics+"loop.net")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	p := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(p, []byte("earlier line\n"), 0o644)
	before, _ := os.Stat(p)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--sim", fabrics+"loop.net", "--output", "/dev/stdout")
	cmd.Stdout = f
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	f.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, append([]byte("earlier line\n"), dump...)) {
		t.Errorf("app.log holds %q..., want the earlier line then the %d-byte dump", got[:min(len(got), 40)], len(dump))
	}
	if after, _ := os.Stat(p); !os.SameFile(before, after) {
		t.Errorf("app.log was replaced")
	}
}

// TestOutputRefused: --output "" and (as root) a link planted in a sticky
// world-writable directory by another user are refused with one line.
func TestOutputRefused(t *testing.T) {
	stdout, stderr, code := runOurs(t, "--sim", fabrics+"loop.net", "--output", "")
	clitest.BadInput(t, "ibhops", stdout, stderr, code, `--output ""`, "empty file name")
	if os.Geteuid() != 0 {
		return // a link owned by another user needs root to make
	}
	sticky := filepath.Join(t.TempDir(), "tmp")
	os.Mkdir(sticky, 0o755)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	secret := clitest.WriteFile(t, t.TempDir(), "secret", "root's secret")
	link := filepath.Join(sticky, "hops.txt")
	os.Symlink(secret, link)
	if err := os.Lchown(link, clitest.NobodyUID, clitest.NobodyUID); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runOurs(t, "--sim", fabrics+"loop.net", "--output", link)
	clitest.BadInput(t, "ibhops", stdout, stderr, code, link, "symbolic link not followed")
	if b, _ := os.ReadFile(secret); string(b) != "root's secret" {
		t.Errorf("%s was replaced", secret)
	}
}
