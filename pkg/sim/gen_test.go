package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// TestGeneratedInIbsim writes generated fat trees bigger than ibsim's
// default limits, loads them into ibsim with -N/-S/-P from Counts and
// compares NodeInfo/PortInfo along routes to a sample of nodes.
func TestGeneratedInIbsim(t *testing.T) {
	requireTool(t, "ibsim")
	for _, spec := range []string{"fattree:levels=2,radix=64", "fattree:levels=3,radix=12,links=2"} {
		t.Run(spec, func(t *testing.T) {
			nf, err := netfile.Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "gen.net")
			out, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nf.WriteTo(out); err != nil {
				t.Fatal(err)
			}
			out.Close()
			nodes, sws, ports := nf.Counts()
			f, err := New(nf, nil)
			if err != nil {
				t.Fatal(err)
			}
			sock := startIbsim(t, file, "-N", strconv.Itoa(nodes), "-S", strconv.Itoa(max(sws, 1)), "-P", strconv.Itoa(ports))
			rc := dialIbsim(t, sock, "")
			ep := attach(t, f, "")
			paths := drPaths(f, ep.port)
			step := max(1, len(paths)/300)
			tid := uint64(0x40000)
			for i := 0; i < len(paths); i += step {
				for _, pr := range probes(0)[:8] {
					tid++
					compare(t, rc, ep, 0xffff, buildMAD(paths[i], pr, tid), fmt.Sprintf("%s path %s attr %#x", spec, paths[i], pr.attr))
				}
			}
			t.Logf("%d nodes, %d switches, %d ports; %d routes probed", nodes, sws, ports, (len(paths)+step-1)/step)
		})
	}
}
