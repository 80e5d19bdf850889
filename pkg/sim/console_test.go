//go:build !windows

package sim

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// startIbsimConsole runs ibsim with its console on a FIFO and returns the
// socket name and a function that types one console command and waits
// for ibsim's next prompt (it has then applied the command).
func startIbsimConsole(t *testing.T, netfile string) (string, func(string)) {
	t.Helper()
	requireTool(t, "ibsim")
	abs, err := filepath.Abs(netfile)
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs, ibsimtest.WithConsole())
	return s.SockName, func(c string) { s.Console(t, c) }
}

// TestConsoleWithIbsim applies the same console commands at run time to
// ibsim and to the simulator and compares every probe on every route after
// each one.
func TestConsoleWithIbsim(t *testing.T) {
	f := load(t, "loop")
	sock, console := startIbsimConsole(t, fabricPath("loop"))
	rc := dialIbsim(t, sock, "h1")
	ep := attach(t, f, "h1")
	tid := uint64(0x20000)
	for _, c := range []string{
		``,
		`Unlink "sw1"[2]`,
		`Error "sw2"[1] 100`,
		`ReLink "sw1"`,
		`Error "sw2"[1] 0`,
		`Error "sw3" 100 21`,
		`Link "sw1"[5] "sw2"[6]`,
		`Baselid "h2"[1] 9 1`,
		`Guid "h3" 0x777`,
		`Unlink "sw3"`,
		`Clear "sw2"[1]`,
		`ReLink "sw3"[2]`,
	} {
		if c != "" {
			console(c)
			if err := f.Exec(c); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
		}
		for _, p := range drPaths(f, ep.port) {
			for _, pr := range probes(9) {
				tid++
				compare(t, rc, ep, 0xffff, buildMAD(p, pr, tid), fmt.Sprintf("after %q: path %s attr %#x mod %#x", c, p, pr.attr, pr.mod))
			}
		}
	}
}
