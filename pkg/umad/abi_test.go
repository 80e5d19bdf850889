package umad

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// Sample values for the ABI tests: every field distinct and asymmetric
// (no byte-order swap reads the same), so a field at the wrong offset or
// in the wrong byte order shows.
func sampleHeader() Header {
	h := Header{ID: 0x01020304, Status: 0x05060708, TimeoutMS: 0x090a0b0c, Retries: 0x0d0e0f10,
		Length: 0x11121314, QPN: 0x00abcdef, QKey: 0x80010203, LID: 0x1234, SL: 0x5a, PathBits: 0x6b,
		GRHPresent: 1, GIDIndex: 0x7c, HopLimit: 0x8d, TrafficClass: 0x9e, FlowLabel: 0x000abcde,
		PKeyIndex: 0x0102}
	for i := range h.GID {
		h.GID[i] = byte(0xf0 + i)
	}
	return h
}

func sampleRegReq() RegReq {
	return RegReq{ID: 0x01020304, MethodMask: MethodMask{0x8000000000000021, 0x0102030405060708},
		QPN: 1, Class: 0x81, ClassVersion: 0x02, OUI: [3]byte{0x00, 0x14, 0x05}, RMPPVersion: 1}
}

func sampleRegReq2() RegReq2 {
	return RegReq2{ID: 0x0a0b0c0d, QPN: 0x01020304, Class: 0x81, ClassVersion: 0x03, Flags: 0x00010001,
		MethodMask: MethodMask{0x8000000000000021, 0x0102030405060708}, OUI: 0x0002c9, RMPPVersion: 1}
}

// The samples as the kernel's structs hold them on x86_64. Origin: not
// our codec: printed by the C program of TestKernelABIBytes
// (abi_linux_test.go), which fills struct ib_user_mad_hdr,
// ib_user_mad_reg_req and ib_user_mad_reg_req2 from
// <rdma/ib_user_mad.h> (linux-libc-dev 6.1, gcc 12.2, Debian 12 amd64),
// the __be fields (qpn, qkey, lid, flow_label) with htonl/htons as their
// types demand. TestKernelABIBytes also checks these strings against the
// C program wherever it can run.
const (
	sampleHeaderHex  = "04030201080706050c0b0a09100f0e0d1413121100abcdef8001020312345a6b017c8d9ef0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000abcde0201000000000000"
	sampleRegReqHex  = "04030201210000000000008008070605040302010181020014050100"
	sampleRegReq2Hex = "0d0c0b0a04030201810300000100010021000000000000800807060504030201c902000001000000"
)

// hdrFields names the header's bytes (offsets verified by TestKernelABI)
// so a mismatch says which field is wrong.
var hdrFields = []struct {
	name      string
	off, size int
}{
	{"id", 0, 4}, {"status", 4, 4}, {"timeout_ms", 8, 4}, {"retries", 12, 4}, {"length", 16, 4},
	{"qpn", 20, 4}, {"qkey", 24, 4}, {"lid", 28, 2}, {"sl", 30, 1}, {"path_bits", 31, 1},
	{"grh_present", 32, 1}, {"gid_index", 33, 1}, {"hop_limit", 34, 1}, {"traffic_class", 35, 1},
	{"gid", 36, 16}, {"flow_label", 52, 4}, {"pkey_index", 56, 2}, {"reserved", 58, 6},
}

// compareHeader reports every header field whose bytes differ.
func compareHeader(t *testing.T, what string, got, want []byte) {
	t.Helper()
	for _, f := range hdrFields {
		g, w := got[f.off:f.off+f.size], want[f.off:f.off+f.size]
		if !bytes.Equal(g, w) {
			t.Errorf("%s: ib_user_mad_hdr.%s is % x, want % x", what, f.name, g, w)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSamples checks the codec against the kernel's bytes of the
// samples: marshal gives them, unmarshal reads the samples back.
func checkSamples(t *testing.T, what string, hdr, req, req2 []byte) {
	t.Helper()
	h := sampleHeader()
	b := bytes.Repeat([]byte{0xee}, HeaderSize) // reserved bytes must be cleared
	if err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	compareHeader(t, what+": marshal", b, hdr)
	var back Header
	if err := back.UnmarshalBinary(hdr); err != nil || back != h {
		t.Errorf("%s: unmarshal\n got %+v, %v\nwant %+v", what, back, err, h)
	}

	r := sampleRegReq()
	rb := make([]byte, RegReqSize)
	if err := r.MarshalTo(rb); err != nil || !bytes.Equal(rb, req) {
		t.Errorf("%s: reg_req marshal\n got % x (%v)\nwant % x", what, rb, err, req)
	}
	var r1 RegReq
	if err := r1.UnmarshalBinary(req); err != nil || r1 != r {
		t.Errorf("%s: reg_req unmarshal %+v, %v", what, r1, err)
	}

	r2 := sampleRegReq2()
	rb2 := make([]byte, RegReq2Size)
	if err := r2.MarshalTo(rb2); err != nil || !bytes.Equal(rb2, req2) {
		t.Errorf("%s: reg_req2 marshal\n got % x (%v)\nwant % x", what, rb2, err, req2)
	}
	var r2b RegReq2
	if err := r2b.UnmarshalBinary(req2); err != nil || r2b != r2 {
		t.Errorf("%s: reg_req2 unmarshal %+v, %v", what, r2b, err)
	}
}

// TestCodecVectors checks the codec against the kernel structs' bytes
// recorded above (runs everywhere, without a C compiler; the recorded
// image is little-endian).
func TestCodecVectors(t *testing.T) {
	if !littleEndian() {
		t.Skip("recorded image is little-endian")
	}
	checkSamples(t, "recorded x86_64 bytes", mustHex(t, sampleHeaderHex), mustHex(t, sampleRegReqHex), mustHex(t, sampleRegReq2Hex))
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
