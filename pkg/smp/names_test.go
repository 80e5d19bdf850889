package smp

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

func portInfoOf(t *testing.T, name string) *PortInfo {
	t.Helper()
	m := decodeMAD(t, mustVector(t, name))
	if m.AttrID != AttrPortInfo {
		t.Fatalf("%s: attr %#x", name, m.AttrID)
	}
	p := new(PortInfo)
	if err := p.UnmarshalBinary(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	return p
}

func fdr10Of(t *testing.T, name string) bool {
	t.Helper()
	m := decodeMAD(t, mustVector(t, name))
	var e MlnxExtPortInfo
	if err := e.UnmarshalBinary(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	return e.FDR10()
}

// The link tokens computed from the captured PortInfo/ExtPortInfo equal
// what the real ibnetdiscover -p printed for the same fabric.
func TestLinkTokensMatchIbnetdiscover(t *testing.T) {
	f, err := os.Open("testdata/speeds.ibnetdiscover-p.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	printed := map[string]string{} // "<guid> <port>" -> "4x EDR"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		printed[fs[3]+" "+fs[2]] = fs[4] + " " + fs[5]
	}
	sw0 := portInfoOf(t, "sp-portinfo-0-0")
	tests := []struct {
		key, pi string
		caps    *PortInfo // nil: the port itself
		mepi    string
		token   string
	}{
		{"0x7cfe900300a0b000 1", "sp-portinfo-0-1", sw0, "", "4xEDR"},
		{"0x7cfe900300a0b000 2", "sp-portinfo-0-2", sw0, "sp-mepi-0-2", "4xFDR10"},
		{"0x7cfe900300a0b000 3", "sp-portinfo-0-3", sw0, "", "4xHDR"},
		{"0x7cfe900300a0b000 4", "sp-portinfo-0-4", sw0, "", "1xDDR"},
		{"0x7cfe900300a0b000 5", "sp-portinfo-0-5", sw0, "", "4xSDR"}, // down port
		{"0x0c42a10300000a01 1", "sp-portinfo-0,1", nil, "", "4xEDR"},
		{"0x0002c90300000b01 1", "sp-portinfo-0,2", nil, "sp-mepi-0,2", "4xFDR10"},
		{"0x0011750000000e01 1", "sp-portinfo-0,4", nil, "", "1xDDR"},
	}
	for _, tt := range tests {
		p := portInfoOf(t, tt.pi)
		caps := tt.caps
		if caps == nil {
			caps = p
		}
		fdr10 := tt.mepi != "" && fdr10Of(t, tt.mepi)
		got := LinkToken(p, caps, fdr10)
		if got != tt.token {
			t.Errorf("%s: %s, want %s", tt.key, got, tt.token)
		}
		spaced := WidthToken(p.LinkWidthActive) + " " + PortSpeedToken(p, caps, fdr10)
		if want := printed[tt.key]; spaced != want {
			t.Errorf("%s: %q, ibnetdiscover -p printed %q", tt.key, spaced, want)
		}
	}
	// Without port 0's capability mask the switch port's EDR is invisible,
	// and with no port 0 record at all the speed is unknown.
	p1 := portInfoOf(t, "sp-portinfo-0-1")
	if got := LinkToken(p1, p1, false); got != "4xQDR" {
		t.Errorf("switch port with its own (empty) caps: %s", got)
	}
	if got := LinkToken(p1, nil, false); got != "4x???" {
		t.Errorf("no port 0 record: %s", got)
	}
}

func TestSpeedToken(t *testing.T) {
	tests := []struct {
		ispeed, espeed uint8
		fdr10          bool
		want           string
	}{
		{1, 0, false, "SDR"},
		{2, 0, false, "DDR"},
		{4, 0, false, "QDR"},
		{4, 0, true, "FDR10"},
		{2, 0, true, "DDR"}, // FDR10 flag only counts at QDR
		{4, 1, false, "FDR"},
		{4, 2, false, "EDR"},
		{4, 4, false, "HDR"},
		{4, 8, false, "NDR"},
		{4, 32, false, "XDR"},
		{4, 2, true, "EDR"},
		{1, 2, false, "EDR"}, // extended speed wins whatever ispeed says
		{0, 0, false, "???"},
		{3, 0, false, "???"},
		{4, 16, false, "???"},
		{4, 3, false, "???"},
	}
	for _, tt := range tests {
		if got := SpeedToken(tt.ispeed, tt.espeed, tt.fdr10); got != tt.want {
			t.Errorf("SpeedToken(%d, %d, %v) = %q, want %q", tt.ispeed, tt.espeed, tt.fdr10, got, tt.want)
		}
	}
}

func TestAggregatedExtSpeed(t *testing.T) {
	const capExt = CapIsExtendedSpeedsSupp
	const capBoth = CapIsExtendedSpeedsSupp | CapIsCapabilityMask2Supp
	tests := []struct {
		name      string
		cap       uint32
		cap2      uint16
		ext, ext2 uint8
		want      uint8
	}{
		{"no ext cap", 0, 0, 2, 0, 0},
		{"EDR", capExt, 0, 2, 0, 2},
		{"NDR", capExt, 0, 8, 0, 8},
		{"XDR", capBoth, Cap2IsExtendedSpeeds2Supp, 0, 1, 32},
		{"ext2 without capmask2 bit", capExt, Cap2IsExtendedSpeeds2Supp, 4, 1, 4},
		{"ext2 without ExtendedSpeeds2", capBoth, 0, 4, 1, 4},
		{"ext2 zero", capBoth, Cap2IsExtendedSpeeds2Supp, 4, 0, 4},
		{"ext2 without ext cap", CapIsCapabilityMask2Supp, Cap2IsExtendedSpeeds2Supp, 4, 1, 0},
	}
	for _, tt := range tests {
		caps := &PortInfo{CapabilityMask: tt.cap, CapabilityMask2: tt.cap2}
		port := &PortInfo{LinkSpeedExtActive: tt.ext, LinkSpeedExtActive2: tt.ext2}
		if got := AggregatedExtSpeed(port, caps); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := AggregatedExtSpeed(&PortInfo{LinkSpeedExtActive: 2}, nil); got != 0 {
		t.Errorf("nil caps: %d", got)
	}
}

func TestCompactTokens(t *testing.T) {
	widths := map[uint8]string{0: "??", 1: "1x", 2: "4x", 3: "??", 4: "8x", 8: "12x", 16: "2x", 32: "??"}
	for w, want := range widths {
		if got := WidthToken(w); got != want {
			t.Errorf("WidthToken(%d) = %q, want %q", w, got, want)
		}
	}
	types := []struct {
		t                   uint8
		prefix, ports, text string
		lower               string
	}{
		{NodeCA, "H-", "CA", "Channel Adapter", "ca"},
		{NodeSwitch, "S-", "SW", "Switch", "switch"},
		{NodeRouter, "R-", "RT", "Router", "router"},
		{0, "?-", "??", "?(0)?", "???"},
		{4, "?-", "??", "?(4)?", "iwarp rnic"},
		{9, "?-", "??", "?(9)?", "???"},
	}
	for _, tt := range types {
		if NodeIDPrefix(tt.t) != tt.prefix || PortsTypeToken(tt.t) != tt.ports ||
			NodeTypeText(tt.t) != tt.text || NodeTypeLower(tt.t) != tt.lower {
			t.Errorf("type %d: %q %q %q %q", tt.t, NodeIDPrefix(tt.t), PortsTypeToken(tt.t), NodeTypeText(tt.t), NodeTypeLower(tt.t))
		}
	}
	if got := NodeID(NodeSwitch, 0x7cfe900300a0b000); got != "S-7cfe900300a0b000" {
		t.Error(got)
	}
	if got := NodeID(NodeCA, 0x11750000000e00); got != "H-0011750000000e00" {
		t.Error(got)
	}
}

func TestLibibmadTexts(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"width 1", LinkWidthText(1), "1X"},
		{"width 16", LinkWidthText(16), "2X"},
		{"width 3", LinkWidthText(3), "undefined (3)"},
		{"width mask 3", LinkWidthMaskText(3), "1X or 4X"},
		{"width mask 31", LinkWidthSupportedText(31), "1X or 4X or 8X or 12X or 2X"},
		{"width mask 2", LinkWidthSupportedText(2), "4X (IBA extension)"},
		{"width mask 0", LinkWidthMaskText(0), "undefined (0)"},
		{"width mask 33", LinkWidthSupportedText(33), "1X or undefined (33)"},
		{"speed 0", LinkSpeedText(0), "Extended speed"},
		{"speed 4", LinkSpeedText(4), "10.0 Gbps"},
		{"speed 3", LinkSpeedText(3), "undefined (3)"},
		{"speed mask 7", LinkSpeedMaskText(7), "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"},
		{"speed mask 1", LinkSpeedMaskText(1), "2.5 Gbps"},
		{"speed mask 4", LinkSpeedMaskText(4), "10.0 Gbps (IBA extension)"},
		{"speed mask 9", LinkSpeedMaskText(9), "2.5 Gbps or undefined (9)"},
		{"ext 0", LinkSpeedExtText(0), "No Extended Speed"},
		{"ext 1", LinkSpeedExtText(1), "14.0625 Gbps"},
		{"ext 2", LinkSpeedExtText(2), "25.78125 Gbps"},
		{"ext 4", LinkSpeedExtText(4), "53.125 Gbps"},
		{"ext 8", LinkSpeedExtText(8), "106.25 Gbps"},
		{"ext 3", LinkSpeedExtText(3), "undefined (3)"},
		{"ext mask 0", LinkSpeedExtMaskText(0), "0"},
		{"ext mask 15", LinkSpeedExtMaskText(15), "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps"},
		{"ext enabled 30", LinkSpeedExtEnabledText(30), "Extended link speeds disabled"},
		{"ext enabled 31", LinkSpeedExtEnabledText(31), "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps or undefined (31)"},
		{"state 2", PortStateText(2), "Initialize"},
		{"state 7", PortStateText(7), "?(7)"},
		{"phys 4", PhysStateText(4), "PortConfigurationTraining"},
		{"phys 6", PhysStateText(6), "LinkErrorRecovery"},
		{"phys 9", PhysStateText(9), "?(9)"},
		{"lddefault 2", LinkDownDefaultStateText(2), "Polling"},
		{"lddefault 3", LinkDownDefaultStateText(3), "?(3)"},
		{"mtu 5", MTUText(5), "4096"},
		{"mtu 0", MTUText(0), "?(0)"},
		{"vlcap 5", VLCapText(5), "VL0-14"},
		{"vlcap 6", VLCapText(6), "?(6)"},
		{"opervls 0", OperVLsText(0), "No change"},
		{"display SDR", LinkSpeedDisplay(1, 0, false), "2.5 Gbps"},
		{"display DDR", LinkSpeedDisplay(2, 0, false), "5.0 Gbps"},
		{"display QDR", LinkSpeedDisplay(4, 0, false), "10.0 Gbps"},
		{"display FDR10", LinkSpeedDisplay(4, 0, true), "10.0 Gbps (FDR10)"},
		{"display FDR", LinkSpeedDisplay(4, 1, false), "14.0625 Gbps"},
		{"display EDR", LinkSpeedDisplay(4, 2, false), "25.78125 Gbps"},
		{"display HDR", LinkSpeedDisplay(4, 4, false), "53.125 Gbps"},
		{"display NDR", LinkSpeedDisplay(4, 8, false), "106.25 Gbps"},
		{"display XDR", LinkSpeedDisplay(4, 32, false), "212.5 Gbps"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	mtus := map[uint8]int{0: 0, 1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096, 6: 0}
	for c, n := range mtus {
		if MTUBytes(c) != n {
			t.Errorf("MTUBytes(%d) = %d", c, MTUBytes(c))
		}
		if n != 0 && MTUCode(n) != c {
			t.Errorf("MTUCode(%d) = %d", n, MTUCode(n))
		}
	}
	if MTUCode(1500) != 0 {
		t.Error("MTUCode(1500)")
	}
	vls := map[uint8]int{0: 0, 1: 1, 2: 2, 3: 4, 4: 8, 5: 15, 6: 0}
	for c, n := range vls {
		if DataVLs(c) != n {
			t.Errorf("DataVLs(%d) = %d", c, DataVLs(c))
		}
	}
}

func TestNodeDescriptionAppendTo(t *testing.T) {
	long := strings.Repeat("x", 64)
	for _, tc := range []struct{ raw, want string }{
		{"", ""},
		{"sw1 leaf", "sw1 leaf"},
		{"a\x01b\x7fc\xffd", "a b c d"},
		{"head\x00tail", "head"},
		{long, long},
		{"\tlead", " lead"},
	} {
		var d NodeDescription
		copy(d[:], tc.raw)
		got := string(d.AppendTo([]byte("pre:")))
		if got != "pre:"+tc.want {
			t.Errorf("AppendTo(%q) = %q, want %q", tc.raw, got, "pre:"+tc.want)
		}
		if s := d.String(); s != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.raw, s, tc.want)
		}
	}
}

func TestAppendNodeIDDigits(t *testing.T) {
	for _, tc := range []struct {
		guid uint64
		want string
	}{
		{0, "S-0000000000000000"},
		{0x0002c9030000abcd, "S-0002c9030000abcd"},
		{0xffffffffffffffff, "S-ffffffffffffffff"},
		{0x123456789abcdef0, "S-123456789abcdef0"},
	} {
		if got := string(AppendNodeID(nil, NodeSwitch, tc.guid)); got != tc.want {
			t.Errorf("AppendNodeID(%#x) = %q, want %q", tc.guid, got, tc.want)
		}
	}
}

// TestAppendHex16: 16 digits, zero-padded, as strconv gives them.
func TestAppendHex16(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xabc, 0x2c90300001234, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		want := strconv.FormatUint(v, 16)
		for len(want) < 16 {
			want = "0" + want
		}
		if got := string(AppendHex16(nil, v)); got != want {
			t.Errorf("AppendHex16(%#x) = %q, want %q", v, got, want)
		}
	}
}
