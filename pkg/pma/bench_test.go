package pma

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

func benchMAD(b *testing.B, name string) MAD {
	b.Helper()
	var m MAD
	if err := m.UnmarshalBinary(mustVector(b, name).MAD); err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkMADDecode(b *testing.B) {
	madtest.BenchDecode(b, new(MAD), mustVector(b, "ca-pc").MAD, true)
}

func BenchmarkPortCountersDecode(b *testing.B) {
	m := benchMAD(b, "ca-pc")
	madtest.BenchDecode(b, new(PortCounters), m.Data[:], false)
}

func BenchmarkPortCountersExtendedDecode(b *testing.B) {
	m := benchMAD(b, "ca-pcx")
	madtest.BenchDecode(b, new(PortCountersExtended), m.Data[:], false)
}

func BenchmarkClassPortInfoDecode(b *testing.B) {
	m := benchMAD(b, "sw-cpi")
	madtest.BenchDecode(b, new(ClassPortInfo), m.Data[:], false)
}

// TestDecodeAllocs holds the zero-allocation promise without -bench.
func TestDecodeAllocs(t *testing.T) {
	raw := mustVector(t, "sw-pcx-all").MAD
	var m MAD
	var c PortCounters
	var x PortCountersExtended
	var cpi ClassPortInfo
	n := testing.AllocsPerRun(100, func() {
		m.UnmarshalBinary(raw)
		c.UnmarshalBinary(m.Data[:])
		x.UnmarshalBinary(m.Data[:])
		cpi.UnmarshalBinary(m.Data[:])
	})
	if n != 0 {
		t.Fatalf("%v allocations per decode", n)
	}
}
