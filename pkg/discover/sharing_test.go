package discover

import "testing"

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
