package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// bigFatTree is a 3-level fat tree of radix 36 (1,620 switches, 11,664
// hosts, 13,284 LIDs), routed by the embedded SM and discovered once.
func bigFatTree(b *testing.B) (*model.Fabric, *discover.Querier) {
	b.Helper()
	sf, err := sim.Generate("fattree:levels=3,radix=36", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := sf.RunSM(""); err != nil {
		b.Fatal(err)
	}
	tr, err := sf.Attach("")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16, Timeout: 5 * time.Second})
	if err != nil || res.Partial() {
		b.Fatalf("discover: %v %v", err, res.Errors)
	}
	return res.Fabric, &discover.Querier{Transport: tr, Timeout: 5 * time.Second}
}

// BenchmarkHopsDump is ibhops's default work after discovery: the min-hop
// tables of every switch and the opensm-lid-matrix.dump text.
func BenchmarkHopsDump(b *testing.B) {
	f, _ := bigFatTree(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		h := model.ComputeHops(f)
		cw := &countWriter{}
		if err := model.WriteLIDMatrixDump(cw, f, h); err != nil {
			b.Fatal(err)
		}
		n = cw.n
	}
	b.ReportMetric(float64(len(f.Switches())), "switches")
	b.ReportMetric(float64(f.MaxLID()), "LIDs")
	b.ReportMetric(float64(n), "dump-bytes")
}

// BenchmarkCheckRoutes is --check-routes after the LFTs are read: every
// switch to every LID.
func BenchmarkCheckRoutes(b *testing.B) {
	f, q := bigFatTree(b)
	tabs, err := routing.Read(context.Background(), q, f, 16)
	if err != nil {
		b.Fatal(err)
	}
	h := model.ComputeHops(f)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := routing.Check(f, tabs, h)
		if !res.Clean() {
			b.Fatalf("%d findings, first %+v", len(res.Findings), res.Findings[0])
		}
	}
	b.ReportMetric(float64(len(f.Switches())*int(f.MaxLID())), "routes")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
