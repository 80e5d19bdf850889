package chassis

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestMellanoxDescription: libibnetdisc's parsing of IS4 director chip
// descriptions, "MF0;<system>:<type>/<slot>[:<board>]/U<chip>".
func TestMellanoxDescription(t *testing.T) {
	tests := []struct {
		desc    string
		devID   uint16
		found   bool
		slot    slotKind
		num     int
		chip    int
		typeStr string
	}{
		{"MF0;sw-a:IS5300/S01/U1", devIS4, true, slotSpine, 1, 1, "IS5300"},
		{"MF0;sw-a:IS5300/L12/U1", devIS4, true, slotLine, 12, 1, "IS5300"},
		{"MF0;sw-a:IS5600/L02:LB4/U2", devIS4, true, slotLine, 2, 2, "IS5600"},
		{"MF0;x:A-very-long-system-type-name/S3/U1", devIS4, true, slotSpine, 3, 1, "A-very-long-system-"},
		{"MF0;sw-a:IS5300/L37/U1", devIS4, true, slotLine, 37, 1, "IS5300"}, // libibnetdisc accepts one slot too many
		{"MF0;sw-a:IS5300/L38/U1", devIS4, true, slotLine, 0, 1, ""},
		{"MF0;sw-a:IS5300/X01/U1", devIS4, false, slotNone, 0, 1, ""},
		{"MF0;sw-a:IS5300/S01/1", devIS4, false, slotNone, 0, 0, ""},
		{"MF0;sw-a:IS5300/S01", devIS4, false, slotNone, 0, 0, ""},
		{"MF0;sw-a-no-type", devIS4, false, slotNone, 0, 0, ""},
		{"MF1;sw-a:IS5300/S01/U1", devIS4, false, slotNone, 0, 0, ""},
		{"MF0;sw-a:IS5300/S01/U1", 0xc738, false, slotNone, 0, 0, ""}, // not an IS4
	}
	for _, tt := range tests {
		n := &model.Node{Info: smp.NodeInfo{NodeType: smp.NodeSwitch, NumPorts: 36, VendorID: vendorMellanox, DeviceID: tt.devID}}
		n.Ports = make([]*model.PhysPort, 37)
		for p := range n.Ports {
			n.Ports[p] = &model.PhysPort{Node: n, Num: uint8(p)}
		}
		n.Desc.SetString(tt.desc)
		g := &Grouping{chip: map[*model.Node]*chip{}, ext: map[*model.PhysPort]int{}}
		g.fillMellanox(n)
		c := g.chip[n]
		if c == nil {
			c = &chip{}
		}
		if c.found != tt.found || c.slot != tt.slot || c.slotNum != tt.num || c.chipNum != tt.chip || c.typeStr != tt.typeStr {
			t.Errorf("%q: found %v slot %d num %d chip %d type %q; want %v %d %d %d %q", tt.desc,
				c.found, c.slot, c.slotNum, c.chipNum, c.typeStr, tt.found, tt.slot, tt.num, tt.chip, tt.typeStr)
		}
		// line ports 1-18 are external ports 1-18
		wantExt := 0
		if tt.found && tt.slot == slotLine && tt.typeStr != "" {
			wantExt = 18
		}
		if got := len(g.ext); got != wantExt {
			t.Errorf("%q: %d external ports, want %d", tt.desc, got, wantExt)
		}
	}
}

// TestChassisGUID: the chassis GUID rules of Topspin/InfiniCon and Xsigo.
func TestChassisGUID(t *testing.T) {
	node := func(vendor uint32, sys uint64) *model.Node {
		return &model.Node{Info: smp.NodeInfo{NodeType: smp.NodeSwitch, VendorID: vendor, SystemImageGUID: sys}}
	}
	tests := []struct {
		n    *model.Node
		want uint64
	}{
		{node(vendorTopspin, 0x0005ad0001000abc), 0x0005ad0000000abc},
		{node(vendorSilver, 0x00066a00ff000001), 0x00066a0000000001},
		{node(vendorMellanox, 0x0002c9030011ffee), 0x0002c9030011ffee},
		{node(vendorXsigo, 0x0013970102000011), 0x0013970100000011},
		{node(vendorMellanox, 0x0013970177000011), 0x0013970100000011}, // an Xsigo GUID from any vendor
		{node(vendorXsigo, 0x0013970555000011), 0x0013970555000011},
	}
	for _, tt := range tests {
		if got := chassisGUID(tt.n); got != tt.want {
			t.Errorf("vendor %#x sysimg %#x: chassis GUID %#x, want %#x", tt.n.Info.VendorID, tt.n.Info.SystemImageGUID, got, tt.want)
		}
	}
}

// TestAtoi: C atoi, as libibnetdisc reads slot and chip numbers.
func TestAtoi(t *testing.T) {
	for s, want := range map[string]int{"01": 1, " 7x": 7, "": 0, "-3": -3, "+12": 12, "x1": 0} {
		if got := atoi(s); got != want {
			t.Errorf("atoi(%q) = %d, want %d", s, got, want)
		}
	}
}
