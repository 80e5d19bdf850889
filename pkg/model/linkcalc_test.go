package model

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// pair returns two linked CA ports with the given PortInfo fields.
func pair(local, remote smp.PortInfo, remoteInfo bool) *PhysPort {
	x := &Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 1, NodeGUID: 1}}
	y := &Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 1, NodeGUID: 2}}
	p := x.EnsurePort(1, 1)
	q := y.EnsurePort(1, 2)
	p.Info, p.HasInfo = local, true
	q.Info, q.HasInfo = remote, remoteInfo
	p.Link(q)
	return p
}

func TestCalcLinkMTU(t *testing.T) {
	tests := []struct {
		name          string
		local, remote smp.PortInfo
		remoteInfo    bool
		unlinked      bool
		want          LinkCalc
	}{
		{"equal caps", smp.PortInfo{MTUCap: 5, NeighborMTU: 5}, smp.PortInfo{MTUCap: 5}, true, false,
			LinkCalc{Value: 5, Local: 5, Remote: 5, HasRemote: true, Current: 5}},
		{"lower remote, changes", smp.PortInfo{MTUCap: 5, NeighborMTU: 5}, smp.PortInfo{MTUCap: 4}, true, false,
			LinkCalc{Value: 4, Local: 5, Remote: 4, HasRemote: true, Current: 5, Mismatch: true}},
		{"lower local, already set", smp.PortInfo{MTUCap: 3, NeighborMTU: 3}, smp.PortInfo{MTUCap: 5}, true, false,
			LinkCalc{Value: 3, Local: 3, Remote: 5, HasRemote: true, Current: 3}},
		{"no remote: current", smp.PortInfo{MTUCap: 5, NeighborMTU: 4}, smp.PortInfo{}, false, true,
			LinkCalc{Value: 4, Local: 5, Current: 4}},
		{"remote without PortInfo: current", smp.PortInfo{MTUCap: 5, NeighborMTU: 2}, smp.PortInfo{MTUCap: 1}, false, false,
			LinkCalc{Value: 2, Local: 5, Current: 2}},
		{"no remote, current 0: forced", smp.PortInfo{MTUCap: 5}, smp.PortInfo{}, false, true,
			LinkCalc{Value: 1, Local: 5, Forced: true}},
		{"both caps 0: forced", smp.PortInfo{NeighborMTU: 1}, smp.PortInfo{}, true, false,
			LinkCalc{Value: 1, HasRemote: true, Current: 1, Forced: true}},
		{"cap 0 one side", smp.PortInfo{MTUCap: 0, NeighborMTU: 4}, smp.PortInfo{MTUCap: 4}, true, false,
			LinkCalc{Value: 1, Local: 0, Remote: 4, HasRemote: true, Current: 4, Mismatch: true, Forced: true}},
	}
	for _, tt := range tests {
		p := pair(tt.local, tt.remote, tt.remoteInfo)
		if tt.unlinked {
			p.Unlink()
		}
		got := CheckLinkMTU(p)
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		if CalcLinkMTU(p) != tt.want.Value {
			t.Errorf("%s: CalcLinkMTU %d", tt.name, CalcLinkMTU(p))
		}
	}
}

func TestCalcLinkOpVLs(t *testing.T) {
	tests := []struct {
		name          string
		local, remote smp.PortInfo
		remoteInfo    bool
		max           uint8
		want          LinkCalc
	}{
		{"VL0-7 both", smp.PortInfo{VLCap: 4, OperationalVLs: 4}, smp.PortInfo{VLCap: 4}, true, 0,
			LinkCalc{Value: 4, Local: 4, Remote: 4, HasRemote: true, Current: 4}},
		{"mismatch", smp.PortInfo{VLCap: 5, OperationalVLs: 5}, smp.PortInfo{VLCap: 3}, true, 0,
			LinkCalc{Value: 3, Local: 5, Remote: 3, HasRemote: true, Current: 5, Mismatch: true}},
		{"capped by option", smp.PortInfo{VLCap: 5, OperationalVLs: 1}, smp.PortInfo{VLCap: 5}, true, 2,
			LinkCalc{Value: 2, Local: 5, Remote: 5, HasRemote: true, Current: 1, Capped: true}},
		{"no remote, current 0", smp.PortInfo{VLCap: 4}, smp.PortInfo{}, false, 0,
			LinkCalc{Value: 1, Local: 4, Forced: true}},
		{"no remote, current above default max", smp.PortInfo{VLCap: 5, OperationalVLs: 7}, smp.PortInfo{}, false, 0,
			LinkCalc{Value: 5, Local: 5, Current: 7, Capped: true}},
		{"zero cap, forced, then max 1", smp.PortInfo{VLCap: 0, OperationalVLs: 2}, smp.PortInfo{VLCap: 3}, true, 1,
			LinkCalc{Value: 1, Remote: 3, HasRemote: true, Current: 2, Mismatch: true, Forced: true}},
	}
	for _, tt := range tests {
		p := pair(tt.local, tt.remote, tt.remoteInfo)
		got := CheckLinkOpVLs(p, tt.max)
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		if CalcLinkOpVLs(p, tt.max) != tt.want.Value {
			t.Errorf("%s: CalcLinkOpVLs %d", tt.name, CalcLinkOpVLs(p, tt.max))
		}
	}
}

// pathFabric: CA A - switch S1 - switch S2 - CA B; PortInfo set per port.
func pathFabric(t *testing.T) (a, s1in, s1out, s2in, s2out, bp *PhysPort, s1, s2 *Node) {
	b := newBuilder(t)
	s1 = b.sw(0x10, 4, 1)
	s2 = b.sw(0x20, 4, 2)
	ca := b.ca(0x100, 1, 3)
	cb := b.ca(0x200, 1, 4)
	b.link(ca, 1, s1, 1)
	b.link(s1, 2, s2, 1)
	b.link(s2, 2, cb, 1)
	return ca.Port(1), s1.Port(1), s1.Port(2), s2.Port(1), s2.Port(2), cb.Port(1), s1, s2
}

func setLink(p *PhysPort, mtu, width, speed, ext uint8, caps uint32) {
	p.Info.MTUCap = mtu
	p.Info.LinkWidthActive = width
	p.Info.LinkSpeedActive = speed
	p.Info.LinkSpeedExtActive = ext
	p.Info.CapabilityMask = caps
	p.HasInfo = true
}

func TestPathParams(t *testing.T) {
	const ext = smp.CapIsExtendedSpeedsSupp
	a, s1in, s1out, s2in, s2out, bp, s1, s2 := pathFabric(t)
	path := []*PhysPort{a, s1in, s1out, s2in, s2out, bp}
	type conf struct {
		mtu, width, speed, ext uint8
		caps                   uint32
	}
	edr4 := conf{5, smp.Width4x, smp.SpeedQDR, smp.ExtSpeedEDR, ext}
	tests := []struct {
		name     string
		ports    [6]conf
		sw1, sw2 uint32 // switch port 0 capability masks
		mtu      uint8
		mtuPort  int
		rate     uint8
		ratePort int
	}{
		{"all 4x EDR", [6]conf{edr4, edr4, edr4, edr4, edr4, edr4}, ext, ext, 5, 0, smp.Rate100, 0},
		{"switch without ext-speed cap counts QDR",
			[6]conf{edr4, edr4, edr4, edr4, edr4, edr4}, ext, 0, 5, 0, smp.Rate40, 3},
		{"lower MTU at s1 egress, first of equals wins",
			[6]conf{edr4, edr4, {4, smp.Width4x, smp.SpeedQDR, smp.ExtSpeedEDR, 0}, {4, smp.Width4x, smp.SpeedQDR, smp.ExtSpeedEDR, 0}, edr4, edr4},
			ext, ext, 4, 2, smp.Rate100, 0},
		{"rank not code: 12x SDR (30G, code 4) below 1x EDR (25G, code 15)",
			[6]conf{{5, smp.Width1x, smp.SpeedQDR, smp.ExtSpeedEDR, ext}, edr4, edr4, edr4, edr4, {5, smp.Width12x, smp.SpeedSDR, 0, 0}},
			ext, ext, 5, 0, smp.Rate30, 5},
		{"CA without ext-speed cap",
			[6]conf{{5, smp.Width4x, smp.SpeedQDR, smp.ExtSpeedEDR, 0}, edr4, edr4, edr4, edr4, edr4},
			ext, ext, 5, 0, smp.Rate40, 0},
		{"1x SDR MTU 256 at destination",
			[6]conf{edr4, edr4, edr4, edr4, edr4, {1, smp.Width1x, smp.SpeedSDR, 0, 0}},
			ext, ext, 1, 5, smp.Rate2_5, 5},
	}
	for _, tt := range tests {
		for i, c := range tt.ports {
			setLink(path[i], c.mtu, c.width, c.speed, c.ext, c.caps)
		}
		s1.Port(0).Info.CapabilityMask = tt.sw1
		s2.Port(0).Info.CapabilityMask = tt.sw2
		got, err := PathParams(path)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.MTU != tt.mtu || got.MTUPort != path[tt.mtuPort] || got.Rate != tt.rate || got.RatePort != path[tt.ratePort] {
			t.Errorf("%s: mtu %d at %v, rate %d at %v; want mtu %d at %v, rate %d at %v",
				tt.name, got.MTU, got.MTUPort, got.Rate, got.RatePort,
				tt.mtu, path[tt.mtuPort], tt.rate, path[tt.ratePort])
		}
	}
	// Single port (loopback path).
	if got, err := PathParams(path[:1]); err != nil || got.MTUPort != a || got.RatePort != a {
		t.Errorf("single port: %+v %v", got, err)
	}
	if _, err := PathParams(nil); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := PathParams([]*PhysPort{a, nil}); err == nil {
		t.Error("nil port accepted")
	}
	s2in.HasInfo = false
	if _, err := PathParams(path); !errors.Is(err, ErrNoPortInfo) {
		t.Errorf("port without info: %v", err)
	}
}

func TestPortRateSwitchCaps(t *testing.T) {
	_, _, s1out, _, _, _, s1, _ := pathFabric(t)
	setLink(s1out, 5, smp.Width4x, smp.SpeedQDR, smp.ExtSpeedHDR, 0)
	s1.Port(0).Info.CapabilityMask = smp.CapIsExtendedSpeedsSupp
	if got := PortRate(s1out); got != smp.Rate200 {
		t.Errorf("4x HDR with port 0 cap: %d, want %d", got, smp.Rate200)
	}
	s1.Port(0).Info.CapabilityMask = 0
	s1out.Info.CapabilityMask = smp.CapIsExtendedSpeedsSupp // ignored on switch ports
	if got := PortRate(s1out); got != smp.Rate40 {
		t.Errorf("4x HDR without port 0 cap: %d, want %d", got, smp.Rate40)
	}
}
