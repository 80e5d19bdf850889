package cliapp

import (
	"os"
	"strconv"
	"sync"
)

// TestHookEnv names the environment variable of a test hook, not meant
// for users: when it holds the number of an inherited file descriptor,
// TestEvent writes one line per event to it, so a test driving a built
// binary can wait for the event itself (say, discovery under way before
// it sends SIGINT) instead of sleeping.
const TestHookEnv = "IBDIAG_TEST_HOOK_FD"

// TestHoldEnv names a second test-hook variable: set to "answer" (with
// TestHookEnv), the run writes the event "hold" when the transport's
// first exchange is answered (an ibsim slot taken, the run under way)
// and holds there, every further answer waiting, until the run is
// cancelled (a stopping signal). A test can then act on a run that is
// surely under way, however fast the machine.
const TestHoldEnv = "IBDIAG_TEST_HOLD"

var testHook struct {
	once sync.Once
	mu   sync.Mutex
	f    *os.File
	seen map[string]bool
}

// TestHooked reports whether the test hook is enabled.
func TestHooked() bool {
	testHook.once.Do(func() {
		fd, err := strconv.Atoi(os.Getenv(TestHookEnv))
		if err != nil || fd < 3 {
			return
		}
		testHook.f = os.NewFile(uintptr(fd), "test hook")
		testHook.seen = make(map[string]bool)
	})
	return testHook.f != nil
}

// TestEvent writes "name\n" to the test hook's descriptor the first time
// it is called with name; it does nothing unless the hook is enabled.
// Events: "node" (the first NodeInfo answer was taken; main installed
// the SIGINT/SIGTERM handler before), "connect" (a CONNECT request is in
// ibsim's hands), "signal" (the first stopping signal was taken: a
// second one now counts as the second), "hold" (see TestHoldEnv), and
// "served N" (ibcheck serve has served its Nth collection).
func TestEvent(name string) {
	if !TestHooked() {
		return
	}
	testHook.mu.Lock()
	defer testHook.mu.Unlock()
	if testHook.seen[name] {
		return
	}
	testHook.seen[name] = true
	testHook.f.WriteString(name + "\n")
}
