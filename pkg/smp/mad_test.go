package smp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/mad"
)

// unhex turns "offset: bytes" rows (offsets are MAD offsets in hex) into
// a 256-byte MAD; bytes not listed are zero.
func unhex(t testing.TB, rows string) []byte {
	t.Helper()
	b := make([]byte, MADSize)
	for _, row := range strings.Split(strings.TrimSpace(rows), "\n") {
		off, data, ok := strings.Cut(strings.TrimSpace(row), ":")
		if !ok {
			t.Fatalf("bad row %q", row)
		}
		o, err := hex.DecodeString(strings.TrimSpace(off))
		if err != nil || len(o) != 1 {
			t.Fatalf("bad offset %q", off)
		}
		d, err := hex.DecodeString(strings.ReplaceAll(data, " ", ""))
		if err != nil {
			t.Fatalf("bad row %q: %v", row, err)
		}
		copy(b[o[0]:], d)
	}
	return b
}

// ibsim-and-umad.md §1.7: DR NodeInfo Get along 0,1 on net.2sw2path4hca
// (ibsim 0.10, raw protocol, Python client), request and response MADs
// (the sim_request header of 32 bytes stripped).
var (
	ref17Request = `
		00: 01 81 01 01 00 00 00 01 00 00 00 00 ca fe 00 01
		10: 00 11 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		20: ff ff ff ff
		80: 00 01`
	ref17Response = `
		00: 01 81 01 81 80 00 00 01 00 01 00 00 ca fe 00 01
		10: 00 11 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		20: ff ff ff ff
		40: 01 01 01 02 00 00 00 00 00 10 00 00 00 00 00 00
		50: 00 10 00 00 00 00 00 00 00 10 00 01 00 40 00 00
		60: 00 00 00 a1 01 00 00 00
		80: 00 01
		c0: 00 01`
)

func TestRef17Request(t *testing.T) {
	p, err := ParseDRPath("0,1")
	if err != nil {
		t.Fatal(err)
	}
	m := NewGet(p, AttrNodeInfo, 0)
	m.TID = 0xcafe0001
	got, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, ref17Request); !bytes.Equal(got, want) {
		t.Errorf("request\n got %x\nwant %x", got, want)
	}
}

func TestRef17Response(t *testing.T) {
	raw := unhex(t, ref17Response)
	var m MAD
	if err := m.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if !m.Returning() || !m.IsResponse() || m.StatusCode() != 0 || m.HopCount != 1 || m.HopPointer != 0 {
		t.Errorf("header %+v", m)
	}
	if m.TID != 0x0001_0000_cafe_0001 || uint32(m.TID) != 0xcafe0001 {
		t.Errorf("TID %#x (slot 1 in bits 63..48)", m.TID)
	}
	if m.Path().String() != "0,1" || m.ReturnPath[1] != 1 {
		t.Errorf("path %s return %x", m.Path(), m.ReturnPath[:2])
	}
	var n NodeInfo
	if err := n.UnmarshalBinary(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	want := NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: NodeCA, NumPorts: 2,
		SystemImageGUID: 0x100000, NodeGUID: 0x100000, PortGUID: 0x100001,
		PartitionCap: 64, Revision: 0xa1, LocalPortNum: 1}
	if n != want {
		t.Errorf("NodeInfo\n got %+v\nwant %+v", n, want)
	}
	out, _ := m.MarshalBinary()
	if !bytes.Equal(out, raw) {
		t.Errorf("round trip differs")
	}
}

// diags-formats.md §3.5: PortInfo of a CA port with EDR active (bytes
// 28..43 and 60..63 as dumped; the rest zero).
func TestRef35PortInfo(t *testing.T) {
	var b [PortInfoSize]byte
	copy(b[28:], []byte{0x01, 0x03, 0x1f, 0x02, 0x74, 0x52, 0x00, 0x47, 0x40, 0x40, 0x00, 0x08, 0x08, 0x04, 0xe0, 0x40})
	copy(b[60:], []byte{0x00, 0x30, 0x27, 0x03})
	var p PortInfo
	if err := p.UnmarshalBinary(b[:]); err != nil {
		t.Fatal(err)
	}
	want := PortInfo{
		LocalPortNum: 1, LinkWidthEnabled: 3, LinkWidthSupported: 0x1f, LinkWidthActive: Width4x,
		LinkSpeedSupported: 7, PortState: PortStateActive, PortPhysicalState: PhysLinkUp,
		LinkDownDefaultState: PhysPolling, LinkSpeedActive: SpeedQDR, LinkSpeedEnabled: 7,
		NeighborMTU: MTU2048, VLCap: 4, VLArbitrationHighCap: 8, VLArbitrationLowCap: 8,
		MTUCap: MTU2048, VLStallCount: 7, OperationalVLs: 4,
		CapabilityMask2: 0x0030, LinkSpeedExtActive: ExtSpeedEDR, LinkSpeedExtSupported: 7,
		LinkSpeedExtEnabled: 3,
	}
	if p != want {
		t.Errorf("PortInfo\n got %+v\nwant %+v", p, want)
	}
	out, _ := p.MarshalBinary()
	if !bytes.Equal(out, b[:]) {
		t.Errorf("round trip\n got %x\nwant %x", out, b)
	}
	// The dump has no CapabilityMask: without bit 14 the EDR is not seen.
	if got := LinkToken(&p, &p, false); got != "4xQDR" {
		t.Errorf("token %s", got)
	}
	p.CapabilityMask = CapIsExtendedSpeedsSupp
	if got := LinkToken(&p, &p, false); got != "4xEDR" {
		t.Errorf("token %s", got)
	}
}

func TestMADErrors(t *testing.T) {
	good := unhex(t, ref17Response)
	tests := []struct {
		name string
		b    []byte
		err  error
	}{
		{"short", good[:255], ErrShort},
		{"empty", nil, ErrShort},
		{"version", func() []byte { b := bytes.Clone(good); b[0] = 2; return b }(), ErrVersion},
		{"class", func() []byte { b := bytes.Clone(good); b[1] = 0x04; return b }(), ErrClass},
	}
	for _, tt := range tests {
		var m MAD
		if err := m.UnmarshalBinary(tt.b); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	m := MAD{Header: mad.Header{BaseVersion: 1, Class: ClassDirectRoute}, HopCount: 64}
	if _, err := m.MarshalBinary(); !errors.Is(err, ErrHopCount) {
		t.Errorf("64 hops: %v", err)
	}
	if err := m.MarshalTo(make([]byte, 100)); !errors.Is(err, ErrShort) {
		t.Errorf("short MarshalTo: %v", err)
	}
}

// LID-routed SMPs carry no DR fields: they decode as zero and encode as zero.
func TestLIDRoutedMAD(t *testing.T) {
	m := NewLIDGet(AttrPortInfo, 3)
	m.TID = 7
	m.HopCount, m.DrSLID = 5, 9 // ignored for class 0x01
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `
		00: 01 01 01 01 00 00 00 00 00 00 00 00 00 00 00 07
		10: 00 15 00 00 00 00 00 03`)
	if !bytes.Equal(b, want) {
		t.Errorf("got %x", b)
	}
	b[7], b[200] = 3, 1 // reserved for LID-routed SMPs
	var d MAD
	if err := d.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d.HopCount != 0 || d.ReturnPath != [64]byte{} || d.Returning() || d.StatusCode() != 0 {
		t.Errorf("%+v", d)
	}
	d.Status = 0x801C
	if d.StatusCode() != 0x801C {
		t.Errorf("LID-routed status keeps bit 15: %#x", d.StatusCode())
	}
}

func TestStatusText(t *testing.T) {
	tests := map[uint16]string{
		0:      "success",
		0x0001: "busy",
		0x0002: "redirect",
		0x0004: "bad version",
		0x0008: "method not supported",
		0x000C: "method/attribute combination not supported",
		0x001C: "invalid attribute or modifier",
		0x0100: "class specific",
	}
	for s, want := range tests {
		if got := StatusText(s); got != want {
			t.Errorf("StatusText(%#x) = %q, want %q", s, got, want)
		}
	}
	err := error(&StatusError{Status: 0x1C})
	if err.Error() != "bad status 0x1c (invalid attribute or modifier)" {
		t.Error(err)
	}
}

func TestDRPath(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  error
	}{
		{"0", "0", nil},
		{"0,1", "0,1", nil},
		{" 0, 3 ,254", "0,3,254", nil},
		{"", "", ErrPathSyntax},
		{"1,2", "", ErrPathStart},
		{"0,0", "", ErrPathPort},
		{"0,255", "", ErrPathPort},
		{"0,x", "", ErrPathSyntax},
		{"0,", "", ErrPathSyntax},
		{"0" + strings.Repeat(",1", 63), "0" + strings.Repeat(",1", 63), nil},
		{"0" + strings.Repeat(",1", 64), "", ErrHopCount},
	}
	for _, tt := range tests {
		p, err := ParseDRPath(tt.in)
		if !errors.Is(err, tt.err) {
			t.Errorf("ParseDRPath(%q): %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && p.String() != tt.want {
			t.Errorf("ParseDRPath(%q) = %s", tt.in, p)
		}
		if err == nil && string(p.AppendTo(nil)) != tt.want {
			t.Errorf("AppendTo(%q)", tt.in)
		}
	}
	p, _ := ParseDRPath("0,3,5")
	q, err := p.Extend(7)
	if err != nil || q.String() != "0,3,5,7" || q.Last() != 7 || q.Len() != 3 || q.Port(1) != 3 || q.Port(9) != 0 {
		t.Errorf("Extend: %s %v", q, err)
	}
	if r := q.Retract(); r != p || !q.HasPrefix(p) || p.HasPrefix(q) {
		t.Errorf("Retract/HasPrefix")
	}
	var zero DRPath
	if zero.Retract() != zero || zero.String() != "0" || zero.Last() != 0 {
		t.Error("zero path")
	}
	m := NewGet(q, AttrPortInfo, 2)
	if m.Path() != q || m.HopCount != 3 || !bytes.Equal(m.InitialPath[:4], []byte{0, 3, 5, 7}) {
		t.Errorf("NewGet path %s", m.Path())
	}
}

// MarshalGet writes what NewGet and MarshalTo write, over hop counts
// from 0 to MaxHops, and refuses a short buffer.
func TestMarshalGet(t *testing.T) {
	p := DRPath{}
	for hops := 0; hops <= MaxHops; hops++ {
		if hops > 0 {
			var err error
			if p, err = p.Extend(uint8(hops%36 + 1)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			attr uint16
			mod  uint32
			mkey uint64
		}{{AttrNodeInfo, 0, 0}, {AttrPortInfo, 17, 0x0102030405060708}, {AttrMlnxExtPortInfo, 0xffffffff, 1}} {
			m := NewGet(p, tc.attr, tc.mod)
			m.MKey = tc.mkey
			want := make([]byte, MADSize)
			if err := m.MarshalTo(want); err != nil {
				t.Fatal(err)
			}
			got := bytes.Repeat([]byte{0xee}, MADSize+8)
			if err := MarshalGet(got, p, tc.attr, tc.mod, tc.mkey); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:MADSize], want) || got[MADSize] != 0xee {
				t.Fatalf("%d hops, attr %#x mod %d: got\n% x\nwant\n% x", hops, tc.attr, tc.mod, got, want)
			}
		}
	}
	if err := MarshalGet(make([]byte, MADSize-1), p, AttrNodeInfo, 0, 0); err != ErrShort {
		t.Errorf("short buffer: %v", err)
	}
}
