package mad

import (
	"bytes"
	"errors"
	"testing"
)

// hdr is a hand-built common header laid out like the PerfMgt GetResp of
// PortCounters in pkg/pma/testdata/ca-pc.hex, with a status, a TID, an
// attribute modifier and bytes 6 and 7 filled in so that every field is
// seen (bytes 6 and 7 show the codec leaves them alone).
var hdr = []byte{
	0x01, 0x04, 0x01, 0x81, 0x00, 0x1c, 0xaa, 0xbb,
	0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78,
	0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
}

func TestHeaderRoundTrip(t *testing.T) {
	var h Header
	if err := h.UnmarshalBinary(hdr); err != nil {
		t.Fatal(err)
	}
	want := Header{BaseVersion: 1, Class: 4, ClassVersion: 1, Method: MethodGetResp, Status: 0x1c,
		TID: 0x12345678, AttrID: 0x12, AttrMod: 7}
	if h != want {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
	if !h.IsResponse() {
		t.Error("IsResponse")
	}
	out := make([]byte, HeaderSize)
	out[6], out[7] = 0xaa, 0xbb
	if err := h.MarshalTo(out); err != nil || !bytes.Equal(out, hdr) {
		t.Fatalf("MarshalTo: %v\n got % x\nwant % x", err, out, hdr)
	}
}

func TestHeaderErrors(t *testing.T) {
	var h Header
	if err := h.UnmarshalBinary(hdr[:HeaderSize-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	if err := h.MarshalTo(make([]byte, HeaderSize-1)); !errors.Is(err, ErrShort) {
		t.Errorf("short MarshalTo: %v", err)
	}
	bad := bytes.Clone(hdr)
	bad[0] = 2
	if err := h.UnmarshalBinary(bad); !errors.Is(err, ErrVersion) {
		t.Errorf("version: %v", err)
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
	if err := error(&StatusError{Status: 0x1C}); err.Error() != "bad status 0x1c (invalid attribute or modifier)" {
		t.Error(err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	var h Header
	if n := testing.AllocsPerRun(100, func() { h.UnmarshalBinary(hdr) }); n != 0 {
		t.Fatalf("%v allocations per decode", n)
	}
}

func FuzzHeader(f *testing.F) {
	f.Add(hdr)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out := bytes.Clone(b[:HeaderSize])
		if err := h.MarshalTo(out); err != nil || !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("round trip: %v\n got % x\nwant % x", err, out, b[:HeaderSize])
		}
	})
}

func BenchmarkHeaderDecode(b *testing.B) {
	var h Header
	b.ReportAllocs()
	for b.Loop() {
		if err := h.UnmarshalBinary(hdr); err != nil {
			b.Fatal(err)
		}
	}
}
