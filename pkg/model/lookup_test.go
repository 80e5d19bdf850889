package model

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestResolveLID covers every kind of port specification, LIDs of an LMC
// range, and names with leading or trailing spaces (matched exactly
// first, then trimmed).
func TestResolveLID(t *testing.T) {
	b := newBuilder(t)
	s := b.sw(0x10, 4, 1)
	s.Desc.SetString(" spine one ")
	one := b.ca(0x100, 1, 2)
	one.Desc.SetString(" host one")
	other := b.ca(0x200, 1, 3)
	other.Desc.SetString("host one")
	two := b.ca(0x300, 1, 4)
	two.Desc.SetString("host two ")
	y := b.node(smp.NodeCA, 0x400, 1, "lmc host")
	yp := y.EnsurePort(1, 0x401)
	yp.Info.LID, yp.Info.LMC, yp.HasInfo = 8, 2, true
	if err := b.f.RegisterPort(yp); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		spec string
		node *Node
		lid  uint16
		err  error
	}{
		{"1", s, 1, nil},
		{"0x2", one, 2, nil},
		{"8", y, 8, nil},
		{"9", y, 9, nil},
		{"0xb", y, 11, nil},
		{" 10 ", y, 10, nil},
		{"12", nil, 0, ErrNotFound},
		{"0x0000000000000401", y, 8, nil}, // port GUID: base LID
		{"0x0000000000000400", y, 8, nil}, // node GUID
		{"0x0000000000000010", s, 1, nil},
		{"lmc host", y, 8, nil},
		{" spine one ", s, 1, nil}, // exact
		{"spine one", s, 1, nil},   // trimmed
		{" host one", one, 2, nil}, // exact, although "host one" trims the same
		{"host one", other, 3, nil},
		{"host one ", nil, 0, ErrAmbiguous}, // no exact match; trimmed: both
		{"host two ", two, 4, nil},
		{"host two", two, 4, nil},
		{" host two ", two, 4, nil},
		{"host three", nil, 0, ErrNotFound},
	}
	for _, tc := range tests {
		p, lid, err := b.f.ResolveLID(tc.spec, nil)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%q: err %v, want %v", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if p.Node != tc.node || lid != tc.lid {
			t.Errorf("%q: node %q lid %d, want %q lid %d", tc.spec, p.Node.Description(), lid, tc.node.Description(), tc.lid)
		}
		if q, err := b.f.ResolvePort(tc.spec, nil); err != nil || q != p {
			t.Errorf("%q: ResolvePort %v, %v", tc.spec, q, err)
		}
	}

	// A node name map name is matched the same way.
	names := func(n *Node) string {
		if n == two {
			return " mapped "
		}
		return n.Description()
	}
	for _, spec := range []string{" mapped ", "mapped"} {
		if p, _, err := b.f.ResolveLID(spec, names); err != nil || p.Node != two {
			t.Errorf("mapped %q: %v, %v", spec, p, err)
		}
	}
}
