// Package clitest holds the assertions the commands' tests share: how a
// bad input must be reported, and that nothing was left behind.
package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// BadInput checks one run of tool on a bad input: exit status 2, one line
// on stderr starting "<tool>: " that contains input and msg, no stack
// trace, nothing on stdout.
func BadInput(t testing.TB, tool string, stdout, stderr []byte, code int, input, msg string) {
	t.Helper()
	if code != exitcode.Usage {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, stderr)
	}
	s := string(stderr)
	if strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, tool+": ") {
		t.Errorf("stderr is not one line starting %q:\n%s", tool+": ", s)
	}
	if !strings.Contains(s, input) || !strings.Contains(s, msg) {
		t.Errorf("stderr %q does not name %q and %q", s, input, msg)
	}
	if strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("stack trace on stderr:\n%s", s)
	}
	if len(stdout) != 0 {
		t.Errorf("stdout not empty:\n%s", stdout)
	}
}

// NoLeftovers fails t for every file in dir (hidden ones included) that
// is not one of keep.
func NoLeftovers(t testing.TB, dir string, keep ...string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	for _, p := range append(left, hidden...) {
		found := false
		for _, k := range keep {
			if filepath.Base(p) == k {
				found = true
			}
		}
		if !found {
			t.Errorf("left behind: %s", p)
		}
	}
}

// Skip skips t because something the test needs is missing here (a file,
// a command); with CI=true, where everything must be present, it fails
// instead.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// PeerTimeoutMS is the per-SMP timeout (-t) WithPeerTimeout gives our
// tools when a test points them at a running ibsim: generous and fixed,
// so a busy machine never looks like a lost SMP (a retry would also
// change the "Total MADs used" the compatibility tests compare).
const PeerTimeoutMS = "3000"

// WithPeerTimeout returns args with "-t PeerTimeoutMS" added at the end
// when they attach to ibsim (--ibsim, --ibsim-sockname) and set no
// timeout themselves.
func WithPeerTimeout(args []string) []string {
	peer := false
	for _, a := range args {
		switch {
		case a == "--":
			return args
		case a == "-t" || a == "--timeout" || strings.HasPrefix(a, "--timeout="):
			return args
		case a == "--ibsim" || a == "--ibsim-sockname" || strings.HasPrefix(a, "--ibsim-sockname="):
			peer = true
		}
	}
	if !peer {
		return args
	}
	return append(append([]string(nil), args...), "-t", PeerTimeoutMS)
}
