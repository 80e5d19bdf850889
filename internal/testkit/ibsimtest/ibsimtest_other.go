//go:build !unix

package ibsimtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ibsim, libumad2sim and the C tools run on Linux only: elsewhere the
// tests that need them build (so go vet checks them on every target) and
// skip.

const (
	// Shim is libumad2sim.so (Linux only).
	Shim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
	// ExampleNet is the directory of ibsim's example net files.
	ExampleNet = "/usr/share/doc/ibsim-utils/net-examples"
)

const linuxOnly = "ibsim integration test: ibsim and infiniband-diags run on Linux only"

// Require skips t: ibsim runs on Linux only.
func Require(t testing.TB) {
	t.Helper()
	t.Skip(linuxOnly)
}

// Option changes how Start runs ibsim.
type Option func(*options)

type options struct{}

// WithConsole runs ibsim with its console (Linux only).
func WithConsole() Option { return func(*options) {} }

// Nodes is ibsim's -N.
func Nodes(int) Option { return func(*options) {} }

// Switches is ibsim's -S.
func Switches(int) Option { return func(*options) {} }

// Ports is ibsim's -P.
func Ports(int) Option { return func(*options) {} }

// LinearCap is ibsim's -L.
func LinearCap(int) Option { return func(*options) {} }

// StartTimeout bounds ibsim's start.
func StartTimeout(time.Duration) Option { return func(*options) {} }

// Sim is a running ibsim owned by one test (never, off Linux).
type Sim struct {
	SockName, NetFile, Dir, LogPath string
}

// Start skips t: ibsim runs on Linux only.
func Start(t testing.TB, netfile string, opts ...Option) *Sim {
	t.Helper()
	t.Skip(linuxOnly)
	return nil
}

// PID is ibsim's process id.
func (s *Sim) PID() int { return 0 }

// Alive reports whether ibsim still runs.
func (s *Sim) Alive() bool { return false }

// Log is ibsim's output so far.
func (s *Sim) Log() string { return "" }

// Console runs an ibsim console command.
func (s *Sim) Console(t testing.TB, command string) string {
	t.Helper()
	t.Skip(linuxOnly)
	return ""
}

// Env is the environment that attaches a tool to this ibsim.
func (s *Sim) Env() []string { return nil }

// RunTool runs a C tool attached at host.
func (s *Sim) RunTool(t testing.TB, host, name string, args ...string) (stdout, stderr []byte, exit int) {
	t.Helper()
	t.Skip(linuxOnly)
	return nil, nil, 0
}

// RunOpenSM runs one OpenSM sweep attached at host.
func (s *Sim) RunOpenSM(t testing.TB, host, dumpDir string, extraArgs ...string) []byte {
	t.Helper()
	t.Skip(linuxOnly)
	return nil
}

// WriteNetFile writes a net file into a fresh temp dir and returns its path.
func WriteNetFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "net")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// DiagTimeoutMS is the MAD timeout RunTool would give the C tools.
const DiagTimeoutMS = 3000

// WithDiagTimeout returns args unchanged: no C tool runs here.
func WithDiagTimeout(args []string) []string { return args }

// Args would add ibsim command-line arguments.
func Args(...string) Option { return func(*options) {} }

// Shared skips t: ibsim runs on Linux only.
func Shared(t testing.TB, netfile string, opts ...Option) *Sim {
	t.Helper()
	t.Skip(linuxOnly)
	return nil
}

// SharedRouted skips t: ibsim runs on Linux only.
func SharedRouted(t testing.TB, netfile, osmHost string, smArgs []string, opts ...Option) (*Sim, string) {
	t.Helper()
	t.Skip(linuxOnly)
	return nil, ""
}

// SharedSA skips t: ibsim runs on Linux only.
func SharedSA(t testing.TB, netfile, osmHost string, smArgs []string, opts ...Option) (*Sim, string) {
	t.Helper()
	t.Skip(linuxOnly)
	return nil, ""
}

// WithPreload would preload a library before the shim.
func WithPreload(string) Option { return func(*options) {} }

// RMPPShim returns "": ibsim runs on Linux only.
func RMPPShim(testing.TB) string { return "" }

// StopShared does nothing: no ibsim runs here.
func StopShared() {}

// ScratchDir returns a new directory removed when t ends.
func ScratchDir(t testing.TB) string { return t.TempDir() }

// LaunchLogEnv names the launch log's variable (nothing is launched here).
const LaunchLogEnv = "IBSIMTEST_LAUNCH_LOG"

// LogLaunch does nothing: no tool runs here.
func LogLaunch(string, ...string) {}
