package ibsim

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes a hex dump with spaces and newlines.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pad extends b with zeros to n bytes.
func pad(b []byte, n int) []byte {
	return append(b, make([]byte, n-len(b))...)
}

// CONNECT request and reply captured from ibsim 0.10 with a raw Python
// client (ref ibsim-and-umad.md §1.7): id 10763, attach to "Switch1",
// reply slot 1.
func connectVectors(t testing.TB) (req, reply []byte) {
	req = pad(unhex(t, `
		ef be ad de 00 00 00 00 01 00 00 00 2c 00 00 00
		0b 2a 00 00 00 00 00 00 00 00 00 00 53 77 69 74
		63 68 31 00`), CtlSize)
	reply = pad(unhex(t, `
		ef be ad de 00 00 00 00 01 00 00 00 2c 00 00 00
		01 00 00 00 00 00 00 00 00 00 00 00 53 77 69 74
		63 68 31 00`), CtlSize)
	return req, reply
}

func TestCtlConnectVector(t *testing.T) {
	wantReq, reply := connectVectors(t)
	info := ClientInfo{ID: 10763, NodeID: "Switch1"}
	var payload [ClientInfoSize]byte
	if err := info.MarshalTo(payload[:]); err != nil {
		t.Fatal(err)
	}
	c := NewCtl(CtlConnect, 0, payload[:])
	got, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantReq) {
		t.Fatalf("CONNECT request\n got %x\nwant %x", got, wantReq)
	}

	var r Ctl
	if err := r.UnmarshalBinary(reply); err != nil {
		t.Fatal(err)
	}
	if r.Type != CtlConnect || r.ClientID != 0 || r.Len != 44 {
		t.Fatalf("reply header %+v", r)
	}
	var ri ClientInfo
	if err := ri.UnmarshalBinary(r.Data[:]); err != nil {
		t.Fatal(err)
	}
	if want := (ClientInfo{ID: 1, NodeID: "Switch1"}); ri != want {
		t.Fatalf("reply info %+v, want %+v", ri, want)
	}
}

func TestCtlErrors(t *testing.T) {
	var c Ctl
	if err := c.UnmarshalBinary(make([]byte, CtlSize-1)); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	if err := c.UnmarshalBinary(make([]byte, CtlSize)); !errors.Is(err, ErrMagic) {
		t.Errorf("zero magic: %v", err)
	}
	if err := c.MarshalTo(make([]byte, 79)); !errors.Is(err, ErrShort) {
		t.Errorf("marshal short: %v", err)
	}
	long := NewCtl(CtlGetPort, 3, make([]byte, 100))
	if long.Len != CtlDataSize {
		t.Errorf("Len %d for oversized payload", long.Len)
	}
}

func TestClientInfoNodeID(t *testing.T) {
	tests := []struct {
		id   string
		want error
	}{
		{"", nil},
		{"Switch1", nil},
		{"H-0002c903000a1b2c", nil},
		{strings.Repeat("x", 31), nil},
		{strings.Repeat("x", 32), ErrNodeID},
		{"a\x00b", ErrNodeID},
	}
	for _, tt := range tests {
		ci := ClientInfo{ID: 7, NodeID: tt.id}
		b := bytes.Repeat([]byte{0xaa}, ClientInfoSize)
		err := ci.MarshalTo(b)
		if !errors.Is(err, tt.want) {
			t.Errorf("%q: err %v, want %v", tt.id, err, tt.want)
			continue
		}
		if err != nil {
			continue
		}
		var back ClientInfo
		if err := back.UnmarshalBinary(b); err != nil || back != ci {
			t.Errorf("%q: round trip %+v, %v", tt.id, back, err)
		}
	}
	// 32 bytes without NUL: the id is all 32.
	b := make([]byte, ClientInfoSize)
	copy(b[12:], strings.Repeat("y", 32))
	var ci ClientInfo
	if err := ci.UnmarshalBinary(b); err != nil || ci.NodeID != strings.Repeat("y", 32) {
		t.Errorf("unterminated id: %q %v", ci.NodeID, err)
	}
	if err := ci.UnmarshalBinary(b[:43]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
}

// DR NodeInfo Get and its reply (hop count 1, path 0,1, TID
// 0x00000000cafe0001), captured from ibsim 0.10 (ref §1.7).
func drVectors(t testing.TB) (req, reply []byte) {
	req = make([]byte, RequestSize)
	copy(req, unhex(t, `
		ff ff 00 00 ff ff 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00
		01 81 01 01 00 00 00 01 00 00 00 00 ca fe 00 01
		00 11 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		ff ff ff ff`))
	copy(req[0xa0:], []byte{0, 1})
	reply = make([]byte, RequestSize)
	copy(reply, unhex(t, `
		ff ff 00 00 ff ff 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00
		01 81 01 81 80 00 00 01 00 01 00 00 ca fe 00 01
		00 11 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		ff ff ff ff`))
	copy(reply[0x60:], unhex(t, `
		01 01 01 02 00 00 00 00 00 10 00 00 00 00 00 00
		00 10 00 00 00 00 00 00 00 10 00 01 00 40 00 00
		00 00 00 a1 01 00 00 00`))
	copy(reply[0xa0:], []byte{0, 1})
	copy(reply[0xe0:], []byte{0, 1})
	return req, reply
}

func TestRequestVector(t *testing.T) {
	wantReq, reply := drVectors(t)
	r := Request{DLID: 0xffff, SLID: 0xffff, Length: 256}
	copy(r.MAD[:], wantReq[32:])
	got, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantReq) {
		t.Fatalf("request\n got %x\nwant %x", got, wantReq)
	}

	var back Request
	if err := back.UnmarshalBinary(reply); err != nil {
		t.Fatal(err)
	}
	if back.DLID != 0xffff || back.SLID != 0xffff || back.DQP != 0 || back.SQP != 0 ||
		back.Status != 0 || back.Length != 256 {
		t.Fatalf("reply header %+v", back)
	}
	if back.MAD[3] != 0x81 || back.MAD[4] != 0x80 {
		t.Fatalf("reply method/status %x %x", back.MAD[3], back.MAD[4])
	}
	tid, ok := RequestTID(reply)
	if !ok || tid != 0x00010000cafe0001 {
		t.Fatalf("TID %#x %v", tid, ok)
	}
	if _, ok := RequestTID(reply[:40]); ok {
		t.Fatal("RequestTID on 40 bytes")
	}
	if err := back.UnmarshalBinary(reply[:RequestSize-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("short: %v", err)
	}
}

func TestRequestLIDRouted(t *testing.T) {
	r := Request{DLID: 0x1234, SLID: 0, DQP: 1, SQP: 1, Status: StatusTimeout, Length: 256}
	b, _ := r.MarshalBinary()
	want := unhex(t, `12 34 00 00 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 6e 00 00 00 00 00 00 00 00 00 00 01 00`)
	if !bytes.Equal(b[:32], want) {
		t.Fatalf("header\n got %x\nwant %x", b[:32], want)
	}
}

func TestPortVendor(t *testing.T) {
	// GET_PORT reply: LID 5, Active.
	var p Port
	if err := p.UnmarshalBinary([]byte{5, 0, 4, 0}); err != nil || p != (Port{LID: 5, State: 4}) {
		t.Fatalf("port %+v %v", p, err)
	}
	b := make([]byte, PortSize)
	p.MarshalTo(b)
	if !bytes.Equal(b, []byte{5, 0, 4, 0}) {
		t.Fatalf("port bytes %x", b)
	}
	if err := p.UnmarshalBinary(b[:3]); !errors.Is(err, ErrShort) {
		t.Fatalf("short port: %v", err)
	}

	// GET_VENDOR reply for a node with vendid=0x2c9 devid=0xc738.
	raw := unhex(t, `c9 02 00 00 38 c7 00 00 a1 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00`)
	var v Vendor
	if err := v.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if want := (Vendor{VendorID: 0x2c9, PartID: 0xc738, HWVer: 0xa1, FWVer: 1}); v != want {
		t.Fatalf("vendor %+v, want %+v", v, want)
	}
	out := make([]byte, VendorSize)
	v.MarshalTo(out)
	if !bytes.Equal(out, raw) {
		t.Fatalf("vendor bytes %x", out)
	}
	if err := v.UnmarshalBinary(raw[:23]); !errors.Is(err, ErrShort) {
		t.Fatalf("short vendor: %v", err)
	}
}

func TestCtlTypeString(t *testing.T) {
	for typ, want := range map[CtlType]string{CtlError: "ERROR", CtlConnect: "CONNECT", CtlGetPKeys: "GET_PKEYS", 99: "UNKNOWN"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q", typ, got)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"defaults", nil, Config{SockName: "sim", ServerPort: 7070}},
		{"sockname", map[string]string{"IBSIM_SOCKNAME": "t1"}, Config{SockName: "t1", ServerPort: 7070}},
		{"empty sockname kept", map[string]string{"IBSIM_SOCKNAME": ""}, Config{SockName: "", ServerPort: 7070}},
		{"inet", map[string]string{"IBSIM_SERVER_NAME": "10.0.0.1", "IBSIM_SERVER_PORT": "9000"},
			Config{SockName: "sim", ServerName: "10.0.0.1", ServerPort: 9000}},
		{"atoi", map[string]string{"IBSIM_SERVER_PORT": " 8000x"}, Config{SockName: "sim", ServerPort: 8000}},
		{"atoi garbage", map[string]string{"IBSIM_SERVER_PORT": "x"}, Config{SockName: "sim", ServerPort: 0}},
		{"atoi wraps", map[string]string{"IBSIM_SERVER_PORT": "65537"}, Config{SockName: "sim", ServerPort: 1}},
		{"host issm", map[string]string{"SIM_HOST": "Hca1", "SIM_SET_ISSM": ""},
			Config{SockName: "sim", ServerPort: 7070, Host: "Hca1", IsSM: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configFromLookup(func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			})
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got.Inet() != (tt.want.ServerName != "") {
				t.Fatal("Inet")
			}
		})
	}
	t.Setenv("IBSIM_SOCKNAME", "fromenv")
	if c := ConfigFromEnv(); c.SockName != "fromenv" {
		t.Fatalf("ConfigFromEnv: %+v", c)
	}
}

func FuzzCtl(f *testing.F) {
	req, reply := connectVectors(f)
	f.Add(req)
	f.Add(reply)
	f.Add(make([]byte, CtlSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Ctl
		err := c.UnmarshalBinary(b)
		if err != nil && !errors.Is(err, ErrShort) && !errors.Is(err, ErrMagic) {
			t.Fatal(err)
		}
		if err != nil {
			return
		}
		out, _ := c.MarshalBinary()
		if !bytes.Equal(out, b[:CtlSize]) {
			t.Fatalf("round trip\n got %x\nwant %x", out, b[:CtlSize])
		}
	})
}

func FuzzClientInfo(f *testing.F) {
	req, reply := connectVectors(f)
	f.Add(req[16:60])
	f.Add(reply[16:60])
	f.Add(bytes.Repeat([]byte{'z'}, 44))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ci ClientInfo
		if err := ci.UnmarshalBinary(b); err != nil {
			return
		}
		out := make([]byte, ClientInfoSize)
		if err := ci.MarshalTo(out); err != nil {
			if !errors.Is(err, ErrNodeID) || len(ci.NodeID) != NodeIDSize {
				t.Fatalf("re-marshal %q: %v", ci.NodeID, err)
			}
			return
		}
		var back ClientInfo
		if err := back.UnmarshalBinary(out); err != nil || back != ci {
			t.Fatalf("round trip %+v -> %+v (%v)", ci, back, err)
		}
	})
}

func FuzzRequest(f *testing.F) {
	req, reply := drVectors(f)
	f.Add(req)
	f.Add(reply)
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Request
		if err := r.UnmarshalBinary(b); err != nil {
			return
		}
		out, _ := r.MarshalBinary()
		var back Request
		if err := back.UnmarshalBinary(out); err != nil || back != r {
			t.Fatalf("round trip %+v (%v)", back, err)
		}
		if !bytes.Equal(out[32:], b[32:RequestSize]) || !bytes.Equal(out[:2], b[:2]) {
			t.Fatal("MAD or DLID changed")
		}
	})
}

func FuzzPort(f *testing.F) {
	f.Add([]byte{5, 0, 4, 0})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Port
		if err := p.UnmarshalBinary(b); err != nil {
			return
		}
		out := make([]byte, PortSize)
		p.MarshalTo(out)
		if !bytes.Equal(out[:3], b[:3]) {
			t.Fatalf("round trip %x -> %x", b[:4], out)
		}
	})
}

func FuzzVendor(f *testing.F) {
	f.Add(make([]byte, VendorSize))
	f.Add([]byte{0xc9, 2, 0, 0, 0x38, 0xc7})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v Vendor
		if err := v.UnmarshalBinary(b); err != nil {
			return
		}
		out := make([]byte, VendorSize)
		v.MarshalTo(out)
		var back Vendor
		if err := back.UnmarshalBinary(out); err != nil || back != v {
			t.Fatalf("round trip %+v (%v)", back, err)
		}
		if !bytes.Equal(out[:12], b[:12]) || !bytes.Equal(out[16:], b[16:24]) {
			t.Fatal("bytes changed")
		}
	})
}

func BenchmarkRequestMarshal(b *testing.B) {
	req, _ := drVectors(b)
	var r Request
	r.UnmarshalBinary(req)
	out := make([]byte, RequestSize)
	b.ReportAllocs()
	for b.Loop() {
		r.MarshalTo(out)
	}
}

func BenchmarkRequestUnmarshal(b *testing.B) {
	_, reply := drVectors(b)
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		r.UnmarshalBinary(reply)
	}
}
