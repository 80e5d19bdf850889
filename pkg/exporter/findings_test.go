package exporter

import (
	"slices"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/health"
)

// TestFindingCounts: infiniband_health_finding counts the findings of one
// check, kind and severity at one place and peer; another port, peer,
// kind or severity is another series, and series keep the order in which
// each first appears.
func TestFindingCounts(t *testing.T) {
	sw := health.Place{Node: "S1", NodeGUID: 0x10, Port: 3}
	ca := health.Place{Node: "H1", NodeGUID: 0x20, Port: 1}
	node := health.Place{Node: "S2", NodeGUID: 0x30, Port: -1} // a finding about a whole node
	f := func(kind string, sev health.Severity, p health.Place, peer *health.Place) health.Finding {
		return health.Finding{Check: health.CheckLinks, Kind: kind, Severity: sev, Place: p, Peer: peer}
	}
	r := &health.Report{Findings: []health.Finding{
		f("speed", health.Warning, sw, &ca),
		f("speed", health.Warning, sw, &ca),
		f("speed", health.Warning, sw, nil),
		f("width", health.Warning, sw, &ca),
		f("speed", health.Warning, node, nil),
		f("speed", health.Warning, sw, &ca),
		f("speed", health.Error, sw, &ca),
		f("speed", health.Warning, ca, &sw),
	}}
	link := health.CheckLinks
	want := []findingCount{
		{link, "speed", "warning", "S1", "0x0000000000000010", "3", "0x0000000000000020", "1", 3},
		{link, "speed", "warning", "S1", "0x0000000000000010", "3", "", "", 1},
		{link, "width", "warning", "S1", "0x0000000000000010", "3", "0x0000000000000020", "1", 1},
		{link, "speed", "warning", "S2", "0x0000000000000030", "", "", "", 1},
		{link, "speed", "error", "S1", "0x0000000000000010", "3", "0x0000000000000020", "1", 1},
		{link, "speed", "warning", "H1", "0x0000000000000020", "1", "0x0000000000000010", "3", 1},
	}
	if got := findingCounts(r); !slices.Equal(got, want) {
		t.Errorf("findingCounts:\n got %+v\nwant %+v", got, want)
	}
}
