package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// overflowSpec is a 2-level fat tree with 195 leaves of 253 hosts and one
// spine: 49,335 hosts + 196 switches = 49,531 ports needing a LID, 380
// more than the 49,151 unicast LIDs. Nodes are laid out hosts first
// (H0..H49334), then leaves L0..L194, then the spine S0; host H<i> hangs
// on leaf i/253 port i%253+1, leaf uplink port 254 goes to spine port
// leaf+1.
const overflowSpec = "fattree:levels=2,radix=254,hosts=253,leaves=195"

const (
	ovHosts    = 195 * 253
	ovSwitches = 196
	// first host LID once the switches have 1..196
	ovHostLID0 = ovSwitches + 1
	// hosts that get a LID
	ovAssigned = MaxUnicastLID - ovSwitches
)

func genFabric(t testing.TB, spec string) *Fabric {
	t.Helper()
	f, err := Generate(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// hostPort returns the port index of host H<i>'s port 1.
func hostPort(t testing.TB, f *Fabric, i int) *port {
	t.Helper()
	n, ok := f.lookup(fmt.Sprintf("H%d", i))
	if !ok {
		t.Fatalf("no H%d", i)
	}
	return &f.ports[f.nodes[n].base]
}

func switchPort0(t testing.TB, f *Fabric, id string) *port {
	t.Helper()
	n, ok := f.lookup(id)
	if !ok {
		t.Fatalf("no %s", id)
	}
	return &f.ports[f.nodes[n].base]
}

func TestLIDSpaceError(t *testing.T) {
	var err error = &LIDSpaceError{Ports: 64656, Unassigned: 15505}
	if !errors.Is(err, ErrLIDSpace) {
		t.Error("errors.Is(LIDSpaceError, ErrLIDSpace) = false")
	}
	if errors.Is(err, ErrNoNode) {
		t.Error("errors.Is(LIDSpaceError, ErrNoNode) = true")
	}
	want := "sim: more ports than unicast LIDs: 15505 of 64656 ports left without a LID (unicast LIDs are 1..49151)"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q\nwant %q", got, want)
	}
	var le *LIDSpaceError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &le) || le.Unassigned != 15505 {
		t.Errorf("errors.As through a wrap: %v", le)
	}
}

// TestRunSMFileOrder: a fabric whose ports fit keeps plain file order
// (hosts of the generator come before the switches).
func TestRunSMFileOrder(t *testing.T) {
	f := genFabric(t, "fattree:levels=2,radix=8")
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	want := uint16(1)
	for n := range f.nodes {
		lo, hi := f.nodePorts(int32(n))
		for i := lo; i < hi; i++ {
			pp := &f.ports[i]
			isSW := f.nodes[n].sw >= 0
			if (isSW && pp.num != 0) || (!isSW && pp.remote < 0) {
				continue
			}
			if pp.lid != want {
				t.Fatalf("%s[%d] LID %d want %d", f.nodes[n].id, pp.num, pp.lid, want)
			}
			if pp.num != 0 && pp.state != 4 {
				t.Errorf("%s[%d] state %d want Active", f.nodes[n].id, pp.num, pp.state)
			}
			want++
		}
	}
	if h0 := hostPort(t, f, 0); h0.lid != 1 {
		t.Errorf("H0 LID %d want 1 (hosts first in file order)", h0.lid)
	}
}

// TestRunSMLIDSpace runs the SM on a fabric with 380 ports too many.
func TestRunSMLIDSpace(t *testing.T) {
	f := genFabric(t, overflowSpec)
	// A LID the file gave a port that will be left over is cleared (a
	// unicast LID would be kept: this one is multicast).
	last := hostPort(t, f, ovHosts-1)
	last.lid = MaxUnicastLID + 1
	err := f.RunSM("")
	var le *LIDSpaceError
	if !errors.As(err, &le) {
		t.Fatalf("RunSM = %v, want *LIDSpaceError", err)
	}
	if le.Ports != ovHosts+ovSwitches || le.Unassigned != ovHosts+ovSwitches-MaxUnicastLID {
		t.Errorf("LIDSpaceError %+v, want Ports %d Unassigned %d", *le, ovHosts+ovSwitches, ovHosts+ovSwitches-MaxUnicastLID)
	}
	if !errors.Is(err, ErrLIDSpace) {
		t.Error("not ErrLIDSpace")
	}

	// Switches first, in file order: leaves then the spine.
	for i := 0; i < 195; i++ {
		if p := switchPort0(t, f, fmt.Sprintf("L%d", i)); p.lid != uint16(1+i) {
			t.Fatalf("L%d LID %d want %d", i, p.lid, 1+i)
		}
	}
	if p := switchPort0(t, f, "S0"); p.lid != 196 {
		t.Errorf("S0 LID %d want 196", p.lid)
	}
	// Then hosts in file order until 0xBFFF; the rest unconfigured.
	smlid := uint16(ovHostLID0)
	for i := 0; i < ovHosts; i++ {
		hp := hostPort(t, f, i)
		leaf := &f.ports[hp.remote]
		if i < ovAssigned {
			if hp.lid != uint16(ovHostLID0+i) || hp.state != 4 || leaf.state != 4 || hp.smlid != smlid || hp.prefix != DefaultGIDPrefix {
				t.Fatalf("H%d: lid %d state %d leaf port state %d smlid %d prefix %#x, want lid %d Active, smlid %d",
					i, hp.lid, hp.state, leaf.state, hp.smlid, hp.prefix, ovHostLID0+i, smlid)
			}
			continue
		}
		if hp.lid != 0 || hp.state != 2 || hp.phys != 5 || leaf.state != 2 || hp.smlid != 0 {
			t.Fatalf("H%d (no LID): lid %d state %d phys %d leaf port state %d smlid %d, want LID 0 Init/LinkUp, leaf port Init, smlid 0",
				i, hp.lid, hp.state, hp.phys, leaf.state, hp.smlid)
		}
	}
	// Switch-to-switch links are Active, every switch routes to 0xBFFF.
	for i := 0; i < 195; i++ {
		n, _ := f.lookup(fmt.Sprintf("L%d", i))
		up := &f.ports[f.nodes[n].base+254]
		if up.state != 4 || f.ports[up.remote].state != 4 {
			t.Fatalf("L%d uplink state %d/%d", i, up.state, f.ports[up.remote].state)
		}
		if sw := &f.sws[f.nodes[n].sw]; sw.top != MaxUnicastLID {
			t.Fatalf("L%d LinearFDBTop %d", i, sw.top)
		}
	}

	// Through the SMA: LID routing reaches the last LID and a switch;
	// directed routes still reach an unconfigured host.
	ep := attach(t, f, "H0")
	lm := smp.NewLIDGet(smp.AttrNodeInfo, 0)
	req, _ := lm.MarshalBinary()
	resp := make([]byte, 256)
	for _, tc := range []struct {
		lid  uint16
		guid uint64
	}{
		{MaxUnicastLID, 0x100000 + 2*uint64(ovAssigned-1)},
		{196, 0x200000 + 195},
		{1, 0x200000},
		{ovHostLID0 + 253, 0x100000 + 2*253}, // H253 on L1, through the spine
	} {
		if err := ep.Exchange(context.Background(), tc.lid, req, resp); err != nil {
			t.Fatalf("LID %d: %v", tc.lid, err)
		}
		if got := binary.BigEndian.Uint64(resp[64+12:]); got != tc.guid {
			t.Errorf("LID %d reached %#x want %#x", tc.lid, got, tc.guid)
		}
	}
	// H0 -> L0 port 254 -> S0 port 195 -> L194 port 253 -> H49334.
	pi := portInfo(t, ep, "0,1,254,195,253", 1)
	if pi.LID != 0 || pi.PortState != 2 || pi.PortPhysicalState != 5 || pi.MasterSMLID != 0 {
		t.Errorf("H%d PortInfo: LID %d state %d phys %d SM LID %d, want 0/Init/LinkUp/0",
			ovHosts-1, pi.LID, pi.PortState, pi.PortPhysicalState, pi.MasterSMLID)
	}
	si := mustGet(t, ep, "0,1,254,195", smp.AttrSwitchInfo, 0)
	var sinfo smp.SwitchInfo
	_ = sinfo.UnmarshalBinary(si.Data[:])
	if sinfo.LinearFDBTop != MaxUnicastLID {
		t.Errorf("L194 LinearFDBTop %d", sinfo.LinearFDBTop)
	}
}

// TestRunSMLIDSpaceBoundary: exactly 49,151 ports needing a LID is plain
// file order and no error; one more switches to switches-first.
func TestRunSMLIDSpaceBoundary(t *testing.T) {
	extra := ovHosts + ovSwitches - MaxUnicastLID // 380
	for _, tc := range []struct {
		unlink     int // hosts unlinked from the end
		unassigned int
	}{
		{extra, 0},
		{extra - 1, 1},
	} {
		t.Run(fmt.Sprint(tc.unassigned), func(t *testing.T) {
			f := genFabric(t, overflowSpec)
			for i := ovHosts - tc.unlink; i < ovHosts; i++ {
				if err := f.Unlink(fmt.Sprintf("H%d", i), 1); err != nil {
					t.Fatal(err)
				}
			}
			err := f.RunSM("")
			h0 := hostPort(t, f, 0).lid
			l0 := switchPort0(t, f, "L0").lid
			if tc.unassigned == 0 {
				if err != nil {
					t.Fatalf("RunSM: %v", err)
				}
				// file order: hosts first
				if h0 != 1 || l0 != uint16(ovHosts-tc.unlink+1) {
					t.Errorf("H0 LID %d L0 LID %d, want file order", h0, l0)
				}
				return
			}
			var le *LIDSpaceError
			if !errors.As(err, &le) || le.Unassigned != tc.unassigned {
				t.Fatalf("RunSM = %v, want %d unassigned", err, tc.unassigned)
			}
			if h0 != ovHostLID0 || l0 != 1 {
				t.Errorf("H0 LID %d L0 LID %d, want switches first", h0, l0)
			}
			if lp := hostPort(t, f, ovHosts-tc.unlink-1); lp.lid != 0 {
				t.Errorf("last linked host LID %d want 0", lp.lid)
			}
		})
	}
}

// BenchmarkRunSM50k runs the SM on the 62,208-host 3-level fat tree
// (64,656 nodes, 15,505 ports left without a LID).
func BenchmarkRunSM50k(b *testing.B) {
	f := genFabric(b, "fattree:levels=3,radix=48,hosts=36,leaves=36")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var le *LIDSpaceError
		if err := f.RunSM(""); !errors.As(err, &le) {
			b.Fatal(err)
		}
	}
}

// TestRunSMKeepsFileLIDs: the SM keeps the LIDs the file gives (as
// OpenSM keeps the LIDs ports have) and numbers only the ports without
// one, or whose LID an earlier port in file order has, from the lowest
// free LID.
func TestRunSMKeepsFileLIDs(t *testing.T) {
	net := `Switch 4 "sw1" # "sw1" base port 0 lid 20 lmc 0
[1] "h1"[1]
[2] "h2"[1]
[3] "h3"[1]
[4] "sw2"[1]

Switch 4 "sw2"
[1] "sw1"[4]
[2] "h4"[1]

Hca 1 "h1"
[1] "sw1"[1] # lid 5 lmc 0

Hca 1 "h2"
[1] "sw1"[2] # lid 5 lmc 0

Hca 1 "h3"
[1] "sw1"[3]

Hca 1 "h4"
[1] "sw2"[2] # lid 1 lmc 0
`
	path := t.TempDir() + "/lids.net"
	if err := os.WriteFile(path, []byte(net), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	// kept: sw1 20, h1 5, h4 1; renumbered in file order from the lowest
	// free LID: sw2 2, h2 (5 is h1's) 3, h3 4
	want := map[string]uint16{"sw1": 20, "sw2": 2, "h1": 5, "h2": 3, "h3": 4, "h4": 1}
	for id, lid := range want {
		if p := switchPort0(t, f, id); p.lid != lid {
			t.Errorf("%s: LID %d, want %d", id, p.lid, lid)
		}
	}
	// Every LID routes: the LFTs cover the holes' neighbours too.
	ep, err := f.AttachEndpoint("h4")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 256)
	for _, lid := range want {
		m := smp.NewLIDGet(smp.AttrNodeInfo, 0)
		b, _ := m.MarshalBinary()
		if err := ep.Exchange(context.Background(), lid, b, got); err != nil {
			t.Errorf("LID %d: %v", lid, err)
		}
	}
}

// TestRunSMKeepsTopologyLIDs: the "lid N" of an ibnetdiscover topology
// file are kept as well.
func TestRunSMKeepsTopologyLIDs(t *testing.T) {
	topo := "vendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x10\nswitchguid=0x10(10)\n" +
		"Switch\t2 \"S-0000000000000010\"\t\t# \"sw\" base port 0 lid 7 lmc 0\n" +
		"[1]\t\"H-0000000000000020\"[1](21) \t\t# \"h\" lid 9 4xEDR\n\n" +
		"vendid=0x2c9\ndevid=0x1017\nsysimgguid=0x20\ncaguid=0x20\n" +
		"Ca\t1 \"H-0000000000000020\"\t\t# \"h\"\n" +
		"[1](21) \t\"S-0000000000000010\"[1]\t\t# lid 9 lmc 0 \"sw\" lid 7 4xEDR\n"
	path := t.TempDir() + "/fabric.topo"
	if err := os.WriteFile(path, []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	for id, lid := range map[string]uint16{"S-0000000000000010": 7, "H-0000000000000020": 9} {
		if p := switchPort0(t, f, id); p.lid != lid {
			t.Errorf("%s: LID %d, want %d", id, p.lid, lid)
		}
	}
}
