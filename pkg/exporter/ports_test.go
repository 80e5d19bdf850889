package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestRecordRoundTrip: a port's counters packed and read back are the
// same, the largest values included, and a cursor finds each port of a
// node's records in port order (and none it has no record of).
func TestRecordRoundTrip(t *testing.T) {
	var errs pma.Errors
	for i := range errs {
		errs[i] = math.MaxUint64 - uint64(i)
	}
	recs := []struct {
		port int
		pc   PortCounters
	}{
		{0, PortCounters{}},
		{1, PortCounters{Failed: true}},
		{2, PortCounters{Errors: pma.Errors{1, 2, 3}, XmitData: math.MaxUint32, RcvData: math.MaxUint32 - 1, XmitPkts: 5, RcvPkts: 6, QP1Dropped: math.MaxUint16}},
		{7, PortCounters{Ext: true, Errors: errs, XmitData: math.MaxUint64, RcvData: 1 << 40, XmitPkts: 1<<63 + 1, RcvPkts: 127,
			UnicastXmitPkts: 128, UnicastRcvPkts: 1 << 35, MulticastXmitPkts: math.MaxUint64 - 1, MulticastRcvPkts: 0, QP1Dropped: 1}},
		{255, PortCounters{Ext: true, XmitData: 300}},
	}
	var b []byte
	for _, r := range recs {
		one := appendRecord(nil, r.port, r.pc)
		if len(one) > maxRecord {
			t.Errorf("port %d: record of %d bytes, more than maxRecord %d", r.port, len(one), maxRecord)
		}
		port, rec, rest, ok := nextRecord(one)
		if pc := rec.counters(); !ok || port != r.port || pc != r.pc || len(rest) != 0 {
			t.Errorf("port %d: read back port %d %+v (ok %v, %d bytes left), want %+v", r.port, port, pc, ok, len(rest), r.pc)
		}
		if !r.pc.Failed {
			// each field on its own, as Write reads them
			want := append(r.pc.Errors[:], r.pc.XmitData, r.pc.RcvData, r.pc.XmitPkts, r.pc.RcvPkts,
				r.pc.UnicastXmitPkts, r.pc.UnicastRcvPkts, r.pc.MulticastXmitPkts, r.pc.MulticastRcvPkts, r.pc.QP1Dropped)
			for k, v := range want {
				if got := rec.field(k); got != v {
					t.Errorf("port %d: field %d is %d, want %d", r.port, k, got, v)
				}
			}
		}
		b = append(b, one...)
	}
	cur := cursor{b: b, port: -1}
	for _, p := range []int{0, 1, 2, 3, 7, 8, 255} {
		rec, ok := cur.at(p)
		pc := rec.counters()
		var want *PortCounters
		for i := range recs {
			if recs[i].port == p {
				want = &recs[i].pc
			}
		}
		switch {
		case want == nil && ok:
			t.Errorf("port %d: found %+v, it has no record", p, pc)
		case want != nil && !ok:
			t.Errorf("port %d: not found", p)
		case want != nil && pc != *want:
			t.Errorf("port %d: %+v, want %+v", p, pc, *want)
		}
	}
	// a switch's AllPortSelect sum is no port's
	st, n := newPortStore(), &model.Node{}
	st.add(n, &portcounters.Sample{Port: int(pma.AllPorts)})
	st.add(n, &portcounters.Sample{Port: 3})
	if port, _, rest, ok := nextRecord(st.records(n)); !ok || port != 3 || len(rest) != 0 {
		t.Errorf("after a sum and port 3: the records are %v, want port 3's alone", st.records(n))
	}
	if _, _, _, ok := nextRecord(b[:len(b)-1]); !ok {
		t.Error("the first record is whole")
	}
	if _, _, _, ok := nextRecord(appendRecord(nil, 3, recs[3].pc)[:10]); ok {
		t.Error("a record cut short reads as whole")
	}
}

// TestPackedCountersAsTheReport: the counters Collect packs as they are
// read are, port by port, the values of the samples a full report keeps
// (PortCountersExtended's data counters where the port has them, else
// PortCounters'), and the metrics written from them are the bytes
// written from a report that kept every sample.
func TestPackedCountersAsTheReport(t *testing.T) {
	for _, net := range []string{"../../testdata/fabrics/fattree2.net", "../../testdata/fabrics/dualhomed.net"} {
		f, err := sim.Load(net, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.RunSM(""); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(net, "fattree2.net") {
			if err := f.PerformanceSet("L0", 1, "PortCounters", "SymbolErrorCounter", 7); err != nil {
				t.Fatal(err)
			}
			if err := f.PerformanceSet("L0", 2, "PortCountersExtended", "PortXmitData", 1<<40); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := f.Attach("")
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		ctx := context.Background()
		res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1})
		if err != nil {
			t.Fatal(err)
		}
		st := newPortStore()
		full, err := portcounters.Read(ctx, portcounters.Config{Transport: tr, PerPort: true, Sampled: st.add}, res.Fabric)
		if err != nil {
			t.Fatal(err)
		}
		packed := &Collection{Result: res, Counters: full, ports: st}
		ext, n := 0, 0
		for i := range full.Nodes {
			nr := &full.Nodes[i]
			for _, s := range nr.Ports {
				n++
				got, ok := packed.PortCounters(nr.Node, s.Port)
				if !ok {
					t.Errorf("%s: %s port %d not packed", net, nr.Node.Description(), s.Port)
					continue
				}
				want := PortCounters{Failed: s.Err != nil}
				if s.Err == nil {
					want = PortCounters{Ext: s.HasExt, Errors: s.Errors, QP1Dropped: uint64(s.Counters.QP1Dropped),
						XmitData: uint64(s.Counters.PortXmitData), RcvData: uint64(s.Counters.PortRcvData),
						XmitPkts: uint64(s.Counters.PortXmitPkts), RcvPkts: uint64(s.Counters.PortRcvPkts)}
				}
				if s.Err == nil && s.HasExt {
					ext++
					x := &s.Ext
					want.XmitData, want.RcvData, want.XmitPkts, want.RcvPkts = x.PortXmitData, x.PortRcvData, x.PortXmitPkts, x.PortRcvPkts
					want.UnicastXmitPkts, want.UnicastRcvPkts = x.PortUnicastXmitPkts, x.PortUnicastRcvPkts
					want.MulticastXmitPkts, want.MulticastRcvPkts = x.PortMulticastXmitPkts, x.PortMulticastRcvPkts
				}
				if got != want {
					t.Errorf("%s: %s port %d: packed %+v, the sample has %+v", net, nr.Node.Description(), s.Port, got, want)
				}
			}
		}
		if n == 0 || ext == 0 {
			t.Fatalf("%s: %d samples, %d of them extended: nothing compared", net, n, ext)
		}
		var a, b bytes.Buffer
		if err := Write(&a, packed); err != nil {
			t.Fatal(err)
		}
		if err := Write(&b, &Collection{Result: res, Counters: full}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) || !bytes.Contains(a.Bytes(), []byte("_port_symbol_error_total{")) {
			t.Errorf("%s: the metrics from the packed counters (%d bytes) differ from the report's (%d bytes)", net, a.Len(), b.Len())
		}
	}
}

// TestGzipStored: the gzip member the handler writes by hand for the
// exporter's own metrics decodes, alone and before another member, to
// what was stored, at every size up to several deflate blocks.
func TestGzipStored(t *testing.T) {
	for _, n := range []int{0, 1, 300, 0xffff, 0x10000, 200000} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i*7 + i>>9)
		}
		b := appendGzipStored(nil, p)
		var next bytes.Buffer
		zw := gzip.NewWriter(&next)
		zw.Write([]byte("next member\n"))
		zw.Close()
		zr, err := gzip.NewReader(bytes.NewReader(append(b, next.Bytes()...)))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if want := append(p, "next member\n"...); !bytes.Equal(got, want) {
			t.Errorf("%d bytes: read back %d bytes, not what was stored", n, len(got))
		}
	}
}
