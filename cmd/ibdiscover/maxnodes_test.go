//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
)

// craftedCache writes a cache whose header counts nodes nodes and no
// ports, followed by size bytes in all (a sparse file: nothing on disk).
func craftedCache(t *testing.T, nodes uint32, size int64) string {
	t.Helper()
	hdr := make([]byte, ibndcache.HeaderLen)
	le := binary.LittleEndian
	le.PutUint32(hdr, ibndcache.Magic)
	le.PutUint32(hdr[4:], ibndcache.Version)
	le.PutUint32(hdr[8:], nodes)
	p := filepath.Join(t.TempDir(), "crafted.cache")
	if err := os.WriteFile(p, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadCacheMaxNodes: --load-cache and --diff are bounded by
// --max-nodes as discovery is: a crafted cache whose header counts 1 M
// nodes is refused from its header, with one line naming the option and
// the limit, before its 200 MB are read.
func TestLoadCacheMaxNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTool(t)
	big := craftedCache(t, 1_000_000, 200<<20)
	for _, args := range [][]string{
		{"--load-cache", big, "--max-nodes", "1000"},
		{"--diff", big, "--max-nodes", "1000", "--sim", fabrics + "loop.net"},
	} {
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		clitest.BadInput(t, "ibdiscover", stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode(), args[0]+": "+big,
			"too many nodes: the header counts 1000000 nodes, more than the limit of 1000")
		if !strings.Contains(stderr.String(), "--max-nodes") {
			t.Errorf("%s: the message does not name --max-nodes: %s", args[0], stderr.String())
		}
		// (that the refusal reads the header only is
		// ibndcache's TestLoadMaxReadsHeaderOnly: the child's peak RSS
		// is no measure, Linux carries the test process's over the
		// vfork and exec)
	}
	// the default limit holds too
	over := craftedCache(t, 1<<20+1, 1<<20)
	stdout, stderr, code := runOurs(t, "--load-cache", over)
	clitest.BadInput(t, "ibdiscover", stdout, stderr, code, over, "more than the limit of "+strconv.Itoa(1<<20))
	if code != exitcode.Usage {
		t.Errorf("exit %d", code)
	}
}
