package umad

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestCodecOffsets checks that the Go encoders put each field at the
// offset TestKernelABI verified, by marking every field with a distinct
// value (this runs everywhere, without a C compiler).
func TestCodecOffsets(t *testing.T) {
	h := Header{ID: 0x01020304, Status: 110, TimeoutMS: 1000, Retries: 3, Length: 320,
		QPN: 1, QKey: QP1QKey, LID: 0xffff, SL: 5, PathBits: 6, GRHPresent: 1, GIDIndex: 7,
		HopLimit: 8, TrafficClass: 9, FlowLabel: 0x000abcde, PKeyIndex: 0x0102}
	for i := range h.GID {
		h.GID[i] = byte(0xf0 + i)
	}
	var b [HeaderSize]byte
	for i := range b {
		b[i] = 0xee // reserved bytes must be cleared
	}
	if err := h.MarshalTo(b[:]); err != nil {
		t.Fatal(err)
	}
	// x86_64/arm64 little-endian image of the header above.
	want := []byte{
		0x04, 0x03, 0x02, 0x01, 110, 0, 0, 0, 0xe8, 0x03, 0, 0, 3, 0, 0, 0,
		0x40, 0x01, 0, 0, 0, 0, 0, 1, 0x80, 0x01, 0, 0, 0xff, 0xff, 5, 6,
		1, 7, 8, 9, 0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb,
		0xfc, 0xfd, 0xfe, 0xff, 0x00, 0x0a, 0xbc, 0xde, 0x02, 0x01, 0, 0, 0, 0, 0, 0,
	}
	if !littleEndian() {
		t.Skip("golden image is little-endian")
	}
	if !bytes.Equal(b[:], want) {
		t.Errorf("header\n got % x\nwant % x", b[:], want)
	}
	var back Header
	if err := back.UnmarshalBinary(b[:]); err != nil || back != h {
		t.Errorf("round trip: %+v, %v", back, err)
	}

	r2 := RegReq2{ID: 9, QPN: 1, Class: 0x81, ClassVersion: 1, Flags: UserRMPP,
		MethodMask: MethodMask{1 << 5, 1 << 63}, OUI: 0x0002c9, RMPPVersion: 1}
	var rb [RegReq2Size]byte
	r2.MarshalTo(rb[:])
	want2 := []byte{9, 0, 0, 0, 1, 0, 0, 0, 0x81, 1, 0, 0, 1, 0, 0, 0,
		0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,
		0xc9, 0x02, 0, 0, 1, 0, 0, 0}
	if !bytes.Equal(rb[:], want2) {
		t.Errorf("reg_req2\n got % x\nwant % x", rb[:], want2)
	}
	var r2b RegReq2
	if r2b.UnmarshalBinary(rb[:]); r2b != r2 {
		t.Errorf("reg_req2 round trip %+v", r2b)
	}

	r := RegReq{ID: 3, MethodMask: MethodMask{1 << 1, 0}, QPN: 0, Class: 0x01, ClassVersion: 1,
		OUI: [3]byte{0x00, 0x14, 0x05}, RMPPVersion: 0}
	var rb1 [RegReqSize]byte
	r.MarshalTo(rb1[:])
	want1 := []byte{3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0x01, 1, 0x00, 0x14, 0x05, 0, 0}
	if !bytes.Equal(rb1[:], want1) {
		t.Errorf("reg_req\n got % x\nwant % x", rb1[:], want1)
	}
	var r1b RegReq
	if r1b.UnmarshalBinary(rb1[:]); r1b != r {
		t.Errorf("reg_req round trip %+v", r1b)
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

func TestShortBuffers(t *testing.T) {
	var h Header
	var r RegReq
	var r2 RegReq2
	short := make([]byte, 10)
	for name, err := range map[string]error{
		"hdr marshal": h.MarshalTo(short), "hdr unmarshal": h.UnmarshalBinary(make([]byte, 63)),
		"old hdr":     h.unmarshal(make([]byte, 55), OldHeaderSize),
		"req marshal": r.MarshalTo(short), "req unmarshal": r.UnmarshalBinary(short),
		"req2 marshal": r2.MarshalTo(short), "req2 unmarshal": r2.UnmarshalBinary(short),
	} {
		if err != ErrShort {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The old header is the new one without pkey_index.
	h = Header{ID: 1, LID: 0xffff, PKeyIndex: 7, FlowLabel: 9}
	b := make([]byte, HeaderSize)
	h.marshal(b, OldHeaderSize)
	var o Header
	o.unmarshal(b, OldHeaderSize)
	h.PKeyIndex = 0
	if o != h {
		t.Errorf("old header round trip %+v", o)
	}
}

func FuzzHeader(f *testing.F) {
	// A response header as read from umad0 for a DR SMP (little-endian host):
	// agent 3, length 320, source LID 0xffff.
	resp := make([]byte, HeaderSize)
	(&Header{ID: 3, Length: 320, LID: 0xffff}).MarshalTo(resp)
	f.Add(resp)
	// A timed-out request: status 110.
	to := make([]byte, HeaderSize)
	(&Header{ID: 1, Status: StatusTimeout, TimeoutMS: 1000, Length: 320, LID: 0x1b}).MarshalTo(to)
	f.Add(to)
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.UnmarshalBinary(b); err != nil {
			if len(b) >= HeaderSize {
				t.Fatalf("%d bytes rejected: %v", len(b), err)
			}
			return
		}
		out := make([]byte, HeaderSize)
		if err := h.MarshalTo(out); err != nil {
			t.Fatal(err)
		}
		// Everything but the reserved tail survives a round trip.
		if !bytes.Equal(out[:58], b[:58]) {
			t.Fatalf("round trip\n in % x\nout % x", b[:58], out[:58])
		}
	})
}

func BenchmarkHeader(b *testing.B) {
	buf := make([]byte, HeaderSize)
	h := Header{ID: 3, TimeoutMS: 1000, LID: 0xffff}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.MarshalTo(buf)
		h.UnmarshalBinary(buf)
	}
}
