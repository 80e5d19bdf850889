package clitest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestBuildOnce: the second Build of a package is the first one's binary,
// not a new build; a build directory left by a process that is gone is
// removed.
func TestBuildOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a command")
	}
	// A directory named for a PID no process has (above pid_max).
	stale := filepath.Join(os.TempDir(), buildDirPrefix+strconv.Itoa(1<<30)+"-x")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	builds.Lock()
	fresh := builds.dir == ""
	builds.Unlock()
	a := Build(t, "../../../cmd/ibavtrack")
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	b := Build(t, "../../../cmd/ibavtrack")
	fi2, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("built twice: %s (%v), %s (%v)", a, fi.ModTime(), b, fi2.ModTime())
	}
	if _, err := os.Stat(stale); fresh && err == nil {
		os.RemoveAll(stale)
		t.Errorf("%s, a gone process's build directory, was not removed", stale)
	}
}
