package smp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// printedTable collects the numbers the tools printed after "<index>:"
// (smpquery pkeys/guidinfo) into a map index -> values.
func printedIndexed(t *testing.T, v vector) map[int][]uint64 {
	t.Helper()
	m := make(map[int][]uint64)
	for _, l := range v.Out {
		head, rest, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(head))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(rest) {
			n, err := strconv.ParseUint(f, 0, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", v.Name, l, err)
			}
			m[i] = append(m[i], n)
		}
	}
	return m
}

// printedBars parses "...: | a| b| c|" rows (sl2vl, vlarb) into numbers.
func printedBars(t *testing.T, line string) []uint64 {
	t.Helper()
	_, rest, _ := strings.Cut(line, "|")
	var r []uint64
	for _, f := range strings.Split(rest, "|") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 0, 8)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		r = append(r, n)
	}
	return r
}

func TestVectorsPKeyTable(t *testing.T) {
	tests := []struct {
		file  string
		mod   uint32
		block int // block index in the tool's listing
	}{
		{"2sw-pkeys-0,1-0", PKeyModifier(0, 0), 0}, // CA port
		{"2sw-pkeys-0,1-1", PKeyModifier(1, 0), 1},
		{"sp-pkeys-0-1-0", PKeyModifier(0, 1), 0}, // switch port 1
		{"sp-pkeys-0-1-1", PKeyModifier(1, 1), 1},
	}
	for _, tt := range tests {
		v := mustVector(t, tt.file)
		m := decodeMAD(t, v)
		if m.AttrID != AttrPKeyTable || m.AttrMod != tt.mod {
			t.Fatalf("%s: attr %#x mod %#x, want mod %#x", tt.file, m.AttrID, m.AttrMod, tt.mod)
		}
		var pk PKeyTable
		if err := pk.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		printed := printedIndexed(t, v)
		for i := 0; i < PKeyBlockSize; i++ {
			idx := tt.block*PKeyBlockSize + i
			want := printed[idx/8*8][idx%8]
			if uint64(pk[i]) != want {
				t.Errorf("%s: pkey[%d] = %#04x, smpquery printed %#04x", tt.file, idx, pk[i], want)
			}
		}
		if tt.block == 0 && (pk[0] != PKeyDefault || !pk[0].Full() || pk[0].Base() != 0x7fff) {
			t.Errorf("%s: entry 0 = %#x, want the default full-member key", tt.file, pk[0])
		}
	}
}

func TestVectorsGUIDInfo(t *testing.T) {
	tests := []struct {
		file string
		want uint64 // GUID 0; smpquery prints the rest as 0
	}{
		{"2sw-guidinfo-0,1-0", 0x100001},           // CA: port GUID
		{"sp-guidinfo-0", 0x7cfe900300a0b000},      // switch: node GUID
		{"2sw-guidinfo-0,1-1", 0x0000000000000000}, // block 1 of the CA
	}
	for _, tt := range tests {
		v := mustVector(t, tt.file)
		m := decodeMAD(t, v)
		var g GUIDInfo
		if err := g.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		if g[0] != tt.want {
			t.Errorf("%s: GUID0 = %#x, want %#x", tt.file, g[0], tt.want)
		}
		if m.AttrMod == 0 {
			if p := printedIndexed(t, v)[0]; len(p) < 2 || p[0] != g[0] || p[1] != g[1] {
				t.Errorf("%s: smpquery printed %x, decoded %x", tt.file, p, g[:2])
			}
		}
		for i := 1; i < GUIDBlockSize; i++ {
			if g[i] != 0 {
				t.Errorf("%s: GUID%d = %#x", tt.file, i, g[i])
			}
		}
	}
}

func TestVectorsSLtoVL(t *testing.T) {
	tests := []struct {
		file    string
		mod     uint32
		rowHead string
	}{
		{"2sw-sl2vl-0,1", 0, "ports: in  0, out  0:"},
		{"sp-sl2vl-0-1-0", SL2VLModifier(0, 1), "ports: in  0, out  1:"},
		{"sp-sl2vl-0-1-1", SL2VLModifier(1, 1), "ports: in  1, out  1:"},
	}
	want := SLtoVLMappingTable{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}
	for _, tt := range tests {
		v := mustVector(t, tt.file)
		m := decodeMAD(t, v)
		if m.AttrID != AttrSLtoVLMappingTable || m.AttrMod != tt.mod {
			t.Fatalf("%s: attr %#x mod %#x, want %#x", tt.file, m.AttrID, m.AttrMod, tt.mod)
		}
		var s SLtoVLMappingTable
		if err := s.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		if s != want {
			t.Errorf("%s: %v, want %v", tt.file, s, want)
		}
		found := false
		for _, l := range v.Out {
			if strings.HasPrefix(l, tt.rowHead) {
				found = true
				for sl, vl := range printedBars(t, l) {
					if uint64(s[sl]) != vl {
						t.Errorf("%s: SL%d -> VL%d, smpquery printed %d", tt.file, sl, s[sl], vl)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no row %q in the tool output", tt.file, tt.rowHead)
		}
	}
}

func TestVectorsVLArb(t *testing.T) {
	tests := []struct {
		file string
		mod  uint32
		// which "VL"/"WEIGHT" row pair of the tool output (0 low, 1 high)
		pair int
	}{
		{"2sw-vlarb-0,1-0", VLArbModifier(VLArbLowLower, 0), 0},
		{"2sw-vlarb-0,1-1", VLArbModifier(VLArbHighLower, 0), 1},
		{"sp-vlarb-0-3-0", VLArbModifier(VLArbLowLower, 3), 0},
		{"sp-vlarb-0-3-1", VLArbModifier(VLArbHighLower, 3), 1},
	}
	for _, tt := range tests {
		v := mustVector(t, tt.file)
		m := decodeMAD(t, v)
		if m.AttrID != AttrVLArbitrationTable || m.AttrMod != tt.mod {
			t.Fatalf("%s: attr %#x mod %#x, want %#x", tt.file, m.AttrID, m.AttrMod, tt.mod)
		}
		var a VLArbitrationTable
		if err := a.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		var vls, weights [][]uint64
		for _, l := range v.Out {
			switch {
			case strings.HasPrefix(l, "VL    :"):
				vls = append(vls, printedBars(t, l))
			case strings.HasPrefix(l, "WEIGHT:"):
				weights = append(weights, printedBars(t, l))
			}
		}
		if len(vls) != 2 || len(weights) != 2 {
			t.Fatalf("%s: tool output has %d/%d rows", tt.file, len(vls), len(weights))
		}
		for i := range vls[tt.pair] {
			if uint64(a[i].VL) != vls[tt.pair][i] || uint64(a[i].Weight) != weights[tt.pair][i] {
				t.Errorf("%s: entry %d = %+v, smpquery printed VL %d weight %d",
					tt.file, i, a[i], vls[tt.pair][i], weights[tt.pair][i])
			}
		}
		// ibsim defaults: low VL0 w0, VL1..7 w4; high VL0 w4.
		wantW := uint8(4)
		if tt.pair == 0 {
			wantW = 0
		}
		if a[0] != (VLArbEntry{VL: 0, Weight: wantW}) {
			t.Errorf("%s: entry 0 = %+v", tt.file, a[0])
		}
	}
}

func TestVectorsLFT(t *testing.T) {
	v := mustVector(t, "sp-lft-0")
	m := decodeMAD(t, v)
	if m.AttrID != AttrLinearForwardingTable || m.AttrMod != 0 {
		t.Fatalf("attr %#x mod %#x", m.AttrID, m.AttrMod)
	}
	var lft LinearForwardingTable
	if err := lft.UnmarshalBinary(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	// ibroute rows "0x0003 001 : (...)"; all other LIDs of block 0 unrouted.
	routed := map[int]uint8{}
	for _, l := range v.Out {
		var lid, port int
		if len(l) > 10 && strings.HasPrefix(l, "0x") && strings.Contains(l, " : (") {
			l64, err1 := strconv.ParseUint(l[2:6], 16, 16)
			p64, err2 := strconv.ParseUint(l[7:10], 10, 8)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad ibroute row %q", l)
			}
			lid, port = int(l64), int(p64)
			routed[lid] = uint8(port)
		}
	}
	want := map[int]uint8{1: 0, 2: 3, 3: 1, 4: 2, 5: 4}
	if len(routed) != len(want) {
		t.Fatalf("ibroute printed %v", routed)
	}
	for lid := 0; lid < LFTBlockSize; lid++ {
		w, ok := want[lid]
		if !ok {
			w = LFTNoRoute
		}
		if lft[lid] != w || (ok && routed[lid] != w) {
			t.Errorf("LID %d: port %d, want %d (ibroute %d)", lid, lft[lid], w, routed[lid])
		}
	}
}

func TestVectorsMFT(t *testing.T) {
	for i, name := range []string{"sp-mft-0-0", "sp-mft-0-1"} {
		m := decodeMAD(t, mustVector(t, name))
		if m.AttrID != AttrMulticastFwdTable || m.AttrMod != MFTModifier(uint16(i), 0) {
			t.Fatalf("%s: attr %#x mod %#x", name, m.AttrID, m.AttrMod)
		}
		var mft MulticastForwardingTable
		if err := mft.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		if mft != (MulticastForwardingTable{}) {
			t.Errorf("%s: ibsim default MFT not empty: %x", name, mft)
		}
	}
}

// TestVectorsMFTJoined decodes the MFT block 0 of an ibsim switch after
// CA ports joined OpenSM's broadcast group (MLID 0xC000 on ports 1, 2
// and 3) and renders its MLIDs as ibroute -M did when it received it.
func TestVectorsMFTJoined(t *testing.T) {
	v := mustVector(t, "2sw-mft-joined")
	m := decodeMAD(t, v)
	if m.AttrID != AttrMulticastFwdTable || m.AttrMod != MFTModifier(0, 0) {
		t.Fatalf("attr %#x mod %#x", m.AttrID, m.AttrMod)
	}
	var mft MulticastForwardingTable
	if err := mft.UnmarshalBinary(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	want := MulticastForwardingTable{0: 0x000e}
	if mft != want {
		t.Errorf("MFT = %04x, want %04x", mft, want)
	}
	if n := testing.AllocsPerRun(100, func() { mft.UnmarshalBinary(m.Data[:]) }); n != 0 {
		t.Errorf("UnmarshalBinary allocates %v times", n)
	}
	// ibroute -M's line for each non-empty MLID of the block (8 ports).
	var got []string
	for i, mask := range mft {
		if mask == 0 {
			continue
		}
		line := fmt.Sprintf("0x%04x      ", int(MulticastLIDBase)+i)
		for p := 0; p <= 8; p++ {
			if mask&(1<<p) != 0 {
				line += "x "
			} else {
				line += "  "
			}
		}
		got = append(got, line)
	}
	var printed []string
	for _, o := range v.Out {
		if strings.HasPrefix(o, "0xc") {
			printed = append(printed, o)
		}
	}
	if strings.Join(got, "\n") != strings.Join(printed, "\n") {
		t.Errorf("rendered %q, ibroute printed %q", got, printed)
	}
}

func TestVectorsMlnxExtPortInfo(t *testing.T) {
	tests := []struct {
		file  string
		fdr10 bool
		sup   uint8
	}{
		{"sp-mepi-0-2", true, 1},   // switch side of the 4xFDR10 link
		{"sp-mepi-0,2", true, 1},   // CA side
		{"2sw-mepi-0,1", false, 0}, // plain SDR fabric
	}
	for _, tt := range tests {
		m := decodeMAD(t, mustVector(t, tt.file))
		var e MlnxExtPortInfo
		if err := e.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		if e.FDR10() != tt.fdr10 || e.LinkSpeedSupported != tt.sup || e.LinkSpeedEnabled != tt.sup {
			t.Errorf("%s: %+v", tt.file, e)
		}
	}
}

func TestModifiers(t *testing.T) {
	tests := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"PKey CA block 1", PKeyModifier(1, 0), 0x00000001},
		{"PKey switch port 3 block 1", PKeyModifier(1, 3), 0x00030001},
		{"SL2VL in 2 out 7", SL2VLModifier(2, 7), 0x0207},
		{"VLArb high upper port 5", VLArbModifier(VLArbHighUpper, 5), 0x00040005},
		{"MFT block 0x1ff position 15", MFTModifier(0x1ff, 15), 0xF00001FF},
		{"MFT block masked", MFTModifier(0x3ff, 1), 0x100001FF},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
	if b, p := MFTSplitModifier(0x300000AB); b != 0xAB || p != 3 {
		t.Errorf("MFTSplitModifier = %#x, %d", b, p)
	}
	lftTests := []struct {
		lid   uint16
		block uint32
		index int
	}{{0, 0, 0}, {63, 0, 63}, {64, 1, 0}, {0xBFFF, 767, 63}}
	for _, tt := range lftTests {
		if b, i := LFTBlock(tt.lid); b != tt.block || i != tt.index {
			t.Errorf("LFTBlock(%#x) = %d, %d", tt.lid, b, i)
		}
	}
	if n := LFTBlocks(8); n != 1 {
		t.Errorf("LFTBlocks(8) = %d", n)
	}
	if n := LFTBlocks(64); n != 2 {
		t.Errorf("LFTBlocks(64) = %d", n)
	}
	mftTests := []struct {
		mlid  uint16
		block uint16
		index int
		ok    bool
	}{{0xC000, 0, 0, true}, {0xC021, 1, 1, true}, {0xFFFE, 511, 30, true}, {0xBFFF, 0, 0, false}, {0xFFFF, 0, 0, false}}
	for _, tt := range mftTests {
		if b, i, ok := MFTBlock(tt.mlid); b != tt.block || i != tt.index || ok != tt.ok {
			t.Errorf("MFTBlock(%#x) = %d, %d, %v", tt.mlid, b, i, ok)
		}
	}
	if p, m := MFTPosition(17); p != 1 || m != 0x0002 {
		t.Errorf("MFTPosition(17) = %d, %#x", p, m)
	}
	if n := PKeyBlocks(64); n != 2 {
		t.Errorf("PKeyBlocks(64) = %d", n)
	}
	if n := PKeyBlocks(8); n != 1 {
		t.Errorf("PKeyBlocks(8) = %d", n)
	}
	if n := GUIDBlocks(32); n != 4 {
		t.Errorf("GUIDBlocks(32) = %d", n)
	}
}

func TestPKeyHelpers(t *testing.T) {
	tests := []struct {
		k           PKey
		base        uint16
		full, valid bool
	}{
		{0xFFFF, 0x7FFF, true, true},
		{0x7FFF, 0x7FFF, false, true},
		{0x8001, 0x0001, true, true},
		{0x8000, 0x0000, true, false},
		{0x0000, 0x0000, false, false},
	}
	for _, tt := range tests {
		if tt.k.Base() != tt.base || tt.k.Full() != tt.full || tt.k.Valid() != tt.valid {
			t.Errorf("%#04x: base %#x full %v valid %v", uint16(tt.k), tt.k.Base(), tt.k.Full(), tt.k.Valid())
		}
	}
	if !PKey(0xFFFF).SameBase(0x7FFF) || PKey(0x8001).SameBase(0x8002) {
		t.Error("SameBase")
	}
}

// Encodings of the table attributes written by hand from the layouts.
func TestTableEncodings(t *testing.T) {
	s := SLtoVLMappingTable{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}
	b, _ := s.MarshalBinary()
	if want := []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7}; !bytes.Equal(b[:8], want) {
		t.Errorf("SL2VL = %x, want %x", b[:8], want)
	}
	a := VLArbitrationTable{{VL: 0x1F, Weight: 0xFF}, {VL: 15, Weight: 1}}
	b, _ = a.MarshalBinary()
	if want := []byte{0x0F, 0xFF, 0x0F, 0x01, 0, 0}; !bytes.Equal(b[:6], want) {
		t.Errorf("VLArb = %x, want %x", b[:6], want)
	}
	mft := MulticastForwardingTable{0x8001, 2}
	b, _ = mft.MarshalBinary()
	if want := []byte{0x80, 0x01, 0x00, 0x02, 0, 0}; !bytes.Equal(b[:6], want) {
		t.Errorf("MFT = %x", b[:6])
	}
	e := MlnxExtPortInfo{StateChangeEnable: 1, LinkSpeedSupported: 2, LinkSpeedEnabled: 3, LinkSpeedActive: 4}
	b, _ = e.MarshalBinary()
	if want := []byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4}; !bytes.Equal(b[:16], want) {
		t.Errorf("MEPI = %x", b[:16])
	}
	pie := PortInfoExtended{CapMask: PortExtCapIsFECModeSupported, FECModeActive: FECModeRS,
		FDRFECModeSupported: 3, FDRFECModeEnabled: 4, EDRFECModeSupported: 5, EDRFECModeEnabled: 6,
		HDRFECModeSupported: 7, HDRFECModeEnabled: 8, NDRFECModeSupported: 9, NDRFECModeEnabled: 10}
	b, _ = pie.MarshalBinary()
	want := []byte{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10}
	if !bytes.Equal(b[:22], want) {
		t.Errorf("PortInfoExtended = %x, want %x", b[:22], want)
	}
	var pie2 PortInfoExtended
	if err := pie2.UnmarshalBinary(b); err != nil || pie2 != pie {
		t.Errorf("PortInfoExtended round trip: %+v %v", pie2, err)
	}
}

func TestShortBuffers(t *testing.T) {
	codecs := map[string]attrCodec{
		"LFT": new(LinearForwardingTable), "MFT": new(MulticastForwardingTable),
		"PKey": new(PKeyTable), "SL2VL": new(SLtoVLMappingTable), "VLArb": new(VLArbitrationTable),
		"GUIDInfo": new(GUIDInfo), "MEPI": new(MlnxExtPortInfo), "PIE": new(PortInfoExtended),
		"NodeInfo": new(NodeInfo), "PortInfo": new(PortInfo), "SwitchInfo": new(SwitchInfo),
		"NodeDescription": new(NodeDescription),
	}
	short := make([]byte, 7)
	for name, c := range codecs {
		if err := c.UnmarshalBinary(short); !errors.Is(err, ErrShort) {
			t.Errorf("%s: UnmarshalBinary(7 bytes) = %v", name, err)
		}
		if err := c.MarshalTo(short); !errors.Is(err, ErrShort) {
			t.Errorf("%s: MarshalTo(7 bytes) = %v", name, err)
		}
		if err := c.UnmarshalBinary(nil); !errors.Is(err, ErrShort) {
			t.Errorf("%s: UnmarshalBinary(nil) = %v", name, err)
		}
	}
}
