package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// ibnetdiscover --load-cache reads the fabric from its file and prints:
// it opens no umad port, so it needs no particular ibsim, and what it
// prints depends only on its arguments and on the bytes of the files
// they name. In ibnetdiscover.c (rdma-core v44.0) main calls
// ibnd_load_fabric(load_cache_file) instead of ibnd_discover_fabric, and
// ibnd_load_fabric(diff_cache_file) for --diff, and ibdiag_process_opts
// resolves no port for these options; libibnetdisc's loader names no
// file in what it prints (only its IBND_DEBUG lines, which need -d). So
// the comparisons run each distinct load once per test binary: the
// caches both tools write are asserted byte-identical, and each test
// loads both, so about a third of the loads were the same load again.

// loadRun is one distinct ibnetdiscover load, run by the first test that
// asks for it; the others wait on done.
type loadRun struct {
	done           chan struct{}
	stdout, stderr []byte
	exit           int
	ran            bool // the run ended: the above are its results
}

var loadRuns struct {
	sync.Mutex
	m map[string]*loadRun
}

// fileFlags are ibnetdiscover's options whose value is a file it reads.
var fileFlags = map[string]bool{"--load-cache": true, "--diff": true, "--node-name-map": true}

// loadKey is the key of a load: args with each file an option names
// replaced by its contents' hash. It fails the test on an argument
// that would make ibnetdiscover discover or write a file.
func loadKey(t *testing.T, args []string) string {
	t.Helper()
	var key []string
	loads := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case fileFlags[a] && i+1 < len(args):
			loads = loads || a == "--load-cache"
			i++
			b, err := os.ReadFile(args[i])
			if err != nil {
				t.Fatalf("ibnetdiscover %v: %v", args, err)
			}
			sum := sha256.Sum256(b)
			key = append(key, a, "sha256:"+hex.EncodeToString(sum[:]))
		case a == "--diffcheck" && i+1 < len(args):
			key = append(key, a, args[i+1])
			i++
		case strings.HasPrefix(a, "-") && len(a) == 2 && strings.Contains("gplmHSRfs", a[1:]):
			key = append(key, a)
		default:
			t.Fatalf("ibnetdiscoverLoad %v: %q is not an output option of a load", args, a)
		}
	}
	if !loads {
		t.Fatalf("ibnetdiscoverLoad %v: no --load-cache", args)
	}
	return strings.Join(key, "\x00")
}

// ibnetdiscoverLoad runs `ibnetdiscover args...` (args: --load-cache and
// output options, no output file) on the shared ibsim, once per
// distinct load in this test binary (see above), and returns its
// output and exit status.
func ibnetdiscoverLoad(t *testing.T, args ...string) (stdout, stderr []byte, exit int) {
	t.Helper()
	key := loadKey(t, args)
	loadRuns.Lock()
	if loadRuns.m == nil {
		loadRuns.m = map[string]*loadRun{}
	}
	r := loadRuns.m[key]
	first := r == nil
	if first {
		r = &loadRun{done: make(chan struct{})}
		loadRuns.m[key] = r
	}
	loadRuns.Unlock()
	if first {
		func() {
			defer close(r.done)
			sim := ibsimtest.Shared(t, ibsimtest.ExampleNet+"/net")
			r.stdout, r.stderr, r.exit = sim.RunTool(t, "", "ibnetdiscover", args...)
			r.ran = true // (RunTool fails the test when it cannot run it)
		}()
	}
	<-r.done
	if !r.ran {
		t.Fatalf("ibnetdiscover %v could not be run (by the test that ran it first)", args)
	}
	return r.stdout, r.stderr, r.exit
}
