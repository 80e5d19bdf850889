package health

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestJudgeSM: the SMInfo answers of a fabric's SM ports, judged.
func TestJudgeSM(t *testing.T) {
	sf, err := sim.Load("../../testdata/fabrics/fattree2.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := sf.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Fabric
	c := &checker{in: Input{Result: res}, f: f, rep: &Report{}}
	cas := f.CAs()
	// the embedded SM ran on the first node: every port names its LID
	h0, h1 := cas[0].Ports[1], cas[1].Ports[1]
	if h0.BaseLID() != 1 || h0.Info.MasterSMLID != 1 {
		t.Fatalf("the SM port is %v LID %d MasterSMLID %d, want LID 1", h0, h0.BaseLID(), h0.Info.MasterSMLID)
	}
	master := SMAnswer{Port: h0, GUID: h0.GUID, Priority: 5, State: SMMaster, ActCount: 100}
	standby := SMAnswer{Port: h1, GUID: h1.GUID, Priority: 3, State: SMStandby}
	tests := []struct {
		name    string
		got     []SMAnswer
		asked   int
		want    map[string]int
		problem bool
	}{
		{"one master", []SMAnswer{master}, 1, map[string]int{KindSMInformation: 1}, false},
		{"master and a lower standby", []SMAnswer{master, standby}, 2, map[string]int{KindSMInformation: 2}, false},
		{"standby above the master", []SMAnswer{master, {Port: h1, GUID: h1.GUID, Priority: 9, State: SMStandby}}, 2,
			map[string]int{KindSMInformation: 2, KindPriority: 1}, true},
		{"a standby that thinks it is master", []SMAnswer{master, {Port: h1, GUID: h1.GUID, Priority: 3, State: SMMaster}}, 2,
			map[string]int{KindSMInformation: 2, KindMasters: 1}, true},
		{"no master", []SMAnswer{standby}, 1, map[string]int{KindSMInformation: 1, KindNoMaster: 1}, true},
		{"master elsewhere than the ports say", []SMAnswer{{Port: h1, GUID: h1.GUID, Priority: 5, State: SMMaster}}, 1,
			map[string]int{KindSMInformation: 1, KindMasterSMLID: 1}, true},
		{"no SM port", nil, 0, map[string]int{KindNoSM: 1}, true},
	}
	for _, tt := range tests {
		fs := c.judgeSM(tt.got, tt.asked)
		got := map[string]int{}
		problem := false
		for _, f := range fs {
			got[f.Kind]++
			problem = problem || f.Severity > Info
		}
		if len(got) != len(tt.want) || problem != tt.problem {
			t.Errorf("%s: kinds %v (problem %v), want %v (%v)", tt.name, got, problem, tt.want, tt.problem)
			continue
		}
		for k, n := range tt.want {
			if got[k] != n {
				t.Errorf("%s: kinds %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}
