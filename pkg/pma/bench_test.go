package pma

import "testing"

func benchMAD(b *testing.B, name string) MAD {
	b.Helper()
	var m MAD
	if err := m.UnmarshalBinary(mustVector(b, name).mad); err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkMADDecode(b *testing.B) {
	raw := mustVector(b, "ca-pc").mad
	var m MAD
	b.ReportAllocs()
	b.SetBytes(MADSize)
	for b.Loop() {
		if err := m.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortCountersDecode(b *testing.B) {
	m := benchMAD(b, "ca-pc")
	var c PortCounters
	b.ReportAllocs()
	for b.Loop() {
		if err := c.UnmarshalBinary(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortCountersExtendedDecode(b *testing.B) {
	m := benchMAD(b, "ca-pcx")
	var c PortCountersExtended
	b.ReportAllocs()
	for b.Loop() {
		if err := c.UnmarshalBinary(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassPortInfoDecode(b *testing.B) {
	m := benchMAD(b, "sw-cpi")
	var c ClassPortInfo
	b.ReportAllocs()
	for b.Loop() {
		if err := c.UnmarshalBinary(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeAllocs holds the zero-allocation promise without -bench.
func TestDecodeAllocs(t *testing.T) {
	raw := mustVector(t, "sw-pcx-all").mad
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
