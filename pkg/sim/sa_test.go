package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// saClient attaches at host and returns an SA client of the fabric's SM.
func saClient(t *testing.T, f *Fabric, host string) *sa.Client {
	t.Helper()
	tr, err := f.Attach(host)
	if err != nil {
		t.Fatal(err)
	}
	tr = transport.ReadOnly(tr)
	lid, err := sa.MasterSMLID(context.Background(), tr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sa.NewClient(tr, lid)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSATables: after RunSM the embedded SA answers GetTable of every
// NodeRecord, PortInfoRecord and PathRecord as RMPP transfers of several
// segments (the client ACKing them), one record per LID, per port and per
// ordered LID pair, and of MCMemberRecord with the broadcast group; a Get of an unknown LID is ERR_NO_RECORDS; before any
// SM ran the local port has no SM.
func TestSATables(t *testing.T) {
	f, err := Load(fabricPath("mixed"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := f.Attach("H-0002c90300000d00")
	if _, err := sa.MasterSMLID(context.Background(), tr, time.Second); !errors.Is(err, sa.ErrNoSM) {
		t.Fatalf("before RunSM: %v", err)
	}
	if err := f.RunSM("H-0c42a10300000a00"); err != nil {
		t.Fatal(err)
	}
	c := saClient(t, f, "H-0002c90300000d00")
	ctx := context.Background()
	lids, ports := 0, 0
	for i := range f.nodes {
		lo, hi := f.nodePorts(int32(i))
		for p := lo; p < hi; p++ {
			if f.ports[p].lid != 0 {
				lids++
			}
			if f.nodes[i].sw >= 0 || f.ports[p].lid != 0 {
				ports++
			}
		}
	}
	for _, tc := range []struct {
		attr uint16
		want int
		segs int
	}{{sa.AttrNodeRecord, lids, 2}, {sa.AttrPortInfoRecord, ports, 2}, {sa.AttrPathRecord, lids * lids, 2}, {sa.AttrMCMemberRecord, 1, 1}} {
		tab, err := c.GetTable(ctx, tc.attr, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", sa.AttrName(tc.attr), err)
		}
		if tab.Len() != tc.want || tab.Segments < tc.segs || tab.Unsized {
			t.Errorf("%s: %d records in %d segments, want %d", sa.AttrName(tc.attr), tab.Len(), tab.Segments, tc.want)
		}
	}
	tmpl := sa.NodeRecord{LID: 999}
	var rec, out [sa.NodeRecordSize]byte
	tmpl.MarshalTo(rec[:])
	if err := c.Get(ctx, sa.AttrNodeRecord, sa.NRLID, rec[:], out[:]); !errors.Is(err, sa.ErrNoRecords) {
		t.Fatalf("unknown LID: %v", err)
	}
}
