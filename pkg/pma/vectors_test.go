package pma

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

// vector is one captured response GMP from testdata/*.hex (written by
// testdata/capture.sh from ibsim 0.10 and perfquery 44.0): the 256 bytes
// and the text perfquery printed for the same port.
type vector = madtest.Vector

func loadVectors(t testing.TB) []vector { return madtest.LoadAll(t) }

func mustVector(t testing.TB, name string) vector { return madtest.Must(t, name) }

var capRE = regexp.MustCompile(`\(CapMask: (0x[0-9a-f]{4})`)

func TestVectorsHeader(t *testing.T) {
	for _, v := range loadVectors(t) {
		var m MAD
		if err := m.UnmarshalBinary(v.MAD); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if m.Class != Class || m.Method != MethodGetResp || m.Status != 0 || m.ClassVersion != 1 {
			t.Errorf("%s: header %+v", v.Name, m)
		}
		out := make([]byte, MADSize)
		if err := m.MarshalTo(out); err != nil {
			t.Fatal(err)
		}
		if string(out[:DataOffset]) != string(v.MAD[:DataOffset]) || string(out[DataOffset:]) != string(v.MAD[DataOffset:]) {
			t.Errorf("%s: re-encoding differs", v.Name)
		}
	}
}

func TestVectorsClassPortInfo(t *testing.T) {
	for name, want := range map[string]uint16{"ca-cpi": 0x1200, "sw-cpi": 0x1300} {
		v := mustVector(t, name)
		var m MAD
		if err := m.UnmarshalBinary(v.MAD); err != nil {
			t.Fatal(err)
		}
		var c ClassPortInfo
		if err := c.UnmarshalBinary(m.Data[:]); err != nil {
			t.Fatal(err)
		}
		got := capRE.FindStringSubmatch(v.Out[0])
		if got == nil || got[1] != fmt.Sprintf("0x%04x", c.CapabilityMask) || c.CapabilityMask != want {
			t.Errorf("%s: CapabilityMask 0x%04x, perfquery %q", name, c.CapabilityMask, v.Out[0])
		}
		if c.BaseVersion != 1 || c.ClassVersion != 1 || c.RespTimeValue != 0x12 || c.CapabilityMask2 != 0 {
			t.Errorf("%s: %+v", name, c)
		}
		if !c.Has(CapExtWidth|CapXmitWait) || c.Has(CapAllPortSelect) != (name == "sw-cpi") {
			t.Errorf("%s: capability bits %#x", name, c.CapabilityMask)
		}
	}
}

// TestVectorsPortCounters compares every field with perfquery's output
// for the same response, line for line.
func TestVectorsPortCounters(t *testing.T) {
	n := 0
	for _, v := range loadVectors(t) {
		var m MAD
		if err := m.UnmarshalBinary(v.MAD); err != nil {
			t.Fatal(err)
		}
		var got string
		switch m.AttrID {
		case AttrPortCounters:
			var c PortCounters
			if err := c.UnmarshalBinary(m.Data[:]); err != nil {
				t.Fatal(err)
			}
			got = string(c.AppendPerfquery(nil))
		case AttrPortCountersExtended:
			var c PortCountersExtended
			if err := c.UnmarshalBinary(m.Data[:]); err != nil {
				t.Fatal(err)
			}
			got = string(c.AppendText(nil, false))
		default:
			continue
		}
		n++
		want := strings.Join(v.Out[1:], "\n") + "\n"
		if got != want {
			t.Errorf("%s:\n got:\n%s\nwant (perfquery):\n%s", v.Name, got, want)
		}
	}
	if n < 5 {
		t.Fatalf("only %d counter vectors", n)
	}
}

func TestVectorValues(t *testing.T) {
	v := mustVector(t, "ca-pc")
	var m MAD
	m.UnmarshalBinary(v.MAD)
	var c PortCounters
	c.UnmarshalBinary(m.Data[:])
	e := c.Errors()
	want := Errors{PortRcvErrors: 7, LocalLinkIntegrityErrors: 3, ExcessiveBufferOverrunErrors: 9, VL15Dropped: 65535, PortXmitWait: 1234}
	if e != want || c.QP1Dropped != 0 || c.PortSelect != 1 {
		t.Errorf("errors %v QP1Dropped %d, want %v", e, c.QP1Dropped, want)
	}
	if c.PortXmitData != 72*c.PortXmitPkts {
		t.Errorf("ibsim counts 72 dwords per packet: data %d pkts %d", c.PortXmitData, c.PortXmitPkts)
	}
	v = mustVector(t, "sw-pc-all")
	m.UnmarshalBinary(v.MAD)
	c.UnmarshalBinary(m.Data[:])
	if c.PortSelect != AllPorts || c.SymbolErrorCounter != 12 || c.PortXmitDiscards != 5 || c.LinkDownedCounter != 255 {
		t.Errorf("sw all ports: %+v", c)
	}
}
