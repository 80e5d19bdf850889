package smp

import (
	"errors"
	"strings"
	"testing"
)

// TestExtendHopLimit: Extend takes a route to exactly 63 hops (the most
// a DR SMP's hop count and 64-byte initial path hold) and refuses the
// 64th, leaving the route as it was; a 63-hop route goes through a MAD
// and back unchanged.
func TestExtendHopLimit(t *testing.T) {
	if MaxHops != 63 {
		t.Fatalf("MaxHops = %d, want 63", MaxHops)
	}
	var p DRPath
	for i := 1; i <= 63; i++ {
		q, err := p.Extend(uint8(i%254 + 1))
		if err != nil {
			t.Fatalf("Extend to %d hops: %v", i, err)
		}
		if q.Len() != uint8(i) || q.Last() != uint8(i%254+1) || p.Len() != uint8(i-1) {
			t.Fatalf("hop %d: Len %d Last %d (original now %d hops)", i, q.Len(), q.Last(), p.Len())
		}
		p = q
	}
	q, err := p.Extend(5)
	if !errors.Is(err, ErrHopCount) {
		t.Fatalf("64th hop: %v, want ErrHopCount", err)
	}
	if q != p || q.Len() != 63 {
		t.Errorf("a refused Extend changed the route: %s", q)
	}
	// Parsed routes meet the same limit at the same place.
	at62, err := ParseDRPath("0" + strings.Repeat(",3", 62))
	if err != nil {
		t.Fatal(err)
	}
	at63, err := at62.Extend(4)
	if err != nil || at63.Len() != 63 || at63.String() != "0"+strings.Repeat(",3", 62)+",4" {
		t.Fatalf("62+1 hops: %s %v", at63, err)
	}
	if _, err := at63.Extend(4); !errors.Is(err, ErrHopCount) {
		t.Errorf("63+1 hops: %v, want ErrHopCount", err)
	}
	// And a 63-hop route survives a MAD.
	m := NewGet(p, AttrNodeInfo, 0)
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatalf("marshal a 63-hop SMP: %v", err)
	}
	var back MAD
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatalf("unmarshal a 63-hop SMP: %v", err)
	}
	if back.HopCount != 63 || back.Path() != p {
		t.Errorf("63-hop SMP came back with hop count %d, path %s", back.HopCount, back.Path())
	}
}
