//go:build unix

package ibsimtest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed testdata/rmpp2sim.c
var rmppSource []byte

var rmppShim struct {
	once sync.Once
	path string
	err  error
}

// RMPPShim returns the path of rmpp2sim.so, built from
// testdata/rmpp2sim.c with cc on first use for the test binary's life.
// Preloaded before libumad2sim.so (WithPreload) in OpenSM and in the
// tool that asks, it carries SA answers longer than one MAD (a whole
// PathRecord table), which libumad2sim alone cuts to the first MAD. With
// no cc it returns "" (the caller asks record by record), or fails the
// test under CI=true.
func RMPPShim(t testing.TB) string {
	t.Helper()
	rmppShim.once.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			rmppShim.err = fmt.Errorf("no cc on PATH (%w): install gcc", err)
			return
		}
		dir, err := sharedDir()
		if err != nil {
			rmppShim.err = err
			return
		}
		src, lib := filepath.Join(dir, "rmpp2sim.c"), filepath.Join(dir, "rmpp2sim.so")
		if err := os.WriteFile(src, rmppSource, 0o644); err != nil {
			rmppShim.err = err
			return
		}
		out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", lib, src, "-ldl").CombinedOutput()
		if err != nil {
			rmppShim.err = fmt.Errorf("cc %s: %v\n%s", src, err, out)
			return
		}
		rmppShim.path = lib
	})
	if rmppShim.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("rmpp2sim: %v", rmppShim.err)
		}
		t.Logf("rmpp2sim: %v; SA tables are asked record by record", rmppShim.err)
	}
	return rmppShim.path
}
