package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// nodeRoutes returns one directed route to every reachable node, with the
// port index it enters by.
func nodeRoutes(f *Fabric, start int32) ([]int32, map[int32]smp.DRPath, map[int32]int32) {
	paths := map[int32]smp.DRPath{f.ports[start].node: {}}
	ingress := map[int32]int32{f.ports[start].node: start}
	order := []int32{f.ports[start].node}
	for i := 0; i < len(order); i++ {
		n := order[i]
		d := &f.nodes[n]
		if d.sw < 0 && paths[n].Len() > 0 {
			continue
		}
		for pn := 1; pn <= int(d.nports); pn++ {
			op := &f.ports[f.portIndex(n, pn)]
			if op.remote < 0 || op.phys != 5 {
				continue
			}
			r := f.ports[op.remote].node
			if _, ok := paths[r]; ok {
				continue
			}
			p, err := paths[n].Extend(uint8(pn))
			if err != nil {
				continue
			}
			paths[r], ingress[r] = p, op.remote
			order = append(order, r)
		}
	}
	return order, paths, ingress
}

func setMAD(p smp.DRPath, attr uint16, mod uint32, data []byte, tid uint64) []byte {
	m := smp.NewGet(p, attr, mod)
	m.Method = smp.MethodSet
	m.TID = tid
	copy(m.Data[:], data)
	b, _ := m.MarshalBinary()
	return b
}

// TestCompareSetsWithIbsim programs both ibsim and the simulator through
// SMP Sets with the LIDs and LFTs that RunSM computes on a third copy,
// comparing every answer, then compares LID-routed Gets to every LID: this
// checks PortInfo/SwitchInfo/LFT Set semantics, LID routing and that
// RunSM's tables route in real ibsim.
func TestCompareSetsWithIbsim(t *testing.T) {
	requireTool(t, "ibsim")
	for _, name := range testFabrics {
		t.Run(name, func(t *testing.T) {
			f, err := Load(fabricPath(name), nil)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := Load(fabricPath(name), nil)
			if err := ref.RunSM(""); err != nil {
				t.Fatal(err)
			}
			base := startIbsim(t, fabricPath(name))
			rc := dialIbsim(t, base, "")
			ep, _ := f.AttachEndpoint("")
			order, paths, ingress := nodeRoutes(f, ep.port)
			tid := uint64(0x5000)
			send := func(p smp.DRPath, attr uint16, mod uint32, data []byte, what string) {
				tid++
				compare(t, rc, ep, 0xffff, setMAD(p, attr, mod, data, tid), what)
			}
			pi := make([]byte, 64)
			// Pass 1: LIDs etc. with PortState 0; passes 2, 3: Armed, Active.
			for pass, st := range []uint8{0, 3, 4} {
				for _, n := range order {
					d := &f.nodes[n]
					lo, hi := f.nodePorts(n)
					for i := lo; i < hi; i++ {
						pp := &f.ports[i]
						if d.sw < 0 && i != ingress[n] {
							continue // a CA only sets its own port
						}
						if st != 0 && (pp.remote < 0 || pp.num == 0) {
							continue
						}
						rp := &ref.ports[i]
						f.mu.RLock()
						f.renderPortInfo(pp, pi)
						f.mu.RUnlock()
						binary.BigEndian.PutUint16(pi[16:], rp.lid)
						binary.BigEndian.PutUint16(pi[18:], rp.smlid)
						binary.BigEndian.PutUint64(pi[8:], rp.prefix)
						pi[34] = pi[34]&^7 | rp.lmc
						pi[32] = pi[32]&0xf0 | st
						send(paths[n], smp.AttrPortInfo, uint32(pp.num), pi,
							fmt.Sprintf("pass %d PortInfo Set %s[%d]", pass, d.id, pp.num))
					}
				}
			}
			for _, n := range order {
				d := &f.nodes[n]
				if d.sw < 0 {
					continue
				}
				rsw := &ref.sws[d.sw]
				si := make([]byte, 64)
				binary.BigEndian.PutUint16(si[6:], rsw.top)
				si[11] = 0x04
				send(paths[n], smp.AttrSwitchInfo, 0, si, "SwitchInfo Set "+d.id)
				for blk := 0; blk*64 < len(rsw.lft); blk++ {
					send(paths[n], smp.AttrLinearForwardingTable, uint32(blk), rsw.lft[blk*64:blk*64+64],
						fmt.Sprintf("LFT Set %s block %d", d.id, blk))
				}
				send(paths[n], smp.AttrPKeyTable, 0, []byte{0xff, 0xff, 0x80, 0x01}, "PKey Set "+d.id)
				send(paths[n], smp.AttrSLtoVLMappingTable, 0x0102, []byte{7, 6, 5, 4, 3, 2, 1, 0}, "SL2VL Set "+d.id)
				send(paths[n], smp.AttrVLArbitrationTable, 0x10001, []byte{0, 9, 1, 9}, "VLArb Set "+d.id)
				send(paths[n], smp.AttrMlnxExtPortInfo, 1, []byte{1, 2, 3, 4, 5, 6, 7, 8}, "EPI Set "+d.id)
			}
			// LID-routed Gets to every LID, and a few that must fail.
			maxLID := uint16(0)
			for i := range ref.ports {
				maxLID = max(maxLID, ref.ports[i].lid)
			}
			for lid := uint16(0); lid <= maxLID+2; lid++ {
				for _, pr := range []probe{{smp.AttrNodeInfo, 0, smp.MethodGet}, {smp.AttrPortInfo, 0, smp.MethodGet},
					{smp.AttrPKeyTable, 0, smp.MethodGet}, {smp.AttrSLtoVLMappingTable, 0x0102, smp.MethodGet}} {
					m := smp.NewLIDGet(pr.attr, pr.mod)
					tid++
					m.TID = tid
					b, _ := m.MarshalBinary()
					compare(t, rc, ep, lid, b, fmt.Sprintf("LID %d attr %#x", lid, pr.attr))
				}
			}
			// Our own SM reaches every LID too (the router fabric excepted:
			// ibsim, and so the simulator, does not LID-route through a router,
			// and in the faults fabric h2 drops everything).
			if name == "router" || name == "faults" {
				return
			}
			got := make([]byte, 256)
			ep2, _ := ref.AttachEndpoint("")
			// (every LID a port has: the SM keeps the file's LIDs, so
			// there may be holes)
			has := map[uint16]bool{}
			for i := range ref.ports {
				has[ref.ports[i].lid] = true
			}
			for lid := uint16(1); lid <= maxLID; lid++ {
				if !has[lid] {
					continue
				}
				m := smp.NewLIDGet(smp.AttrNodeInfo, 0)
				b, _ := m.MarshalBinary()
				if err := ep2.Exchange(context.Background(), lid, b, got); err != nil {
					t.Errorf("RunSM fabric: LID %d: %v", lid, err)
				}
			}
		})
	}
}
