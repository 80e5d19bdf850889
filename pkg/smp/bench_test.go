package smp

import "testing"

func benchData(b *testing.B, name string) (MAD, []byte) {
	b.Helper()
	v := mustVector(b, name)
	m := decodeMAD(b, v)
	return m, v.mad
}

func BenchmarkMADDecode(b *testing.B) {
	_, raw := benchData(b, "sp-portinfo-0,1")
	var m MAD
	b.ReportAllocs()
	b.SetBytes(MADSize)
	for b.Loop() {
		if err := m.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMADEncode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	out := make([]byte, MADSize)
	b.ReportAllocs()
	b.SetBytes(MADSize)
	for b.Loop() {
		if err := m.MarshalTo(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNodeInfoDecode(b *testing.B) {
	m, _ := benchData(b, "sp-nodeinfo-0,1")
	var n NodeInfo
	b.ReportAllocs()
	for b.Loop() {
		if err := n.UnmarshalBinary(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNodeInfoEncode(b *testing.B) {
	m, _ := benchData(b, "sp-nodeinfo-0,1")
	var n NodeInfo
	if err := n.UnmarshalBinary(m.Data[:]); err != nil {
		b.Fatal(err)
	}
	out := make([]byte, DataSize)
	b.ReportAllocs()
	for b.Loop() {
		if err := n.MarshalTo(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortInfoDecode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	var p PortInfo
	b.ReportAllocs()
	for b.Loop() {
		if err := p.UnmarshalBinary(m.Data[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortInfoEncode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	var p PortInfo
	if err := p.UnmarshalBinary(m.Data[:]); err != nil {
		b.Fatal(err)
	}
	out := make([]byte, DataSize)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.MarshalTo(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLinkToken(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	var p PortInfo
	if err := p.UnmarshalBinary(m.Data[:]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = PortSpeedToken(&p, &p, false)
		_ = WidthToken(p.LinkWidthActive)
	}
}
