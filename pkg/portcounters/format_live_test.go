package portcounters

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/pma"
)

// TestDataFormatLive: the data and packet counters as ibqueryerrors 44
// --counters prints them on ibsim (PortCountersExtended), set to values
// of every unit (bytes to petabytes, counts to peta): appendData formats
// each value it printed the same way.
func TestDataFormatLive(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, ibsimtest.ExampleNet+"/net", ibsimtest.WithConsole())
	s.RunOpenSM(t, "Hca1", t.TempDir())
	compared, units := 0, map[string]bool{}
	fields := []string{"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts",
		"PortUnicastXmitPkts", "PortUnicastRcvPkts", "PortMultiCastXmitPkts", "PortMultiCastRcvPkts"}
	for i, v := range []uint64{0, 1, 255, 256, 300, 1023, 262143, 262144, 300000, 123456789, 1 << 30, 3000000000, 5000000000000, 1 << 50} {
		for _, f := range fields {
			// (Hca1 is cabled at port 1, Hca2 at port 2)
			h := strconv.Itoa(1 + i%2)
			c := "PerformanceSet \"Hca" + h + "\"[" + h + "] PortCountersExtended." + f + "=" + strconv.FormatUint(v+uint64(i), 10)
			if out := s.Console(t, c); !strings.Contains(out, "has been set") {
				t.Fatalf("%s: %s", c, out)
			}
		}
		out, terr, _ := s.RunTool(t, "Hca1", "ibqueryerrors", "--counters", "--skip-sl")
		m := fieldValue.FindAllStringSubmatch(string(out), -1)
		if len(m) == 0 {
			t.Fatalf("ibqueryerrors --counters printed no counter:\n%s%s", out, terr)
		}
		for _, f := range m {
			v, _ := strconv.ParseUint(f[2], 10, 64)
			s := &Sample{HasExt: true}
			e := &s.Ext
			p := map[string]*uint64{"PortXmitData": &e.PortXmitData, "PortRcvData": &e.PortRcvData, "PortXmitPkts": &e.PortXmitPkts,
				"PortRcvPkts": &e.PortRcvPkts, "PortUnicastXmitPkts": &e.PortUnicastXmitPkts, "PortUnicastRcvPkts": &e.PortUnicastRcvPkts,
				"PortMulticastXmitPkts": &e.PortMulticastXmitPkts, "PortMulticastRcvPkts": &e.PortMulticastRcvPkts}[f[1]]
			if p == nil {
				continue
			}
			*p = v
			want := f[0]
			for _, part := range strings.SplitAfter(string(appendData(nil, s, pma.CapExtWidth, true)), "]") {
				if strings.HasPrefix(part, " ["+f[1]+" ") {
					compared++
					units[unit.FindString(want)] = true
					if p := strings.TrimPrefix(part, " "); p != want {
						t.Errorf("%s: ours %s", want, p)
					}
				}
			}
		}
	}
	for _, u := range []string{")]", "K)]", "M)]", "G)]", "T)]", "P)]", "B)]", "KB)]", "MB)]", "GB)]", "TB)]", "PB)]"} {
		if !units[u] {
			t.Errorf("no value printed in unit %q (%d compared): the values do not cover it", strings.TrimSuffix(u, ")]"), compared)
		}
	}
}

var (
	fieldValue = regexp.MustCompile(`\[(\w+) == (\d+) \([^)]*\)\]`)
	unit       = regexp.MustCompile(`[A-Z]*\)\]$`)
)
