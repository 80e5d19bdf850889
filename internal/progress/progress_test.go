package progress

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestLine: ibnetdiscover's -s line for a new and a known node.
func TestLine(t *testing.T) {
	var ni [smp.DataSize]byte
	info := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeSwitch, NumPorts: 8, NodeGUID: 0x200001, PortGUID: 0x200001}
	info.MarshalTo(ni[:])
	f := model.NewFabric()
	path, _ := smp.ParseDRPath("0,3")
	n, err := f.AddNode(ni[:], path)
	if err != nil {
		t.Fatal(err)
	}
	n.Desc.SetString("Switch2")
	pi := smp.PortInfo{LID: 3, LMC: 1}
	var raw [smp.DataSize]byte
	pi.MarshalTo(raw[:])
	n.EnsurePort(0, 0x200001).SetInfo(raw[:])

	tests := []struct {
		p    discover.Progress
		want string
	}{
		{discover.Progress{Path: path, New: true, Node: n}, "DR path slid 0; dlid 0; 0,3 -> new Switch {0000000000200001} portnum 0 lid 0-0 \"\"\n"},
		{discover.Progress{Path: path, Node: n, LID: 3, LMC: 1, HasDesc: true}, "DR path slid 0; dlid 0; 0,3 -> known Switch {0000000000200001} portnum 0 lid 3-4 \"Switch2\"\n"},
	}
	for _, tt := range tests {
		if got := string(Line(tt.p)); got != tt.want {
			t.Errorf("Line = %q, want %q", got, tt.want)
		}
	}
}
