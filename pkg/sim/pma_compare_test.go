//go:build !windows

package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ibsimOpenSM runs `opensm --once` under libumad2sim against ibsim
// socket base, attached at host, to give ibsim LIDs and forwarding tables.
func ibsimOpenSM(t *testing.T, base, host string) {
	t.Helper()
	requireTool(t, "opensm")
	if _, err := os.Stat(umad2sim); err != nil {
		requireTool(t, "libumad2sim.so")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "opensm", "--once", "-F", "/dev/null", "-f", filepath.Join(dir, "log"), "--dump_files_dir", dir)
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+base, "LD_PRELOAD="+umad2sim, "SIM_HOST="+host,
		"OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("opensm --once: %v\n%s\n%s", err, out, log)
	}
}

// gmpExchange sends a GMP to ibsim by LID, to QP1.
func (c *rawClient) gmpExchange(t testing.TB, dlid uint16, mad []byte) (uint32, []byte) {
	t.Helper()
	req := make([]byte, 288)
	binary.BigEndian.PutUint16(req[0:], dlid)
	binary.BigEndian.PutUint32(req[8:], 1)  // DQP
	binary.BigEndian.PutUint32(req[12:], 1) // SQP
	binary.BigEndian.PutUint64(req[24:], 256)
	copy(req[32:], mad)
	if _, err := c.data.WriteToUnix(req, c.out); err != nil {
		t.Fatal(err)
	}
	_ = c.data.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp := make([]byte, 288)
	if n, err := c.data.Read(resp); err != nil || n != 288 {
		t.Fatalf("no reply from ibsim: %d %v", n, err)
	}
	return binary.BigEndian.Uint32(resp[16:]), resp[32:]
}

// ibsimLID reads the LID of the port at the end of directed route p (the
// port 0 LID for a switch) from ibsim.
func ibsimLID(t *testing.T, rc *rawClient, p smp.DRPath) uint16 {
	t.Helper()
	m := smp.NewGet(p, smp.AttrPortInfo, 0)
	b, _ := m.MarshalBinary()
	st, resp := rc.exchange(t, 0xffff, b)
	if st != 0 {
		t.Fatalf("PortInfo along %s: status %d", p, st)
	}
	var r smp.MAD
	r.UnmarshalBinary(resp)
	var pi smp.PortInfo
	pi.UnmarshalBinary(r.Data[:])
	return pi.LID
}

// pmaProbe is one PerfMgt request of the comparison.
type pmaProbe struct {
	attr   uint16
	method uint8
	sel    uint8
	mask   uint32 // CounterSelect (bits 16..: CounterSelect2) of a Set
}

func pmaMAD(pr pmaProbe, tid uint64) []byte {
	m := pma.NewGet(pr.attr, pr.sel)
	m.Method, m.TID = pr.method, tid
	for i := 4; i < pma.DataSize; i++ {
		m.Data[i] = byte(0xa0 + i) // echoed where the PMA leaves data alone
	}
	binary.BigEndian.PutUint16(m.Data[2:], uint16(pr.mask))
	m.Data[18] = byte(pr.mask >> 16)
	b, _ := m.MarshalBinary()
	return b
}

// maskTraffic zeroes the traffic counters of a PerfMgt response: they
// count the MADs each simulator has carried, which differ (OpenSM's sweep
// against our SM's, different routes).
func maskTraffic(b []byte) {
	switch binary.BigEndian.Uint16(b[16:]) {
	case pma.AttrPortCounters:
		clear(b[pma.DataOffset+24 : pma.DataOffset+40])
	case pma.AttrPortCountersExtended:
		clear(b[pma.DataOffset+8 : pma.DataOffset+40])
	}
}

// TestComparePMAWithIbsim sends the same PerfMgt GMPs to ibsim (LIDs from
// OpenSM) and to the simulator (LIDs from its SM) for every node, each by
// its own LID, and compares the answers byte for byte, traffic counters
// aside: ClassPortInfo Get and Set, PortCounters and PortCountersExtended
// for every port, AllPortSelect, bad PortSelects, resets by Set, with
// counters injected by PerformanceSet in both and PortRcvErrors counted
// from Error drops in both.
func TestComparePMAWithIbsim(t *testing.T) {
	requireTool(t, "ibsim")
	const file = "../../cmd/ibavtrack/testdata/errors.net"
	const host = "H-h1"
	base, con := startIbsimConsole(t, file)
	ibsimOpenSM(t, base, host)
	f, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(host); err != nil {
		t.Fatal(err)
	}
	rc := dialIbsim(t, base, host)
	ep, err := f.AttachEndpoint(host)
	if err != nil {
		t.Fatal(err)
	}
	// Start from zero everywhere: what OpenSM's sweep and our SM left
	// differs. Then the same injections and drops on both.
	tid := uint64(0x2000)
	lids := map[int32]uint16{} // node -> LID in ibsim
	ours := map[int32]uint16{} // node -> LID in the simulator
	// A directed route to each node, from the simulator's map.
	for _, p := range drPaths(f, ep.port) {
		var path [64]byte
		for i := 1; i <= int(p.Len()); i++ {
			path[i] = p.Port(i)
		}
		dst := f.drOut(ep.port, &path, int(p.Len()), nil)
		if dst < 0 {
			continue
		}
		n := f.ports[dst].node
		if _, ok := lids[n]; ok {
			continue
		}
		lids[n], ours[n] = ibsimLID(t, rc, p), f.ports[dst].lid
		if f.nodes[n].sw >= 0 {
			lo, _ := f.nodePorts(n)
			ours[n] = f.ports[lo].lid // a switch's LID is its port 0's
		}
	}
	if len(lids) != len(f.nodes) {
		t.Fatalf("reached %d of %d nodes", len(lids), len(f.nodes))
	}
	exchange := func(n int32, mad []byte, what string) {
		t.Helper()
		st, want := rc.gmpExchange(t, lids[n], mad)
		got := make([]byte, 256)
		err := ep.Exchange(context.Background(), ours[n], mad, got)
		if st != 0 {
			if err == nil {
				t.Errorf("%s: ibsim status %d, sim answered", what, st)
			}
			return
		}
		if err != nil {
			t.Errorf("%s: ibsim answered, sim: %v", what, err)
			return
		}
		w := append([]byte(nil), want...)
		w[8], w[9], got[8], got[9] = 0, 0, 0, 0
		maskTraffic(w)
		maskTraffic(got)
		if !bytes.Equal(w, got) {
			t.Errorf("%s: MAD differs:%s", what, hexDiff(w, got))
		}
	}
	sel := func(n int32) []uint8 {
		d := &f.nodes[n]
		if d.sw < 0 {
			lo, hi := f.nodePorts(n)
			for i := lo; i < hi; i++ {
				if f.ports[i].lid == ours[n] {
					return []uint8{f.ports[i].num}
				}
			}
		}
		return []uint8{pma.AllPorts}
	}
	for n := range lids {
		for _, s := range sel(n) {
			tid++
			exchange(n, pmaMAD(pmaProbe{pma.AttrPortCounters, pma.MethodSet, s, 0x1ffff}, tid), "reset")
			tid++
			exchange(n, pmaMAD(pmaProbe{pma.AttrPortCountersExtended, pma.MethodSet, s, 0xff}, tid), "reset ext")
		}
	}
	for _, c := range []string{
		`PerformanceSet "S-sw1"[1] PortCounters.SymbolErrorCounter=12`,
		`PerformanceSet "S-sw1"[0] PortCounters.LinkDownedCounter=300`,
		`PerformanceSet "S-sw2"[3] PortCounters.PortXmitDiscards=200`,
		`PerformanceSet "S-sw2"[4] PortCounters.PortXmitDiscards=100`,
		`PerformanceSet "S-sw2"[4] PortCounters.ExcessiveBufferOverrunErrors=99`,
		`PerformanceSet "H-h3"[1] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "H-h4"[2] PortCounters.PortXmitWait=99`,
		`PerformanceSet "H-h4"[2] PortCountersExtended.PortUnicastRcvPkts=77`,
		`PerformanceSet "H-h2"[1] PortCounters.VL15Dropped=1`,
	} {
		con(c)
		if err := f.Exec(c); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	// Drops: everything entering h3's port is lost (and counted there as
	// PortRcvErrors) while three GMPs try to reach it.
	h3 := f.ids["H-h3"]
	for _, c := range []string{`Error "H-h3"[1] 100`, "", `Error "H-h3"[1] 0`} {
		if c == "" {
			for range 3 {
				tid++
				exchange(h3, pmaMAD(pmaProbe{pma.AttrPortCounters, pma.MethodGet, 1, 0}, tid), "dropped")
			}
			continue
		}
		con(c)
		if err := f.Exec(c); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if c := counters(t, ep, ours[h3], 1); c.PortRcvErrors != 7+3 {
		t.Errorf("h3 PortRcvErrors %d after 3 drops, want 10", c.PortRcvErrors)
	}
	for n := range lids {
		d := &f.nodes[n]
		var probes []pmaProbe
		probes = append(probes, pmaProbe{pma.AttrClassPortInfo, pma.MethodGet, 0, 0}, pmaProbe{pma.AttrClassPortInfo, pma.MethodSet, 0, 0})
		sels := []uint8{0, 1, 2, d.nports, d.nports + 1, pma.AllPorts}
		for _, s := range sels {
			probes = append(probes, pmaProbe{pma.AttrPortCounters, pma.MethodGet, s, 0}, pmaProbe{pma.AttrPortCountersExtended, pma.MethodGet, s, 0})
		}
		for _, pr := range probes {
			tid++
			exchange(int32(n), pmaMAD(pr, tid), fmt.Sprintf("%s attr %#x method %d sel %d", d.id, pr.attr, pr.method, pr.sel))
		}
	}
	// Resets of some counters by Set, then a Get.
	sw2 := f.ids["S-sw2"]
	for _, pr := range []pmaProbe{
		{pma.AttrPortCounters, pma.MethodSet, 4, pma.SelectXmitDiscards},
		{pma.AttrPortCounters, pma.MethodGet, 4, 0},
		{pma.AttrPortCounters, pma.MethodGet, pma.AllPorts, 0},
		{pma.AttrPortCounters, pma.MethodSet, pma.AllPorts, pma.SelectExcessiveBufOvr},
		{pma.AttrPortCounters, pma.MethodGet, 3, 0},
	} {
		tid++
		exchange(sw2, pmaMAD(pr, tid), fmt.Sprintf("sw2 reset/get %+v", pr))
	}
}
