package discover

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestSharing: a class of probes is released from the port-number rule
// after sharingEvidence answers from single-port CAs or routers, held to
// it for the level by any other answer, and classes are told apart by the
// port the parent was entered by.
func TestSharing(t *testing.T) {
	info := func(typ, ports byte) []byte {
		b := make([]byte, 64)
		b[2], b[3] = typ, ports
		return b
	}
	ca1, ca2, router1, sw := info(1, 1), info(1, 2), info(3, 1), info(2, 36)
	for _, tc := range []struct {
		name    string
		answers [][]byte
		want    int // key of a probe of the class afterwards
	}{
		{"no answer yet", nil, 5},
		{"one single-port CA", [][]byte{ca1}, 5},
		{"two single-port CAs", [][]byte{ca1, ca1}, -1},
		{"single-port routers", [][]byte{router1, ca1, router1}, -1},
		{"a switch first", [][]byte{sw, ca1, ca1, ca1}, 5},
		{"a switch after release", [][]byte{ca1, ca1, sw}, 5},
		{"a dual-ported CA", [][]byte{ca1, ca2, ca1}, 5},
	} {
		var s sharing
		for _, a := range tc.answers {
			s.note(9, 5, a)
		}
		if got := s.key(9, 5); got != tc.want {
			t.Errorf("%s: key %d, want %d", tc.name, got, tc.want)
		}
		if got := s.key(1, 5); got != 5 {
			t.Errorf("%s: another entry port's class: key %d, want 5 (nothing learnt)", tc.name, got)
		}
	}
}

// TestSharingKeys: probes by one port number of sibling parents (reached
// from the same node, or by the same port number) share a key; those of
// other parents, or by another port number, share none; a released class
// has no key.
func TestSharingKeys(t *testing.T) {
	port := func(num uint8, path ...uint8) *model.PhysPort {
		var p smp.DRPath
		for _, h := range path {
			var err error
			if p, err = p.Extend(h); err != nil {
				t.Fatal(err)
			}
		}
		return &model.PhysPort{Num: num, Node: &model.Node{Path: p}}
	}
	var s sharing
	x := port(3, 1, 13)
	for _, tc := range []struct {
		name   string
		pp     *model.PhysPort
		shared bool
	}{
		{"same parent, same port number", port(3, 1, 14), true},
		{"reached by the same port number", port(3, 2, 13), true},
		{"neither", port(3, 2, 14), false},
		{"same parent, another port number", port(4, 1, 14), false},
	} {
		a1, a2 := s.keys(9, x)
		b1, b2 := s.keys(9, tc.pp)
		if got := a1 == b1 || a2 == b2 || a1 == b2 || a2 == b1; got != tc.shared {
			t.Errorf("%s: keys %d,%d and %d,%d: shared %v, want %v", tc.name, a1, a2, b1, b2, got, tc.shared)
		}
	}
	s.note(9, 3, []byte{1, 1, 1, 1})
	s.note(9, 3, []byte{1, 1, 1, 1})
	if k1, k2 := s.keys(9, x); k1 != -1 || k2 != -1 {
		t.Errorf("released class: keys %d,%d, want -1,-1", k1, k2)
	}
}
