package netfile

import (
	"errors"
	"testing"
)

func TestParsePerformanceSet(t *testing.T) {
	for in, want := range map[string]PerfSet{
		`PerformanceSet "sw1"[3] PortCounters.SymbolErrorCounter=12`:                   {"PortCounters", "SymbolErrorCounter", 12},
		`performanceset "H-h1"[1] portcounters.portxmitwait = 0x10`:                    {"PortCounters", "PortXmitWait", 16},
		`PerformanceSet "h"[2] PortCountersExtended.PortMulticastXmitPkts=077`:         {"PortCountersExtended", "PortMultiCastXmitPkts", 63},
		`PerformanceSet "h"[2] PortCountersExtended.PortXmitData=18446744073709551615`: {"PortCountersExtended", "PortXmitData", 1<<64 - 1},
	} {
		c, err := ParseCommand(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got, err := c.PerfSet()
		if err != nil || got != want || c.Verb != "PerformanceSet" || c.Port < 0 {
			t.Errorf("%s: %+v %v (command %+v)", in, got, err, c)
		}
	}
	for _, in := range []string{
		`PerformanceSet "sw1" PortCounters.SymbolErrorCounter=1`,          // no port
		`PerformanceSet "sw1"[1] PortCounters.SymbolErrorCounter`,         // no value
		`PerformanceSet "sw1"[1] PortCounters SymbolErrorCounter=1`,       // no dot
		`PerformanceSet "sw1"[1] PortCounters.Bogus=1`,                    // unknown field
		`PerformanceSet "sw1"[1] PortRcvErrorDetails.PortLoopingErrors=1`, // not simulated
		`PerformanceSet "sw1"[1] PortCounters.SymbolErrorCounter=12x`,
		`PerformanceSet "sw1"[1] PortCounters.SymbolErrorCounter=-1`,
	} {
		if _, err := ParseCommand(in); !errors.Is(err, ErrCommand) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func FuzzPerformanceSet(f *testing.F) {
	f.Add(`PerformanceSet "sw1"[3] PortCounters.SymbolErrorCounter=12`)
	f.Add(`PerformanceSet "a"[0] PortCountersExtended.PortRcvData = 0x1`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCommand(s)
		if err != nil || c.Verb != "PerformanceSet" {
			return
		}
		if _, err := c.PerfSet(); err != nil {
			t.Fatalf("%q parsed but PerfSet fails: %v", s, err)
		}
	})
}
