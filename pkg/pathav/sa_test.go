package pathav_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ibsimSL2VL is ibsim's default SLtoVLMappingTable: SL i to VL i, SL 15
// to VL 7.
var ibsimSL2VL = smp.SLtoVLMappingTable{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}

// TestCheckPathRecord: the SA's PathRecord against the route hA→hB of
// pathmix.net (MTU 2048 set by hA[1], 25 Gb/s set by swB[3], three
// links, VL0-7 everywhere): each disagreement is one finding naming the
// port, an SL the tables map past the OperationalVLs or to VL 15 names
// every hop it is dropped at, and a table that cannot be read is an
// error.
func TestCheckPathRecord(t *testing.T) {
	f, tabs := sweep(t, "../../cmd/ibavtrack/testdata/pathmix.net")
	src, _ := f.ResolvePort("hA", nil)
	dst, _ := f.ResolvePort("hB", nil)
	p, err := pathav.Resolve(f, tabs, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	good := sa.PathRecord{SLID: p.AV.SLID, DLID: p.AV.DLID, MTU: p.AV.MTU, Rate: p.AV.Rate}
	fixed := func(tab smp.SLtoVLMappingTable) pathav.SL2VLReader {
		return func(context.Context, *model.Node, uint8, uint8) (smp.SLtoVLMappingTable, error) { return tab, nil }
	}
	var seen []string
	logging := func(ctx context.Context, n *model.Node, in, out uint8) (smp.SLtoVLMappingTable, error) {
		seen = append(seen, fmt.Sprintf("%s %d/%d", n.Description(), in, out))
		if n.Description() == "swB" {
			t := ibsimSL2VL
			t[3] = smp.VLDrop
			return t, nil
		}
		return ibsimSL2VL, nil
	}
	tests := []struct {
		name string
		edit func(*sa.PathRecord)
		read pathav.SL2VLReader
		want string
	}{
		{"agrees", nil, fixed(ibsimSL2VL), "[]"},
		{"MTU above", func(r *sa.PathRecord) { r.MTU = smp.MTU4096 }, fixed(ibsimSL2VL),
			"[mtu hA[1]: the SA's MTU 4096 is above the 2048 the route carries (set by hA[1])]"},
		{"rate above", func(r *sa.PathRecord) { r.Rate = smp.Rate100 }, fixed(ibsimSL2VL),
			"[rate swB[3]: the SA's rate 100 Gb/s is above the 25 Gb/s the route carries (set by swB[3])]"},
		{"lower is no finding", func(r *sa.PathRecord) { r.MTU, r.Rate = smp.MTU256, smp.Rate2_5 }, fixed(ibsimSL2VL), "[]"},
		{"SL past OperVLs", func(r *sa.PathRecord) { r.SL = 9 }, fixed(ibsimSL2VL),
			"[sl2vl hA[1]: hop 1: hA[1] maps the SA's SL 9 to VL 9, at or above the 8 data VLs of hA[1] (OperationalVLs VL0-7): packets are dropped there" +
				" sl2vl swA[2]: hop 2: swA[2] maps the SA's SL 9 to VL 9, at or above the 8 data VLs of swA[2] (OperationalVLs VL0-7): packets are dropped there" +
				" sl2vl swB[3]: hop 3: swB[3] maps the SA's SL 9 to VL 9, at or above the 8 data VLs of swB[3] (OperationalVLs VL0-7): packets are dropped there]"},
		{"SL to VL 15 at one switch", func(r *sa.PathRecord) { r.SL = 3 }, logging,
			"[sl2vl swB[3]: hop 3: swB[3] maps the SA's SL 3 to VL 15: packets are dropped there]"},
	}
	for _, tt := range tests {
		pr := good
		if tt.edit != nil {
			tt.edit(&pr)
		}
		got, err := pathav.CheckPathRecord(context.Background(), p, &pr, tt.read)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var s []string
		for _, g := range got {
			s = append(s, fmt.Sprintf("%s %s: %s", g.Kind, pathav.PortName(g.Port), g.Msg))
		}
		if fmt.Sprint("[", joinSp(s), "]") != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.name, s, tt.want)
		}
	}
	// The tables asked for: the CA's (no ports), then each switch's for
	// the packets' ingress and egress ports.
	if fmt.Sprint(seen) != "[hA 0/0 swA 1/2 swB 1/3]" {
		t.Errorf("tables read: %v", seen)
	}
	bad := errors.New("no answer")
	_, err = pathav.CheckPathRecord(context.Background(), p, &good, func(context.Context, *model.Node, uint8, uint8) (smp.SLtoVLMappingTable, error) {
		return smp.SLtoVLMappingTable{}, bad
	})
	if !errors.Is(err, bad) {
		t.Fatalf("unreadable tables: %v", err)
	}
}

func joinSp(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// TestQueryPathRecordSim: the embedded simulator's SA gives for every
// pair of ports of pathmix.net the MTU and rate the route computes, and
// ApplyPathRecord takes its fields into the AV.
func TestQueryPathRecordSim(t *testing.T) {
	fab, err := sim.Load("../../cmd/ibavtrack/testdata/pathmix.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fab.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, _ := fab.Attach("")
	tr = transport.ReadOnly(tr)
	ctx := context.Background()
	lid, err := sa.MasterSMLID(ctx, tr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sa.NewClient(tr, lid)
	f, tabs := sweep(t, "../../cmd/ibavtrack/testdata/pathmix.net")
	var ports []*model.Port
	for lid := uint16(1); lid <= f.MaxLID(); lid++ {
		if p := f.PortByLID(lid); p != nil {
			ports = append(ports, p)
		}
	}
	n := 0
	for _, a := range ports {
		for _, b := range ports {
			p, err := pathav.Resolve(f, tabs, a, b)
			if err != nil {
				continue
			}
			pr, err := pathav.QueryPathRecord(ctx, c, p.AV.SLID, p.AV.DLID)
			if err != nil {
				t.Fatalf("%d→%d: %v", p.AV.SLID, p.AV.DLID, err)
			}
			if pr.MTU != p.AV.MTU || pr.Rate != p.AV.Rate {
				t.Errorf("%d→%d: SA mtu %d rate %d, computed %d %d", p.AV.SLID, p.AV.DLID, pr.MTU, pr.Rate, p.AV.MTU, p.AV.Rate)
			}
			pr.SL = 5
			pathav.ApplyPathRecord(p, &pr)
			if p.AV.SL != 5 || p.AV.SLID != pr.SLID || p.AV.DLID != pr.DLID {
				t.Errorf("applied: %+v", p.AV)
			}
			n++
		}
	}
	if n < 25 {
		t.Fatalf("only %d pairs", n)
	}
	if _, err := pathav.QueryPathRecord(ctx, c, 999, 1); !errors.Is(err, sa.ErrNoRecords) {
		t.Fatalf("unknown SLID: %v", err)
	}
}
