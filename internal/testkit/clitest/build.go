package clitest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
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

// Build builds the command in package directory pkg ("." or "../ibhops",
// as go build takes it) as the Makefile does (GoBuild), once per test
// binary, and returns the binary's path: later calls, from any test, get
// the same binary. Without a go command it skips t (fails under CI=true).
//
// The binaries live in a directory named for this process; with no hook
// at a test binary's end (short of a TestMain), the first Build of a
// later test binary removes the directories of processes that are gone.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		t.Fatal(err)
	}
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[abs]
	if b == nil {
		b = &build{}
		builds.m[abs] = b
	}
	builds.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(abs) })
	if errors.Is(b.err, exec.ErrNotFound) {
		Skip(t, "no go command to build %s", filepath.Base(abs))
	}
	if b.err != nil {
		t.Fatalf("build %s: %v", filepath.Base(abs), b.err)
	}
	return b.path
}

type build struct {
	once sync.Once
	path string
	err  error
}

var builds struct {
	sync.Mutex
	m   map[string]*build
	dir string
}

const buildDirPrefix = "clitest-bin-"

// buildTimeout bounds one go build of a command (generous: a cold build
// cache on a busy machine).
const buildTimeout = 5 * time.Minute

func goBuild(pkgDir string) (string, error) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return "", err
		}
	}
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkgDir))
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	ibsimtest.LogLaunch("go", "build", pkgDir) // counted with the harness's launches
	cmd := GoBuild(gobin, bin, pkgDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	// A guard: a build that hangs fails the test with a message, instead
	// of the whole package at go test's timeout.
	guard := time.AfterFunc(buildTimeout, func() { cmd.Process.Kill() })
	err = cmd.Wait()
	if !guard.Stop() {
		return "", fmt.Errorf("go build did not finish within %v\n%s", buildTimeout, out.Bytes())
	}
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out.Bytes())
	}
	return bin, nil
}

// buildDir is this process's directory for Build's binaries, made on
// first use after removing those of processes that no longer run.
func buildDir() (string, error) {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		return builds.dir, nil
	}
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), buildDirPrefix+"*"))
	for _, d := range old {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), buildDirPrefix), "-", 2)[0])
		if err == nil && pid != os.Getpid() && !processExists(pid) {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", buildDirPrefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	builds.dir = dir
	return dir, nil
}
