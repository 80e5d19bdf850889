package sa

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

func seed(f *testing.F) {
	for _, v := range madtest.LoadAll(f) {
		f.Add(v.MAD)
		f.Add(v.MAD[DataOffset:])
	}
	f.Add([]byte{})
	ff := make([]byte, MADSize)
	for i := range ff {
		ff[i] = 0xFF
	}
	f.Add(ff)
}

// fuzzRecord checks decode -> encode -> decode gives the same value and
// that the decoder fails only with ErrShort.
func fuzzRecord[T any, P interface {
	*T
	madtest.Codec
}](f *testing.F, size int) {
	seed(f)
	madtest.FuzzAttr[T, P](f, size, ErrShort)
}

func FuzzPathRecord(f *testing.F)     { fuzzRecord[PathRecord](f, PathRecordSize) }
func FuzzNodeRecord(f *testing.F)     { fuzzRecord[NodeRecord](f, NodeRecordSize) }
func FuzzPortInfoRecord(f *testing.F) { fuzzRecord[PortInfoRecord](f, PortInfoRecordSize) }
func FuzzMCMemberRecord(f *testing.F) { fuzzRecord[MCMemberRecord](f, MCMemberRecordSize) }

// FuzzHeader: the SA header decodes or fails with ErrShort, ErrVersion or
// ErrClass; what decodes re-encodes to the same bytes (the reserved bytes
// 6, 7, 18, 19, 46 and 47 aside) and decodes to the same value.
func FuzzHeader(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.UnmarshalBinary(b); err != nil {
			if err != ErrShort && err != ErrVersion && err != ErrClass {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out := make([]byte, HeaderSize)
		if err := h.MarshalTo(out); err != nil {
			t.Fatal(err)
		}
		want := append([]byte(nil), b[:HeaderSize]...)
		want[6], want[7], want[18], want[19], want[46], want[47] = 0, 0, 0, 0, 0, 0
		if !bytes.Equal(out, want) {
			t.Fatalf("re-encoded %x, want %x", out, want)
		}
		var h2 Header
		if err := h2.UnmarshalBinary(out); err != nil || h2 != h {
			t.Fatalf("%+v, then %+v (%v)", h, h2, err)
		}
	})
}

// FuzzAnswer: any MAD taken as a GetTable answer, one MAD or the first of
// a transfer, gives records or one of the package's errors, never a
// panic.
func FuzzAnswer(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.UnmarshalBinary(b); err != nil {
			return
		}
		if len(b) < MADSize {
			return
		}
		tab, err := single(&h, h.AttrID, b)
		if err != nil {
			for _, e := range []error{ErrStatus, ErrRMPP, ErrOutOfOrder, ErrTruncated, ErrMultiSegment, ErrBadAnswer} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if tab.Stride > 0 {
			for i := 0; i < tab.Len(); i++ {
				_ = tab.Record(i)
			}
		}
		r := newReassembly(h.AttrID)
		r.add(&h, b)
	})
}
