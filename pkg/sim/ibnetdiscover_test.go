package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/netfile"
)

const umad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// runDiag runs an infiniband-diags tool against ibsim under libumad2sim in
// a temporary working directory (the shim writes ./sys-<pid>/ there).
func runDiag(t *testing.T, sock string, args ...string) []byte {
	t.Helper()
	requireTool(t, args[0])
	if _, err := os.Stat(umad2sim); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("libumad2sim.so missing")
		}
		t.Skip("libumad2sim.so not installed")
	}
	cmd := exec.Command(args[0], ibsimtest.WithDiagTimeout(args[1:])...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+umad2sim)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// TestIbnetdiscoverRoundTrip runs the real ibnetdiscover against ibsim
// loaded with each test fabric, checks that the topology it prints has the
// simulator's GUIDs, descriptions and links, then loads that topology
// output (a valid net file) into both ibsim and the simulator and compares
// them byte for byte again.
func TestIbnetdiscoverRoundTrip(t *testing.T) {
	requireTool(t, "ibsim", "ibnetdiscover")
	for _, name := range []string{"loop", "parallel", "mixed", "chain10", "fattree2"} {
		t.Run(name, func(t *testing.T) {
			f := load(t, name)
			sock := startIbsim(t, fabricPath(name))
			out := runDiag(t, sock, "ibnetdiscover")
			topo := filepath.Join(t.TempDir(), name+".topo")
			if err := os.WriteFile(topo, out, 0o644); err != nil {
				t.Fatal(err)
			}
			nf, err := netfile.ParseFile(topo)
			if err != nil {
				t.Fatalf("ibnetdiscover output does not parse: %v\n%s", err, out)
			}
			byGUID := map[uint64]int32{}
			for i := range f.nodes {
				byGUID[f.nodes[i].guid] = int32(i)
			}
			if len(nf.Nodes) != len(f.nodes) {
				t.Errorf("ibnetdiscover saw %d nodes, simulator has %d", len(nf.Nodes), len(f.nodes))
			}
			for i := range nf.Nodes {
				n := &nf.Nodes[i]
				si, ok := byGUID[n.GUID]
				if !ok {
					t.Errorf("%s: GUID %#x not in the simulator", n.ID, n.GUID)
					continue
				}
				d := &f.nodes[si]
				if uint8(n.Type) != d.typ || n.NumPorts != int(d.nports) || n.Description() != d.description() ||
					n.VendorID != d.vendor || n.DeviceID != d.devid || n.SysImageGUID != d.sysguid {
					t.Errorf("%s: %+v vs simulator %+v", n.ID, *n, *d)
				}
				for p := 1; p <= n.NumPorts; p++ {
					pp := n.Ports[p]
					sp := &f.ports[f.portIndex(si, p)]
					if !pp.Linked() {
						if sp.remote >= 0 && d.sw >= 0 {
							t.Errorf("%s[%d]: linked in the simulator, not in ibnetdiscover", n.ID, p)
						}
						continue
					}
					r := &nf.Nodes[pp.Remote]
					if sp.remote < 0 || f.nodes[f.ports[sp.remote].node].guid != r.GUID || f.ports[sp.remote].num != pp.RemotePort {
						t.Errorf("%s[%d]: ibnetdiscover links it to %s[%d]", n.ID, p, r.ID, pp.RemotePort)
					}
				}
			}
			// The topology file as a net file, in both simulators.
			g, err := New(nf, nil)
			if err != nil {
				t.Fatal(err)
			}
			sock2 := startIbsim(t, topo)
			rc := dialIbsim(t, sock2, "")
			ep, _ := g.AttachEndpoint("")
			tid := uint64(0x9000)
			for _, p := range drPaths(g, ep.port) {
				for _, pr := range probes(9) {
					tid++
					compare(t, rc, ep, 0xffff, buildMAD(p, pr, tid), name+" topo "+p.String())
				}
			}
		})
	}
}
