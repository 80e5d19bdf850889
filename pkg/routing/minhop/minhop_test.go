package minhop

import (
	"bytes"
	"testing"
)

// TestLFTsOrderAndCounts: switches A and B joined by two parallel links
// (A[2]-B[1], A[3]-B[2]), h1 on A[1], h2 and h3 on B[3] and B[4]. OpenSM
// takes B's end ports first (it has more), counts end-port LIDs only and
// routes the switches' LIDs last, so A sends h2 out of 2, h3 out of 3 and
// B's LID (loads 1, 1) out of 2; B sends h1 out of 1 and A's LID (loads
// 1, 0) out of 2. Routing in LID order counting every LID, as the
// embedded SM did, sends B's LID out of A[2] and h2 out of A[3].
func TestLFTsOrderAndCounts(t *testing.T) {
	none := Port{Peer: -1}
	link := func(n int32, p uint8) Port { return Port{Peer: n, PeerPort: p} }
	ca := func(lid uint16, sw int32, p uint8) Node {
		return Node{GUID: 0x100 + uint64(lid), SysGUID: 0x100 + uint64(lid), Ports: []Port{none, {LID: lid, Peer: sw, PeerPort: p}}}
	}
	g := &Graph{Nodes: []Node{
		{GUID: 0xa, SysGUID: 0xa, Switch: true, Ports: []Port{{LID: 1, Peer: -1}, link(2, 1), link(1, 1), link(1, 2), none}},
		{GUID: 0xb, SysGUID: 0xb, Switch: true, Ports: []Port{{LID: 2, Peer: -1}, link(0, 2), link(0, 3), link(3, 1), link(4, 1)}},
		ca(3, 0, 1),
		ca(4, 1, 3),
		ca(5, 1, 4),
	}}
	lfts, err := LFTs(g)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{{NoRoute, 0, 2, 1, 2, 3}, {NoRoute, 2, 0, 1, 3, 4}} {
		if got := lfts[i]; len(got) != 64 || !bytes.Equal(got[:6], want) || bytes.Count(got[6:], []byte{NoRoute}) != 58 {
			t.Errorf("switch %d: LFT %v, want %v then NoRoute to 63", i, got[:6], want)
		}
	}
	for i := 2; i < 5; i++ {
		if lfts[i] != nil {
			t.Errorf("CA %d has an LFT", i)
		}
	}
}

// TestLFTsSwitchWithoutLID: an end port hanging off a switch without a
// LID is routed by that switch (out of its port there) and by no other
// (OpenSM's NO_PATH: the path to a switch is found through its LID).
// Switches A (LID 1) and B (no LID) are linked A[1]-B[1]; h1 (LID 3) is
// on A[2], h2 (LID 4) on B[2].
func TestLFTsSwitchWithoutLID(t *testing.T) {
	none := Port{Peer: -1}
	g := &Graph{Nodes: []Node{
		{GUID: 0xa, SysGUID: 0xa, Switch: true, Ports: []Port{{LID: 1, Peer: -1}, {Peer: 1, PeerPort: 1}, {Peer: 2, PeerPort: 1}}},
		{GUID: 0xb, SysGUID: 0xb, Switch: true, Ports: []Port{{Peer: -1}, {Peer: 0, PeerPort: 1}, {Peer: 3, PeerPort: 1}}},
		{GUID: 0x103, SysGUID: 0x103, Ports: []Port{none, {LID: 3, Peer: 0, PeerPort: 2}}},
		{GUID: 0x104, SysGUID: 0x104, Ports: []Port{none, {LID: 4, Peer: 1, PeerPort: 2}}},
	}}
	lfts, err := LFTs(g)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{{NoRoute, 0, NoRoute, 2, NoRoute}, {NoRoute, 1, NoRoute, 1, 2}} {
		if got := lfts[i]; len(got) != 64 || !bytes.Equal(got[:5], want) {
			t.Errorf("switch %d: LFT %v, want %v", i, got[:5], want)
		}
	}
}

// BenchmarkLFTs routes a 2-level fat tree: 96 leaves of 64 hosts, each
// leaf linked once to each of 48 spines (6,144 hosts, 144 switches).
func BenchmarkLFTs(b *testing.B) {
	const leaves, spines, hosts = 96, 48, 64
	g := &Graph{}
	// nodes: spines, then leaves, then hosts
	leaf := func(l int) int32 { return int32(spines + l) }
	host := func(l, h int) int32 { return int32(spines + leaves + l*hosts + h) }
	lid := uint16(1)
	for s := 0; s < spines; s++ {
		ports := []Port{{LID: lid, Peer: -1}}
		lid++
		for l := 0; l < leaves; l++ {
			ports = append(ports, Port{Peer: leaf(l), PeerPort: uint8(hosts + 1 + s)})
		}
		g.Nodes = append(g.Nodes, Node{GUID: uint64(0x1000 + s), SysGUID: uint64(0x1000 + s), Switch: true, Ports: ports})
	}
	for l := 0; l < leaves; l++ {
		ports := []Port{{LID: lid, Peer: -1}}
		lid++
		for h := 0; h < hosts; h++ {
			ports = append(ports, Port{Peer: host(l, h), PeerPort: 1})
		}
		for s := 0; s < spines; s++ {
			ports = append(ports, Port{Peer: int32(s), PeerPort: uint8(1 + l)})
		}
		g.Nodes = append(g.Nodes, Node{GUID: uint64(0x2000 + l), SysGUID: uint64(0x2000 + l), Switch: true, Ports: ports})
	}
	for l := 0; l < leaves; l++ {
		for h := 0; h < hosts; h++ {
			g.Nodes = append(g.Nodes, Node{GUID: uint64(0x10000 + l*hosts + h), SysGUID: uint64(0x10000 + l*hosts + h),
				Ports: []Port{{Peer: -1}, {LID: lid, Peer: leaf(l), PeerPort: uint8(1 + h)}}})
			lid++
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LFTs(g); err != nil {
			b.Fatal(err)
		}
	}
}
