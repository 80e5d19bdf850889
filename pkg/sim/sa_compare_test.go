//go:build linux

package sim

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// byLID reads the NodeRecord of every LID from 1 up (the SA answers one
// per port with a LID) and returns the LID of each port GUID.
func byLID(t *testing.T, c *sa.Client) map[uint64]uint16 {
	t.Helper()
	m := map[uint64]uint16{}
	for lid := uint16(1); lid < 200; lid++ {
		tmpl := sa.NodeRecord{LID: lid}
		var rec, out [sa.NodeRecordSize]byte
		tmpl.MarshalTo(rec[:])
		err := c.Get(context.Background(), sa.AttrNodeRecord, sa.NRLID, rec[:], out[:])
		if errors.Is(err, sa.ErrNoRecords) {
			continue
		}
		if err != nil {
			t.Fatalf("NodeRecord %d: %v", lid, err)
		}
		var n sa.NodeRecord
		n.UnmarshalBinary(out[:])
		m[n.NodeInfo.PortGUID] = lid
	}
	return m
}

// TestSAPathRecordsMatchOpenSM: on a fabric of mixed link widths, speeds
// and MTUs, the embedded SA's PathRecord for every ordered pair of ports
// with a LID equals OpenSM's (3.3.23 on ibsim) in every field but the
// LIDs, which are the LIDs each SM gave the same ports; so does the IPoIB
// broadcast group's MCMemberRecord.
func TestSAPathRecordsMatchOpenSM(t *testing.T) {
	ibsimtest.Require(t)
	const smHost, host = "H-0c42a10300000a00", "H-0002c90300000d00"
	abs, err := filepath.Abs(fabricPath("mixed"))
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, abs)
	s.StartOpenSM(t, smHost)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName, Host: host, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	osmTr := transport.ReadOnly(cl)
	smLID, err := sa.MasterSMLID(ctx, osmTr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	osm, _ := sa.NewClient(osmTr, smLID)
	osm.Timeout = 5 * time.Second

	f, err := Load(abs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(smHost); err != nil {
		t.Fatal(err)
	}
	ours := saClient(t, f, host)
	osmLIDs, ourLIDs := byLID(t, osm), byLID(t, ours)
	if len(osmLIDs) != len(ourLIDs) || len(ourLIDs) < 7 {
		t.Fatalf("OpenSM LIDs %v, ours %v", osmLIDs, ourLIDs)
	}
	tab, err := ours.GetTable(ctx, sa.AttrPathRecord, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	guidOf := func(g sa.GID) uint64 {
		var v uint64
		for _, b := range g[8:] {
			v = v<<8 | uint64(b)
		}
		return v
	}
	n := 0
	for i := 0; i < tab.Len(); i++ {
		var p sa.PathRecord
		p.UnmarshalBinary(tab.Record(i))
		sl, dl := osmLIDs[guidOf(p.SGID)], osmLIDs[guidOf(p.DGID)]
		if sl == 0 || dl == 0 || ourLIDs[guidOf(p.SGID)] != p.SLID || ourLIDs[guidOf(p.DGID)] != p.DLID {
			t.Fatalf("record %+v: OpenSM LIDs %d %d", p, sl, dl)
		}
		tmpl := sa.PathRecord{SLID: sl, DLID: dl}
		var rec [sa.PathRecordSize]byte
		tmpl.MarshalTo(rec[:])
		ot, err := osm.GetTable(ctx, sa.AttrPathRecord, sa.PRSLID|sa.PRDLID, rec[:])
		if err != nil || ot.Len() != 1 {
			t.Fatalf("OpenSM %d→%d: %d records, %v", sl, dl, ot.Len(), err)
		}
		var o sa.PathRecord
		o.UnmarshalBinary(ot.Record(0))
		o.SLID, o.DLID = p.SLID, p.DLID
		if o != p {
			t.Errorf("PathRecord %d→%d (ours %d→%d):\n ours   %+v\n OpenSM %+v", sl, dl, p.SLID, p.DLID, p, o)
		}
		n++
	}
	if n != len(ourLIDs)*len(ourLIDs) {
		t.Fatalf("%d PathRecords for %d LIDs", n, len(ourLIDs))
	}
	t.Logf("%d PathRecords equal OpenSM's", n)
	// The broadcast group: OpenSM's record (one MAD, no member yet)
	// equals ours.
	og, err := osm.GetTable(ctx, sa.AttrMCMemberRecord, 0, nil)
	if err != nil || og.Len() != 1 {
		t.Fatalf("OpenSM groups: %d, %v", og.Len(), err)
	}
	mg, err := ours.GetTable(ctx, sa.AttrMCMemberRecord, 0, nil)
	if err != nil || mg.Len() != 1 {
		t.Fatalf("our groups: %d, %v", mg.Len(), err)
	}
	var a, b sa.MCMemberRecord
	a.UnmarshalBinary(og.Record(0))
	b.UnmarshalBinary(mg.Record(0))
	if a != b {
		t.Errorf("broadcast group:\n ours   %+v\n OpenSM %+v", b, a)
	}
}
