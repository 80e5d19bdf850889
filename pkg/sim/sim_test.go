package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

func load(t testing.TB, name string) *Fabric {
	t.Helper()
	f, err := Load(fabricPath(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func attach(t testing.TB, f *Fabric, id string) *Endpoint {
	t.Helper()
	ep, err := f.AttachEndpoint(id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func path(t testing.TB, s string) smp.DRPath {
	t.Helper()
	p, err := smp.ParseDRPath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// get sends a DR Get and returns the decoded response MAD.
func get(t testing.TB, ep *Endpoint, p string, attr uint16, mod uint32) (*smp.MAD, error) {
	t.Helper()
	m := smp.NewGet(path(t, p), attr, mod)
	m.TID = 0x12345678
	req, _ := m.MarshalBinary()
	resp := make([]byte, 256)
	if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); err != nil {
		return nil, err
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil {
		t.Fatal(err)
	}
	return &r, nil
}

func mustGet(t testing.TB, ep *Endpoint, p string, attr uint16, mod uint32) *smp.MAD {
	t.Helper()
	r, err := get(t, ep, p, attr, mod)
	if err != nil {
		t.Fatalf("path %s attr %#x mod %d: %v", p, attr, mod, err)
	}
	return r
}

func portInfo(t testing.TB, ep *Endpoint, p string, port uint32) smp.PortInfo {
	t.Helper()
	r := mustGet(t, ep, p, smp.AttrPortInfo, port)
	if r.StatusCode() != 0 {
		t.Fatalf("PortInfo %s/%d status %#x", p, port, r.StatusCode())
	}
	var pi smp.PortInfo
	_ = pi.UnmarshalBinary(r.Data[:])
	return pi
}

// TestPortInfoDefaults checks the table of ibsim 0.10's PortInfo values
// (reference §2.3) on loop.net, attached to h1 (sw1 port 1).
func TestPortInfoDefaults(t *testing.T) {
	f := load(t, "loop")
	ep := attach(t, f, "h1")
	tests := []struct {
		name                           string
		path                           string
		port                           uint32
		cap                            uint32
		lease                          uint16
		state, phys, nmtu, mtu, stall  uint8
		guidCap, subnetTO, resp, phyEr uint8
		cap2                           uint16
		local                          uint8
	}{
		{"switch port 0", "0,1", 0, 0xc048, 4089, 4, 5, 1, 3, 0, 1, 31, 8, 0, 0x30, 1},
		{"switch linked", "0,1", 2, 0, 0, 2, 5, 4, 4, 7, 0, 0, 0, 0, 0, 1},
		{"switch unlinked", "0,1", 5, 0, 0, 1, 2, 4, 4, 7, 0, 0, 0, 4, 0, 1},
		{"CA linked", "0", 1, 0x0050c048, 4089, 2, 5, 4, 4, 7, 32, 31, 0, 0, 0x30, 1},
	}
	for _, tt := range tests {
		pi := portInfo(t, ep, tt.path, tt.port)
		if pi.CapabilityMask != tt.cap || pi.MKeyLeasePeriod != tt.lease || pi.PortState != tt.state ||
			pi.PortPhysicalState != tt.phys || pi.NeighborMTU != tt.nmtu || pi.MTUCap != tt.mtu ||
			pi.VLStallCount != tt.stall || pi.GUIDCap != tt.guidCap || pi.SubnetTimeOut != tt.subnetTO ||
			pi.RespTimeValue != tt.resp || pi.LocalPhyErrors != tt.phyEr || pi.CapabilityMask2 != tt.cap2 ||
			pi.LocalPortNum != tt.local {
			t.Errorf("%s: %+v", tt.name, pi)
		}
		if pi.LinkWidthSupported != 31 || pi.LinkSpeedSupported != 7 || pi.LinkDownDefaultState != 2 ||
			pi.VLCap != 4 || pi.OperationalVLs != 4 || pi.VLArbitrationHighCap != 8 || pi.VLArbitrationLowCap != 8 ||
			pi.LinkWidthEnabled != 2 || pi.LinkWidthActive != 2 || pi.LinkSpeedEnabled != 1 || pi.LinkSpeedActive != 1 ||
			pi.LID != 0 || pi.MasterSMLID != 0 || pi.GIDPrefix != 0 {
			t.Errorf("%s common fields: %+v", tt.name, pi)
		}
	}
}

func TestNodeAndSwitchInfo(t *testing.T) {
	f := load(t, "parallel")
	ep := attach(t, f, "")
	var ni smp.NodeInfo
	r := mustGet(t, ep, "0", smp.AttrNodeInfo, 0)
	_ = ni.UnmarshalBinary(r.Data[:])
	want := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeCA, NumPorts: 2,
		SystemImageGUID: 0x100000, NodeGUID: 0x100000, PortGUID: 0x100001, PartitionCap: 64, Revision: 0xa1, LocalPortNum: 1}
	if ni != want {
		t.Errorf("CA NodeInfo %+v", ni)
	}
	r = mustGet(t, ep, "0,1,3", smp.AttrNodeInfo, 0)
	_ = ni.UnmarshalBinary(r.Data[:])
	want = smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeSwitch, NumPorts: 8,
		SystemImageGUID: 0x200001, NodeGUID: 0x200001, PortGUID: 0x200001, PartitionCap: 8, Revision: 0xa1, LocalPortNum: 3}
	if ni != want {
		t.Errorf("switch NodeInfo %+v", ni)
	}
	for _, tt := range []struct {
		path string
		esp0 bool
		desc string
	}{{"0,1", true, "switch A"}, {"0,1,4", false, "switch B"}} {
		var si smp.SwitchInfo
		r = mustGet(t, ep, tt.path, smp.AttrSwitchInfo, 0)
		_ = si.UnmarshalBinary(r.Data[:])
		if si.LinearFDBCap != 30720 || si.MulticastFDBCap != 1024 || si.LinearFDBTop != 0 || !si.PortStateChange ||
			si.PartitionEnforcementCap != 64 || !si.FilterRawInboundCap || !si.FilterRawOutboundCap || si.EnhancedPort0 != tt.esp0 {
			t.Errorf("%s SwitchInfo %+v", tt.path, si)
		}
		r = mustGet(t, ep, tt.path, smp.AttrNodeDescription, 0)
		var d smp.NodeDescription
		_ = d.UnmarshalBinary(r.Data[:])
		if d.String() != tt.desc {
			t.Errorf("%s desc %q", tt.path, d.String())
		}
	}
}

// TestDirectedRoute: return path, D bit, hop pointer and method of a DR
// reply (ibsim: path 0,1,2 from h1 enters sw1 by port 1 and sw2 by port 3).
func TestDirectedRoute(t *testing.T) {
	f := load(t, "loop")
	ep := attach(t, f, "h1")
	r := mustGet(t, ep, "0,1,2", smp.AttrNodeInfo, 0)
	if r.Method != smp.MethodGetResp || !r.Returning() || r.HopPointer != 0 || r.HopCount != 2 || r.StatusCode() != 0 {
		t.Errorf("header %+v", r)
	}
	if got := r.ReturnPath[:4]; got[0] != 1 || got[1] != 1 || got[2] != 3 || got[3] != 0 {
		t.Errorf("return path % x", got)
	}
	if r.TID != 0x12345678|uint64(ep.Slot())<<48 {
		t.Errorf("TID %#x", r.TID)
	}
	if gd := binary.BigEndian.Uint64(r.Data[12:]); gd != 0x200001 {
		t.Errorf("reached %#x", gd)
	}
}

func TestStatusAndDrops(t *testing.T) {
	f := load(t, "dualhomed")
	ep := attach(t, f, "") // "dual" port 1 -> swA[1]
	tests := []struct {
		name   string
		path   string
		attr   uint16
		mod    uint32
		status uint16
		drop   bool
	}{
		{"SwitchInfo on a CA", "0", smp.AttrSwitchInfo, 0, 0x0c, false},
		{"LFT on a CA", "0", smp.AttrLinearForwardingTable, 0, 0x0c, false},
		{"PortInfo beyond NumPorts", "0,1", smp.AttrPortInfo, 5, 0x1c, false},
		{"LFT block 768", "0,1", smp.AttrLinearForwardingTable, 768, 0x1c, false},
		{"VLArb block 0", "0", smp.AttrVLArbitrationTable, 0, 0x1c, false},
		{"PKey block 2 on a CA", "0", smp.AttrPKeyTable, 2, 0x1c, false},
		{"SMInfo without SM", "0,1", smp.AttrSMInfo, 0, 0, true},
		{"unknown attribute", "0", 0x0030, 0, 0, true},
		{"down link", "0,1,4", smp.AttrNodeInfo, 0, 0, true},
		{"port beyond NumPorts", "0,1,9", smp.AttrNodeInfo, 0, 0, true},
		{"CA transit", "0,1,1,2", smp.AttrNodeInfo, 0, 0, true},
		{"out of CA port 2", "0,2", smp.AttrNodeInfo, 0, 0, false},
		{"CA second port via switch", "0,1,2,1", smp.AttrNodeInfo, 0, 0, false},
	}
	for _, tt := range tests {
		r, err := get(t, ep, tt.path, tt.attr, tt.mod)
		if tt.drop {
			if !errors.Is(err, transport.ErrTimeout) {
				t.Errorf("%s: err %v, want timeout", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if r.StatusCode() != tt.status {
			t.Errorf("%s: status %#x want %#x", tt.name, r.StatusCode(), tt.status)
		}
	}
	// Set on a read-only attribute answers 0x0008 with the data.
	m := smp.NewGet(path(t, "0"), smp.AttrNodeInfo, 0)
	m.Method = smp.MethodSet
	req, _ := m.MarshalBinary()
	resp := make([]byte, 256)
	if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	if st := binary.BigEndian.Uint16(resp[4:]); st != 0x8008 || resp[64+2] != 1 {
		t.Errorf("NodeInfo Set: status %#x data % x", st, resp[64:72])
	}
	// Malformed requests get no answer.
	for name, mut := range map[string]func([]byte){
		"base version": func(b []byte) { b[0] = 2 },
		"hop pointer":  func(b []byte) { b[6] = 1 },
		"DrSLID":       func(b []byte) { b[32] = 0 },
		"TrapRepress":  func(b []byte) { b[3] = 7 },
		"response":     func(b []byte) { b[3] = 0x81; b[4] = 0x80 },
		"PerfMgt":      func(b []byte) { b[1] = 4 },
	} {
		mm := smp.NewGet(path(t, "0"), smp.AttrNodeInfo, 0)
		req, _ := mm.MarshalBinary()
		mut(req)
		if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if err := ep.Exchange(context.Background(), smp.PermissiveLID, req[:100], resp); errors.Is(err, transport.ErrTimeout) || err == nil {
		t.Errorf("short request: %v", err)
	}
}

func TestLFTAndLIDRouting(t *testing.T) {
	f := load(t, "loop")
	ep := attach(t, f, "h1")
	r := mustGet(t, ep, "0,1", smp.AttrLinearForwardingTable, 3)
	for _, b := range r.Data {
		if b != 0xff {
			t.Fatalf("default LFT % x", r.Data)
		}
	}
	// Without an SM, LID routing fails.
	lm := smp.NewLIDGet(smp.AttrNodeInfo, 0)
	req, _ := lm.MarshalBinary()
	resp := make([]byte, 256)
	if err := ep.Exchange(context.Background(), 1, req, resp); !errors.Is(err, transport.ErrTimeout) {
		t.Errorf("LID route before SM: %v", err)
	}
	if err := f.RunSM("h1"); err != nil {
		t.Fatal(err)
	}
	// LIDs in file order: sw1=1 sw2=2 sw3=3 h1=4 h2=5 h3=6.
	wantGUID := map[uint16]uint64{1: 0x200000, 2: 0x200001, 3: 0x200002, 4: 0x100000, 5: 0x100002, 6: 0x100004}
	for lid, g := range wantGUID {
		if err := ep.Exchange(context.Background(), lid, req, resp); err != nil {
			t.Fatalf("LID %d: %v", lid, err)
		}
		if got := binary.BigEndian.Uint64(resp[64+12:]); got != g {
			t.Errorf("LID %d reached %#x want %#x", lid, got, g)
		}
		if resp[3] != 0x81 || binary.BigEndian.Uint16(resp[4:]) != 0 {
			t.Errorf("LID %d header % x", lid, resp[:8])
		}
	}
	if err := ep.Exchange(context.Background(), 7, req, resp); !errors.Is(err, transport.ErrTimeout) {
		t.Errorf("unassigned LID 7: %v", err)
	}
	var si smp.SwitchInfo
	_ = si.UnmarshalBinary(mustGet(t, ep, "0,1", smp.AttrSwitchInfo, 0).Data[:])
	if si.LinearFDBTop != 6 || si.PortStateChange {
		t.Errorf("SwitchInfo after SM %+v", si)
	}
	lft := mustGet(t, ep, "0,1", smp.AttrLinearForwardingTable, 0).Data
	if want := []byte{0xff, 0, 2, 3, 1, 2, 3}; string(lft[:7]) != string(want) {
		t.Errorf("sw1 LFT % x want % x", lft[:7], want)
	}
	pi := portInfo(t, ep, "0", 1)
	if pi.PortState != 4 || pi.LID != 4 || pi.MasterSMLID != 4 || pi.GIDPrefix != DefaultGIDPrefix {
		t.Errorf("h1 PortInfo after SM %+v", pi)
	}
	// LFT Set, then Get.
	m := smp.NewGet(path(t, "0,1"), smp.AttrLinearForwardingTable, 700)
	m.Method = smp.MethodSet
	m.Data[5] = 7
	b, _ := m.MarshalBinary()
	if err := ep.Exchange(context.Background(), smp.PermissiveLID, b, resp); err != nil {
		t.Fatal(err)
	}
	if lft := mustGet(t, ep, "0,1", smp.AttrLinearForwardingTable, 700).Data; lft[5] != 7 || lft[4] != 0 {
		t.Errorf("LFT block 700 after Set % x", lft[:8])
	}
}

func TestFaults(t *testing.T) {
	f := load(t, "faults")
	ep := attach(t, f, "")
	// From the net file: do Error "h2"[1] 100.
	if _, err := get(t, ep, "0,2", smp.AttrNodeInfo, 0); !errors.Is(err, transport.ErrTimeout) {
		t.Errorf("h2 should drop: %v", err)
	}
	mustGet(t, ep, "0,1", smp.AttrNodeInfo, 0)
	if err := f.Exec(`Error "h2"[1] 0`); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ep, "0,2", smp.AttrNodeInfo, 0)
	// Attribute-specific drops: only PortInfo (21) ending at sw1's port 1... here h1.
	if err := f.SetErrorRate("h1", 1, 100, smp.AttrPortInfo); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, ep, "0,1", smp.AttrPortInfo, 0); !errors.Is(err, transport.ErrTimeout) {
		t.Errorf("PortInfo should drop: %v", err)
	}
	mustGet(t, ep, "0,1", smp.AttrNodeInfo, 0)
	mustGet(t, ep, "0", smp.AttrPortInfo, 1)
	_ = f.SetErrorRate("h1", -1, 0, 0)
	// Unlink / ReLink.
	if err := f.Exec(`Unlink "sw1"[2]`); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, ep, "0,2", smp.AttrNodeInfo, 0); !errors.Is(err, transport.ErrTimeout) {
		t.Errorf("unlinked: %v", err)
	}
	pi := portInfo(t, ep, "0", 2)
	if pi.PortState != 1 || pi.PortPhysicalState != 2 || pi.LocalPhyErrors != 0 {
		t.Errorf("unlinked port keeps its linked template, Down/Polling: %+v", pi)
	}
	if err := f.Unlink("sw1", 2); !errors.Is(err, ErrNotLinked) {
		t.Errorf("double unlink: %v", err)
	}
	if err := f.ReLink("h2", -1); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ep, "0,2", smp.AttrNodeInfo, 0)
	if pi := portInfo(t, ep, "0", 2); pi.PortState != 2 || pi.PortPhysicalState != 5 {
		t.Errorf("relinked %+v", pi)
	}
	if err := f.ReLink("h2", 1); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("relink without unlink: %v", err)
	}
	// Link two free ports.
	if err := f.Exec(`Link "sw1"[3] "sw1"[4]`); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, ep, "0,3", smp.AttrNodeInfo, 0); r.Data[36] != 4 {
		t.Errorf("looped link enters at %d", r.Data[36])
	}
	// GUID change and Baselid.
	if err := f.Exec(`Guid "h2" 0x1234`); err != nil {
		t.Fatal(err)
	}
	r := mustGet(t, ep, "0,2", smp.AttrNodeInfo, 0)
	if g, pg := binary.BigEndian.Uint64(r.Data[12:]), binary.BigEndian.Uint64(r.Data[20:]); g != 0x1234 || pg != 0x1235 {
		t.Errorf("after Guid: %#x %#x", g, pg)
	}
	if err := f.Exec(`Baselid "h2"[1] 0x20 2`); err != nil {
		t.Fatal(err)
	}
	if pi := portInfo(t, ep, "0,2", 1); pi.LID != 0x20 || pi.LMC != 2 {
		t.Errorf("after Baselid %+v", pi)
	}
	for _, bad := range []string{`Error "nope" 5`, `Unlink "h1"[3]`, `Error "h1"[1] 101`, `Dump`, `Error "h1"`} {
		if err := f.Exec(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestConcurrent runs discovery-like Gets from several endpoints while
// links flap (run with -race).
func TestConcurrent(t *testing.T) {
	f := load(t, "fattree2")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		ep := attach(t, f, fmt.Sprintf("H%d", w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			gm := smp.NewGet(path(t, "0,1,5"), smp.AttrPortInfo, 3)
			req, _ := gm.MarshalBinary()
			resp := make([]byte, 256)
			for i := 0; i < 2000; i++ {
				err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp)
				if err != nil && !errors.Is(err, transport.ErrTimeout) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			_ = f.Unlink("L0", 5)
			_ = f.ReLink("L0", 5)
			_ = f.SetErrorRate("S0", -1, i%50, 0)
		}
	}()
	wg.Wait()
	close(stop)
}

func TestAttach(t *testing.T) {
	f := load(t, "dualhomed")
	for _, tt := range []struct{ id, node string }{{"", "dual"}, {"swB", "swB"}, {"thin 1x host", "thin"}} {
		ep := attach(t, f, tt.id)
		if ep.Node() != tt.node {
			t.Errorf("%q attached to %q", tt.id, ep.Node())
		}
	}
	// A failed Attach is a nil interface, not one holding a nil
	// *Endpoint: a caller's "tr != nil" must not pass it on.
	if tr, err := f.Attach("nope"); !errors.Is(err, ErrNoNode) || tr != nil {
		t.Errorf("Attach(nope) = %#v, %v; want nil, ErrNoNode", tr, err)
	}
	if tr, err := new(Fabric).Attach(""); !errors.Is(err, transport.ErrNoDevice) || tr != nil {
		t.Errorf("Attach on an empty fabric = %#v, %v; want nil, transport.ErrNoDevice", tr, err)
	}
	ep := attach(t, f, "swA")
	if pi := portInfo(t, ep, "0", 0); pi.LocalPortNum != 0 {
		t.Errorf("switch attach port %d", pi.LocalPortNum)
	}
	_ = ep.Close()
	req := make([]byte, 256)
	if err := ep.Exchange(context.Background(), 0xffff, req, req); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}

// TestLinkWidths: a 1x link and mixed widths/speeds (highest common value).
func TestLinkWidths(t *testing.T) {
	f := load(t, "mixed")
	ep := attach(t, f, "") // SwA port 0
	tests := []struct {
		port         uint32
		w, s, e, fdr uint8
		wantEPISpeed uint8
		description  string
	}{
		{1, 2, 4, 2, 1, 0, "4xEDR"},
		{3, 2, 1, 0, 0, 0, "4xSDR"},
		{5, 2, 4, 0, 1, 1, "4xFDR10"},
		{6, 8, 4, 0, 0, 0, "12xQDR"},
		{7, 16, 4, 4, 1, 0, "2xHDR"},
	}
	for _, tt := range tests {
		pi := portInfo(t, ep, "0", tt.port)
		if pi.LinkWidthActive != tt.w || pi.LinkSpeedActive != tt.s || pi.LinkSpeedExtActive != tt.e {
			t.Errorf("%s: w %d s %d e %d", tt.description, pi.LinkWidthActive, pi.LinkSpeedActive, pi.LinkSpeedExtActive)
		}
		epi := mustGet(t, ep, "0", smp.AttrMlnxExtPortInfo, tt.port).Data
		if epi[15] != tt.wantEPISpeed {
			t.Errorf("%s: EPI active %d", tt.description, epi[15])
		}
	}
	f2 := load(t, "dualhomed")
	ep2 := attach(t, f2, "thin")
	if pi := portInfo(t, ep2, "0", 1); pi.LinkWidthActive != 1 || pi.LinkWidthEnabled != 1 {
		t.Errorf("1x link %+v", pi)
	}
}

func FuzzExchange(f *testing.F) {
	fab, err := Load(fabricPath("loop"), nil)
	if err != nil {
		f.Fatal(err)
	}
	_ = fab.RunSM("")
	ep, _ := fab.AttachEndpoint("")
	for _, p := range []string{"0", "0,1,2", "0,1,2,4,2"} {
		pp, _ := smp.ParseDRPath(p)
		for _, a := range []uint16{smp.AttrNodeInfo, smp.AttrPortInfo, smp.AttrLinearForwardingTable, smp.AttrPKeyTable} {
			gm := smp.NewGet(pp, a, 1)
			b, _ := gm.MarshalBinary()
			f.Add(b, uint16(0xffff))
			b[3] = smp.MethodSet
			f.Add(b, uint16(0xffff))
		}
	}
	f.Fuzz(func(t *testing.T, req []byte, dlid uint16) {
		if len(req) < 256 {
			req = append(req, make([]byte, 256-len(req))...)
		}
		resp := make([]byte, 256)
		_ = ep.Exchange(context.Background(), dlid, req, resp)
	})
}

func BenchmarkExchange(b *testing.B) {
	f, err := Generate("fattree:levels=3,radix=16", nil)
	if err != nil {
		b.Fatal(err)
	}
	ep, _ := f.AttachEndpoint("")
	// host -> leaf -> agg -> core -> agg -> leaf: 5 hops, PortInfo.
	gm := smp.NewGet(path(b, "0,1,9,9,2,1"), smp.AttrPortInfo, 3)
	req, _ := gm.MarshalBinary()
	resp := make([]byte, 256)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExchangeParallel(b *testing.B) {
	f, err := Generate("fattree:levels=3,radix=16", nil)
	if err != nil {
		b.Fatal(err)
	}
	gm := smp.NewGet(path(b, "0,1,9,9,2,1"), smp.AttrNodeInfo, 0)
	req, _ := gm.MarshalBinary()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ep, _ := f.AttachEndpoint("")
		resp := make([]byte, 256)
		for pb.Next() {
			if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkBuildFatTree50k builds a 3-level fat tree with 62,208 hosts
// and reports the retained bytes per node.
func BenchmarkBuildFatTree50k(b *testing.B) {
	const spec = "fattree:levels=3,radix=48,hosts=36,leaves=36"
	b.ReportAllocs()
	var f *Fabric
	for b.Loop() {
		var err error
		if f, err = Generate(spec, nil); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	f = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, _ = Generate(spec, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(f.NumNodes()), "bytes/node")
	b.ReportMetric(float64(f.NumNodes()), "nodes")
	runtime.KeepAlive(f)
}

// TestExtensionTokens: mtu= and vl= on port lines (ours; ibsim ignores
// them, see TestExtensionLoadsInIbsim).
func TestExtensionTokens(t *testing.T) {
	f := load(t, "ext")
	ep := attach(t, f, "")
	tests := []struct {
		port                  uint32
		mtuCap, nmtu, vl, ops uint8
	}{
		{0, 3, 1, 4, 4},
		{1, 5, 5, 3, 3},
		{2, 5, 3, 4, 4},
		{3, 4, 4, 4, 4},
	}
	for _, tt := range tests {
		pi := portInfo(t, ep, "0", tt.port)
		if pi.MTUCap != tt.mtuCap || pi.NeighborMTU != tt.nmtu || pi.VLCap != tt.vl || pi.OperationalVLs != tt.ops {
			t.Errorf("port %d: MTUCap %d NeighborMTU %d VLCap %d OpVLs %d", tt.port, pi.MTUCap, pi.NeighborMTU, pi.VLCap, pi.OperationalVLs)
		}
	}
	pi := portInfo(t, ep, "0,2", 1)
	if pi.MTUCap != 3 || pi.NeighborMTU != 3 {
		t.Errorf("h2: %+v", pi)
	}
}

// TestExtensionLoadsInIbsim: real ibsim accepts a file with mtu=/vl= and
// reports its own defaults for those ports.
func TestExtensionLoadsInIbsim(t *testing.T) {
	requireTool(t, "ibsim")
	sock := startIbsim(t, fabricPath("ext"))
	rc := dialIbsim(t, sock, "")
	m := smp.NewGet(smp.DRPath{}, smp.AttrPortInfo, 1)
	b, _ := m.MarshalBinary()
	st, resp := rc.exchange(t, 0xffff, b)
	var pi smp.PortInfo
	_ = pi.UnmarshalBinary(resp[64:])
	if st != 0 || pi.MTUCap != 4 || pi.VLCap != 4 || pi.PortPhysicalState != 5 {
		t.Errorf("ibsim: status %d %+v", st, pi)
	}
}
