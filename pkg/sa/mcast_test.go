package sa

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
)

// TestSMKey: every request, Get and GetTable, carries the client's
// SM_Key in the SA header (0 when unset) and stays a Get method.
func TestSMKey(t *testing.T) {
	for _, key := range []uint64{0, 1, 0x0123456789abcdef} {
		f := &fakeSA{n: 1}
		c := newTest(t, f)
		c.SMKey = key
		if _, err := c.GetTable(context.Background(), AttrPathRecord, 0, nil); err != nil {
			t.Fatal(err)
		}
		f.status = StatusNoRecords // the fake answers Get with a status only
		var out [PathRecordSize]byte
		if err := c.Get(context.Background(), AttrPathRecord, 0, nil, out[:]); !errors.Is(err, ErrNoRecords) {
			t.Fatal(err)
		}
		if len(f.sent) != 2 {
			t.Fatalf("%d requests sent", len(f.sent))
		}
		for i, m := range f.sent {
			var h Header
			h.UnmarshalBinary(m)
			if h.SMKey != key || h.Method != MethodGet && h.Method != MethodGetTable {
				t.Errorf("key %#x: request %d carries SM_Key %#x, method 0x%02x", key, i, h.SMKey, h.Method)
			}
		}
	}
}

// unsizedAnswer is a one-MAD GetTable answer without RMPP sizing (as
// OpenSM's reaches a client under libumad2sim) holding data.
type unsizedAnswer struct {
	fakeSA
	stride int
	data   []byte
}

func (u *unsizedAnswer) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	clear(resp[:MADSize])
	copy(resp, req[:HeaderSize])
	resp[3] |= 0x80
	resp[26] = RMPPFlagActive
	binary.BigEndian.PutUint16(resp[44:], uint16(u.stride/8))
	copy(resp[DataOffset:MADSize], u.data)
	return nil
}

// TestMCMemberRecordsCut: an unsized answer whose bytes past the last
// whole record are zero is whole; one with a record cut off past them is
// Cut. Three 56-byte MCMemberRecords fit in a MAD, the fourth is cut.
func TestMCMemberRecordsCut(t *testing.T) {
	rec := func(i int) []byte {
		b := make([]byte, 56)
		r := MCMemberRecord{MGID: GID{0xff, 0x12, 15: byte(i)}, MLID: 0xc000 + uint16(i), QKey: 0xb1b}
		r.MarshalTo(b)
		return b
	}
	for _, n := range []int{0, 1, 3, 4} {
		var data []byte
		for i := 0; i < n; i++ {
			data = append(data, rec(i+1)...)
		}
		c := newTest(t, &unsizedAnswer{stride: 56, data: data})
		recs, cut, err := c.MCMemberRecords(context.Background())
		wantLen := min(n, 3)
		if err != nil || len(recs) != wantLen || cut != (n > 3) {
			t.Fatalf("%d records sent: %d decoded, cut %v, %v", n, len(recs), cut, err)
		}
		for i := range recs {
			if recs[i].MLID != 0xc001+uint16(i) || recs[i].QKey != 0xb1b {
				t.Errorf("%d records sent: record %d %+v", n, i, recs[i])
			}
		}
	}
	// A NodeRecord table cut to one MAD: the first record whole, Cut.
	var nr NodeRecord
	nr.LID, nr.NodeInfo.PortGUID = 1, 0x10
	nr.NodeDescription.SetString("Hca1")
	data := make([]byte, 224)
	nr.MarshalTo(data)
	nr.LID, nr.NodeInfo.PortGUID = 2, 0x20
	nr.MarshalTo(data[112:])
	nodes, cut, err := newTest(t, &unsizedAnswer{stride: 112, data: data}).NodeRecords(context.Background())
	if err != nil || len(nodes) != 1 || !cut || nodes[0].NodeDescription.String() != "Hca1" || nodes[0].NodeInfo.PortGUID != 0x10 {
		t.Fatalf("%d node records, cut %v, %v", len(nodes), cut, err)
	}
	// No records (ERR_NO_RECORDS) is an empty list; another status is an error.
	recs, _, err := newTest(t, &fakeSA{status: StatusNoRecords}).MCMemberRecords(context.Background())
	if err != nil || len(recs) != 0 {
		t.Fatalf("no records: %v %v", recs, err)
	}
	if _, _, err := newTest(t, &fakeSA{status: StatusDenied}).MCMemberRecords(context.Background()); !errors.Is(err, ErrStatus) {
		t.Fatalf("denied: %v", err)
	}
}
