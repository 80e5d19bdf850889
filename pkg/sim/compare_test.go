package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

var testFabrics = []string{"loop", "parallel", "dualhomed", "router", "chain10", "mixed", "faults", "fattree2"}

func fabricPath(name string) string { return "../../testdata/fabrics/" + name + ".net" }

// drPaths returns, by BFS from the endpoint like a discovery would, one
// directed route to every port reachable (including down and invalid
// ones, which must fail the same way in both simulators).
func drPaths(f *Fabric, start int32) []smp.DRPath {
	type item struct {
		p    smp.DRPath
		port int32 // ingress port index
	}
	var out []smp.DRPath
	seen := map[int32]bool{}
	q := []item{{smp.DRPath{}, start}}
	seen[f.ports[start].node] = true
	for len(q) > 0 {
		it := q[0]
		q = q[1:]
		out = append(out, it.p)
		n := &f.nodes[f.ports[it.port].node]
		if n.sw < 0 && it.p.Len() > 0 {
			// transit through a CA must fail
			if p, err := it.p.Extend(1); err == nil {
				out = append(out, p)
			}
			continue
		}
		for pn := 1; pn <= int(n.nports)+1; pn++ {
			p, err := it.p.Extend(uint8(pn))
			if err != nil {
				continue
			}
			if pn > int(n.nports) {
				out = append(out, p)
				continue
			}
			op := &f.ports[f.portIndex(f.ports[it.port].node, pn)]
			if op.remote < 0 || op.phys != 5 {
				out = append(out, p)
				continue
			}
			r := op.remote
			if !seen[f.ports[r].node] {
				seen[f.ports[r].node] = true
				q = append(q, item{p, r})
			}
		}
	}
	return out
}

type probe struct {
	attr   uint16
	mod    uint32
	method uint8
}

func probes(nports int) []probe {
	ps := []probe{
		{smp.AttrNodeDescription, 0, smp.MethodGet},
		{smp.AttrNodeDescription, 0, smp.MethodSet},
		{smp.AttrNodeInfo, 0, smp.MethodGet},
		{smp.AttrNodeInfo, 0, smp.MethodSet},
		{smp.AttrNodeInfo, 0, 0x03},
		{smp.AttrSwitchInfo, 0, smp.MethodGet},
		{smp.AttrGUIDInfo, 0, smp.MethodGet},
		{smp.AttrGUIDInfo, 1, smp.MethodGet},
		{smp.AttrPKeyTable, 0, smp.MethodGet},
		{smp.AttrPKeyTable, 1, smp.MethodGet},
		{smp.AttrPKeyTable, 2, smp.MethodGet},
		{smp.AttrPKeyTable, 1 << 16, smp.MethodGet},
		{smp.AttrSLtoVLMappingTable, 0, smp.MethodGet},
		{smp.AttrSLtoVLMappingTable, 0x0101, smp.MethodGet},
		{smp.AttrVLArbitrationTable, 0x10000, smp.MethodGet},
		{smp.AttrVLArbitrationTable, 0x20000, smp.MethodGet},
		{smp.AttrVLArbitrationTable, 0x30001, smp.MethodGet},
		{smp.AttrVLArbitrationTable, 0x50000, smp.MethodGet},
		{smp.AttrVLArbitrationTable, 0, smp.MethodGet},
		{smp.AttrLinearForwardingTable, 0, smp.MethodGet},
		{smp.AttrLinearForwardingTable, 479, smp.MethodGet},
		{smp.AttrLinearForwardingTable, 768, smp.MethodGet},
		{smp.AttrMulticastFwdTable, 0, smp.MethodGet},
		{smp.AttrMulticastFwdTable, 1 << 28, smp.MethodGet},
		{smp.AttrMulticastFwdTable, 40, smp.MethodGet},
		{smp.AttrSMInfo, 0, smp.MethodGet},
		{0x0030, 0, smp.MethodGet},
	}
	for p := 0; p <= nports+1; p++ {
		ps = append(ps, probe{smp.AttrPortInfo, uint32(p), smp.MethodGet},
			probe{smp.AttrMlnxExtPortInfo, uint32(p), smp.MethodGet})
	}
	ps = append(ps, probe{smp.AttrPortInfo, 0x80000001, smp.MethodGet})
	return ps
}

func buildMAD(p smp.DRPath, pr probe, tid uint64) []byte {
	m := smp.NewGet(p, pr.attr, pr.mod)
	m.Method = pr.method
	m.TID = tid
	for i := range m.Data {
		m.Data[i] = byte(0xa0 + i) // must be echoed where ibsim leaves data alone
	}
	b, _ := m.MarshalBinary()
	return b
}

// compare sends the same MAD to ibsim and to the simulator.
func compare(t *testing.T, rc *rawClient, ep *Endpoint, dlid uint16, mad []byte, what string) {
	t.Helper()
	st, want := rc.exchange(t, dlid, mad)
	got := make([]byte, 256)
	err := ep.Exchange(context.Background(), dlid, mad, got)
	if st == 110 {
		if !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("%s: ibsim status 110, sim err %v", what, err)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: ibsim answered (status %d), sim err %v", what, st, err)
		return
	}
	w := append([]byte(nil), want...)
	w[8], w[9], got[8], got[9] = 0, 0, 0, 0 // slot numbers may differ
	if !bytes.Equal(w, got) {
		t.Errorf("%s: MAD differs:%s", what, hexDiff(w, got))
	}
}

// TestCompareWithIbsim sends every probe along every directed route of
// every test fabric to real ibsim and to the simulator and compares the
// answers byte for byte.
func TestCompareWithIbsim(t *testing.T) {
	requireTool(t, "ibsim")
	for _, name := range testFabrics {
		t.Run(name, func(t *testing.T) {
			f, err := Load(fabricPath(name), nil)
			if err != nil {
				t.Fatal(err)
			}
			base := startIbsim(t, fabricPath(name))
			for _, at := range attachPoints(f) {
				rc := dialIbsim(t, base, at)
				ep, err := f.AttachEndpoint(at)
				if err != nil {
					t.Fatal(err)
				}
				tid := uint64(0x1000)
				paths := drPaths(f, ep.port)
				t.Logf("attach %q: %d routes x %d probes", at, len(paths), len(probes(9)))
				for _, p := range paths {
					for _, pr := range probes(254) {
						if pr.attr == smp.AttrPortInfo || pr.attr == smp.AttrMlnxExtPortInfo {
							if pr.mod&0xff > 9 && pr.mod != 0x80000001 {
								continue
							}
						}
						tid++
						compare(t, rc, ep, 0xffff, buildMAD(p, pr, tid),
							fmt.Sprintf("%s@%s path %s attr %#x mod %#x method %d", name, at, p, pr.attr, pr.mod, pr.method))
					}
				}
			}
		})
	}
}

// attachPoints: the default node and the first switch.
func attachPoints(f *Fabric) []string {
	pts := []string{""}
	for i := range f.nodes {
		if f.nodes[i].sw >= 0 && i != 0 {
			pts = append(pts, f.nodes[i].id)
			break
		}
	}
	return pts
}
