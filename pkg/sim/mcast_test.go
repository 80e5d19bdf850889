package sim

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestBroadcastGroup: after RunSM every CA port with a LID is a member
// of the broadcast group: the SA lists one MCMemberRecord per member
// (its PortGID, full member) to a request with OpenSM's SM_Key, and one
// without a PortGID to any other, as OpenSM; a PortGID in the component
// mask selects that member. The MFT entry of 0xC000 of each switch
// forwards to its member CA ports and to tree links whose other end
// forwards back, and every member is reached.
func TestBroadcastGroup(t *testing.T) {
	f, err := Load(fabricPath("demo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := saClient(t, f, "")
	tab, err := c.GetTable(ctx, sa.AttrMCMemberRecord, 0, make([]byte, sa.MCMemberRecordSize))
	if err != nil || tab.Len() != 1 {
		t.Fatalf("without the SM_Key: %d records, %v; want 1", tab.Len(), err)
	}
	var r sa.MCMemberRecord
	r.UnmarshalBinary(tab.Record(0))
	if r.PortGID != (sa.GID{}) || r.MLID != 0xc000 {
		t.Errorf("without the SM_Key: %+v, want the group with no PortGID", r)
	}
	cas := map[uint64]bool{}
	for i := range f.nodes {
		n := &f.nodes[i]
		if n.typ != smp.NodeCA {
			continue
		}
		lo, hi := f.nodePorts(int32(i))
		for p := lo; p < hi; p++ {
			if f.ports[p].lid != 0 {
				cas[n.guid+uint64(f.ports[p].num)] = true
			}
		}
	}
	c.SMKey = OpenSMSMKey
	tab, err = c.GetTable(ctx, sa.AttrMCMemberRecord, 0, make([]byte, sa.MCMemberRecordSize))
	if err != nil || tab.Len() != len(cas) || len(cas) == 0 {
		t.Fatalf("with the SM_Key: %d records, %v; want %d", tab.Len(), err, len(cas))
	}
	var last sa.MCMemberRecord
	for i := 0; i < tab.Len(); i++ {
		last.UnmarshalBinary(tab.Record(i))
		if g := binary.BigEndian.Uint64(last.PortGID[8:]); !cas[g] || last.JoinState != 1 || last.MLID != 0xc000 {
			t.Errorf("record %d: PortGUID %#x join state %d mlid %#x", i, g, last.JoinState, last.MLID)
		}
	}
	tmpl := make([]byte, sa.MCMemberRecordSize)
	last.MarshalTo(tmpl)
	if tab, err = c.GetTable(ctx, sa.AttrMCMemberRecord, sa.MCRPortGID, tmpl); err != nil || tab.Len() != 1 {
		t.Errorf("by PortGID: %d records, %v", tab.Len(), err)
	}
	// The MFTs: each switch-to-switch port in a mask is in the mask of
	// the other end; each CA port in a mask is a member; every member's
	// switch forwards to it.
	mask := func(sw int32, p uint8) bool {
		s := &f.sws[f.nodes[sw].sw]
		if s.mft == nil {
			return false
		}
		off := int(p/16) * 64
		return binary.BigEndian.Uint16(s.mft[off:])&(1<<(p%16)) != 0
	}
	reached := 0
	for i := range f.nodes {
		n := &f.nodes[i]
		if n.sw < 0 {
			continue
		}
		for p := uint8(1); p <= n.nports; p++ {
			if !mask(int32(i), p) {
				continue
			}
			pp := &f.ports[n.base+int32(p)]
			rp := &f.ports[pp.remote]
			rn := &f.nodes[rp.node]
			switch {
			case rn.sw >= 0 && !mask(rp.node, rp.num):
				t.Errorf("%s port %d: forwards to %s port %d, which does not forward back", n.id, p, rn.id, rp.num)
			case rn.sw < 0 && !cas[rn.guid+uint64(rp.num)]:
				t.Errorf("%s port %d: forwards to a port not a member", n.id, p)
			case rn.sw < 0:
				reached++
			}
		}
	}
	if reached != len(cas) {
		t.Errorf("%d of %d members reached", reached, len(cas))
	}
}
