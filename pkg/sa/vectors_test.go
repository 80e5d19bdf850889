package sa

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

// TestVectors: every answer OpenSM's SA gave (testdata/*.hex, written by
// testdata/capture.sh) decodes to the records saquery printed for the
// same query, field by field, and every record re-encodes to its bytes.
func TestVectors(t *testing.T) {
	vs := madtest.LoadAll(t)
	kinds := map[string]int{}
	for _, v := range vs {
		var h Header
		if err := h.UnmarshalBinary(v.MAD); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		attr := map[string]uint16{"nr": AttrNodeRecord, "pir": AttrPortInfoRecord, "pr": AttrPathRecord, "mcmr": AttrMCMemberRecord}[strings.SplitN(v.Name, "-", 2)[0]]
		method := MethodGetTableResp
		if attr == AttrNodeRecord {
			method = MethodGetResp
		}
		if h.Status != 0 || h.AttrID != attr || h.Method != method || h.ClassVersion != ClassVersion {
			t.Fatalf("%s: header %+v", v.Name, h)
		}
		var recs [][]byte
		if method == MethodGetResp {
			recs = [][]byte{v.MAD[DataOffset : DataOffset+int(h.AttributeOffset)*8]}
		} else {
			// OpenSM under libumad2sim: RMPP Active only, no sizing.
			if h.RMPP.Flags != RMPPFlagActive || h.RMPP.Type != 0 || h.RMPP.Data1 != 0 {
				t.Errorf("%s: RMPP header %+v", v.Name, h.RMPP)
			}
			tab, err := single(&h, attr, v.MAD)
			if err != nil || !tab.Unsized || tab.Len() != 1 {
				t.Fatalf("%s: %d records (unsized %v), %v", v.Name, tab.Len(), tab.Unsized, err)
			}
			recs = [][]byte{tab.Record(0)}
		}
		theirs := parseSaquery(v.Out)
		var ours map[string]string
		out := make([]byte, len(recs[0]))
		switch attr {
		case AttrPathRecord:
			var p PathRecord
			p.UnmarshalBinary(recs[0])
			ours = pathFields(&p)
			p.MarshalTo(out)
		case AttrNodeRecord:
			var n NodeRecord
			n.UnmarshalBinary(recs[0])
			ours = nodeFields(&n)
			n.MarshalTo(out)
		case AttrPortInfoRecord:
			var r PortInfoRecord
			r.UnmarshalBinary(recs[0])
			ours = portInfoFields(&r)
			r.MarshalTo(out)
		case AttrMCMemberRecord:
			var m MCMemberRecord
			m.UnmarshalBinary(recs[0])
			ours = mcFields(&m)
			m.MarshalTo(out)
		}
		if d := diffFields(ours, theirs); len(d) > 0 {
			t.Errorf("%s: %v", v.Name, d)
		}
		if !bytes.Equal(out, recs[0]) {
			t.Errorf("%s: re-encoded\n%x\nwant\n%x", v.Name, out, recs[0])
		}
		kinds[strings.SplitN(v.Name, "-", 2)[0]]++
	}
	if len(kinds) != 4 {
		t.Errorf("vectors of %v only", kinds)
	}
}

// TestDecodersShort: every decoder refuses a short buffer with ErrShort.
func TestDecodersShort(t *testing.T) {
	b := make([]byte, MCMemberRecordSize-1)
	for name, err := range map[string]error{
		"Header":         new(Header).UnmarshalBinary(b),
		"PathRecord":     new(PathRecord).UnmarshalBinary(b),
		"NodeRecord":     new(NodeRecord).UnmarshalBinary(b),
		"PortInfoRecord": new(PortInfoRecord).UnmarshalBinary(b),
		"MCMemberRecord": new(MCMemberRecord).UnmarshalBinary(b),
	} {
		if err != ErrShort {
			t.Errorf("%s: %v", name, err)
		}
	}
}
