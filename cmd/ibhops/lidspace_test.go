package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// overflowSpec has 49,531 ports needing a LID (195 leaves of 253 hosts,
// one spine), 380 more than the unicast LIDs: the embedded SM gives the
// 196 switches LIDs 1..196, hosts H0..H48954 LIDs 197..49151, and leaves
// H48955..H49334 at LID 0.
const overflowSpec = "fattree:levels=2,radix=254,hosts=253,leaves=195"

const overflowWarning = "ibhops: warning: embedded SM: 380 of 49531 ports left without a LID (unicast LIDs are 1..49151); they stay at LID 0, not Active\n"

// TestLIDSpaceWarning: a fabric with more ports than LIDs is a warning
// line on stderr, and every mode still works on the ports that have one.
func TestLIDSpaceWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("49,531-node fabric")
	}
	t.Parallel() // CPU-bound: runs beside the live tests, which mostly wait
	// Each mode is a run of its own (the fabric generated and routed
	// each time, so each run's warning is its own). The two queries,
	// one after the other, share one discovery of the 49,531 nodes (the
	// runs' costliest part), which the first makes; the dump, with its
	// own discovery settings (-o 16), runs beside them.
	t.Run("dump", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(t.TempDir(), "m.dump")
		out, stderr, code := runOurs(t, "--sim", overflowSpec, "-o", "16", "--output", p)
		if code != 0 || len(out) != 0 || string(stderr) != overflowWarning {
			t.Fatalf("dump: exit %d, stdout %q, stderr %q\nwant stderr %q", code, out, stderr, overflowWarning)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// One block per switch, a row for every switch LID 1..196.
		if n := bytes.Count(b, []byte("Switch: guid ")); n != 196 {
			t.Errorf("%d switch blocks, want 196", n)
		}
		if n := bytes.Count(b, []byte("\n0x")); n != 196*196 {
			t.Errorf("%d rows, want %d", n, 196*196)
		}
	})

	t.Run("queries", func(t *testing.T) {
		t.Parallel()
		shared := newDiscoveries(t)
		for _, tc := range []struct {
			args []string
			want string
		}{
			// the last LID: H48954 on leaf 193, through the spine
			{[]string{"H0", "49151"}, `4 hops: ca "H0" lid 197 -> ca "H48954" lid 49151` + "\n"},
			// a host left without a LID is still in the topology
			{[]string{"H0", "H49334"}, `4 hops: ca "H0" lid 197 -> ca "H49334" lid 0` + "\n"},
		} {
			t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
				out, stderr, code := runShared(t, shared, append([]string{"--sim", overflowSpec}, tc.args...)...)
				if code != 0 || string(out) != tc.want || string(stderr) != overflowWarning {
					t.Errorf("%s: exit %d\nstdout %q\nwant   %q\nstderr %q", strings.Join(tc.args, " "), code, out, tc.want, stderr)
				}
			})
		}
	})
}
