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
