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
		want    bool // the class is released afterwards
	}{
		{"no answer yet", nil, false},
		{"one single-port CA", [][]byte{ca1}, false},
		{"two single-port CAs", [][]byte{ca1, ca1}, true},
		{"single-port routers", [][]byte{router1, ca1, router1}, true},
		{"a switch first", [][]byte{sw, ca1, ca1, ca1}, false},
		{"a switch after release", [][]byte{ca1, ca1, sw}, false},
		{"a dual-ported CA", [][]byte{ca1, ca2, ca1}, false},
	} {
		var s sharing
		for _, a := range tc.answers {
			s.note(9, 5, a)
		}
		if got := s.released(9, 5); got != tc.want {
			t.Errorf("%s: released %v, want %v", tc.name, got, tc.want)
		}
		if s.released(1, 5) {
			t.Errorf("%s: another entry port's class released (nothing learnt)", tc.name)
		}
	}
}

// TestSharingKeys: probes by one port number of sibling parents (reached
// from the same node, or by the same port number) share a key; those of
// other parents, or by another port number, share none.
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
		a1, a2 := s.keys(x)
		b1, b2 := s.keys(tc.pp)
		if got := a1 == b1 || a2 == b2 || a1 == b2 || a2 == b1; got != tc.shared {
			t.Errorf("%s: keys %d,%d and %d,%d: shared %v, want %v", tc.name, a1, a2, b1, b2, got, tc.shared)
		}
	}
}
