package smp

import (
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

func benchData(b *testing.B, name string) (MAD, []byte) {
	b.Helper()
	v := mustVector(b, name)
	m := decodeMAD(b, v)
	return m, v.MAD
}

func BenchmarkMADDecode(b *testing.B) {
	_, raw := benchData(b, "sp-portinfo-0,1")
	madtest.BenchDecode(b, new(MAD), raw, true)
}

func BenchmarkMADEncode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	madtest.BenchEncode(b, &m, make([]byte, MADSize), true)
}

func BenchmarkNodeInfoDecode(b *testing.B) {
	m, _ := benchData(b, "sp-nodeinfo-0,1")
	madtest.BenchDecode(b, new(NodeInfo), m.Data[:], false)
}

func BenchmarkNodeInfoEncode(b *testing.B) {
	m, _ := benchData(b, "sp-nodeinfo-0,1")
	var n NodeInfo
	if err := n.UnmarshalBinary(m.Data[:]); err != nil {
		b.Fatal(err)
	}
	madtest.BenchEncode(b, &n, make([]byte, DataSize), false)
}

func BenchmarkPortInfoDecode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	madtest.BenchDecode(b, new(PortInfo), m.Data[:], false)
}

func BenchmarkPortInfoEncode(b *testing.B) {
	m, _ := benchData(b, "sp-portinfo-0,1")
	var p PortInfo
	if err := p.UnmarshalBinary(m.Data[:]); err != nil {
		b.Fatal(err)
	}
	madtest.BenchEncode(b, &p, make([]byte, DataSize), false)
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
