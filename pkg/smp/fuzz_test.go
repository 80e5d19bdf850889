package smp

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

// seedAttr adds the data area of every captured vector (the attribute's
// own first) and a few edge cases to the fuzz corpus.
func seedAttr(f *testing.F, attr uint16) {
	f.Helper()
	var own, other [][]byte
	for _, v := range loadVectors(f) {
		m := decodeMAD(f, v)
		if m.AttrID == attr {
			own = append(own, m.Data[:])
		} else {
			other = append(other, m.Data[:])
		}
	}
	for _, b := range append(own, other...) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 63))
	ff := make([]byte, DataSize)
	for i := range ff {
		ff[i] = 0xFF
	}
	f.Add(ff)
}

// fuzzAttr checks decode -> encode -> decode gives the same value, and
// that a decoder fails only with ErrShort.
func fuzzAttr[T any, P interface {
	*T
	attrCodec
}](f *testing.F, attr uint16) {
	seedAttr(f, attr)
	madtest.FuzzAttr[T, P](f, DataSize, ErrShort)
}

func FuzzNodeInfo(f *testing.F)        { fuzzAttr[NodeInfo](f, AttrNodeInfo) }
func FuzzNodeDescription(f *testing.F) { fuzzAttr[NodeDescription](f, AttrNodeDescription) }
func FuzzSwitchInfo(f *testing.F)      { fuzzAttr[SwitchInfo](f, AttrSwitchInfo) }
func FuzzPortInfo(f *testing.F)        { fuzzAttr[PortInfo](f, AttrPortInfo) }
func FuzzLFT(f *testing.F)             { fuzzAttr[LinearForwardingTable](f, AttrLinearForwardingTable) }
func FuzzMFT(f *testing.F)             { fuzzAttr[MulticastForwardingTable](f, AttrMulticastFwdTable) }
func FuzzPKeyTable(f *testing.F)       { fuzzAttr[PKeyTable](f, AttrPKeyTable) }
func FuzzSLtoVL(f *testing.F)          { fuzzAttr[SLtoVLMappingTable](f, AttrSLtoVLMappingTable) }
func FuzzVLArb(f *testing.F)           { fuzzAttr[VLArbitrationTable](f, AttrVLArbitrationTable) }
func FuzzGUIDInfo(f *testing.F)        { fuzzAttr[GUIDInfo](f, AttrGUIDInfo) }
func FuzzMlnxExtPortInfo(f *testing.F) { fuzzAttr[MlnxExtPortInfo](f, AttrMlnxExtPortInfo) }
func FuzzPortInfoExtended(f *testing.F) {
	fuzzAttr[PortInfoExtended](f, AttrPortInfoExtended)
}

func FuzzMAD(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add(v.MAD)
	}
	f.Add(unhex(f, ref17Response))
	f.Add(unhex(f, ref17Request))
	f.Add(make([]byte, MADSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m1 MAD
		if err := m1.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrClass) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		_ = m1.Path().String()
		_ = StatusText(m1.StatusCode())
		out := make([]byte, MADSize)
		if err := m1.MarshalTo(out); err != nil {
			if errors.Is(err, ErrHopCount) && m1.HopCount > MaxHops {
				return
			}
			t.Fatal(err)
		}
		var m2 MAD
		if err := m2.UnmarshalBinary(out); err != nil {
			t.Fatal(err)
		}
		if m1 != m2 {
			t.Fatalf("round trip\n got %+v\nwant %+v", m2, m1)
		}
	})
}

func FuzzParseDRPath(f *testing.F) {
	for _, s := range []string{"0", "0,1", "0,3,5", " 0 , 254", "1", "0,,1", "0,256", "0,1,2,3,4,5,6,7,8,9,10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseDRPath(s)
		if err != nil {
			return
		}
		q, err := ParseDRPath(p.String())
		if err != nil || q != p {
			t.Fatalf("%q -> %q -> %v, %v", s, p.String(), q, err)
		}
		m := NewGet(p, AttrNodeInfo, 0)
		if m.Path() != p {
			t.Fatalf("NewGet path %s != %s", m.Path(), p)
		}
	})
}
