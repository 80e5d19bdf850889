package pma

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

func seed(f *testing.F, data bool) {
	for _, v := range loadVectors(f) {
		if data {
			f.Add(v.MAD[DataOffset:])
		} else {
			f.Add(v.MAD)
		}
	}
	f.Add([]byte{})
	ff := make([]byte, MADSize)
	for i := range ff {
		ff[i] = 0xFF
	}
	f.Add(ff)
}

// fuzzAttr checks decode -> encode -> decode gives the same value and
// that a decoder fails only with ErrShort.
func fuzzAttr[T any, P interface {
	*T
	madtest.Codec
}](f *testing.F) {
	seed(f, true)
	madtest.FuzzAttr[T, P](f, DataSize, ErrShort)
}

func FuzzClassPortInfo(f *testing.F)        { fuzzAttr[ClassPortInfo](f) }
func FuzzPortCounters(f *testing.F)         { fuzzAttr[PortCounters](f) }
func FuzzPortCountersExtended(f *testing.F) { fuzzAttr[PortCountersExtended](f) }

func FuzzMAD(f *testing.F) {
	seed(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m MAD
		if err := m.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrClass) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out := make([]byte, MADSize)
		if err := m.MarshalTo(out); err != nil {
			t.Fatal(err)
		}
		var m2 MAD
		if err := m2.UnmarshalBinary(out); err != nil || m2 != m {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, m2, m)
		}
		var c PortCounters
		c.UnmarshalBinary(m.Data[:])
		_ = c.AppendPerfquery(nil)
	})
}
