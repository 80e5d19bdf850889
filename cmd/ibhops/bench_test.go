package main

import (
	"context"
	"errors"
	"io"
	"runtime"
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

// hugeSpec is the 3-level fat tree of issue 9 item 4: 2,448 switches,
// 62,208 hosts, more ports than unicast LIDs (15,505 hosts get none).
const hugeSpec = "fattree:levels=3,radix=48,hosts=36,leaves=36"

// hugeFatTree is hugeSpec routed by the embedded SM (which runs out of
// LIDs) and discovered once. It also returns the live heap of the
// simulator and the discovered fabric together, as ibhops holds them.
func hugeFatTree(b *testing.B) (*model.Fabric, uint64) {
	b.Helper()
	base := heapInUse()
	sf, err := sim.Generate(hugeSpec, nil)
	if err != nil {
		b.Fatal(err)
	}
	var le *sim.LIDSpaceError
	if err := sf.RunSM(""); !errors.As(err, &le) {
		b.Fatalf("RunSM: %v, want a LIDSpaceError", err)
	}
	tr, err := sf.Attach("")
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16, Timeout: 5 * time.Second})
	if err != nil || res.Partial() {
		b.Fatalf("discover: %v %v", err, res.Errors)
	}
	live := heapInUse() - base
	runtime.KeepAlive(sf)
	return res.Fabric, live
}

// hopsHeapBudget is the most live heap ComputeHops may hold for
// hugeSpec: the floor of OpenSM's layout is one byte per switch × switch
// LID × port (2,448 × 2,448 × 49 = 294 MB); the budget allows 10% on top.
const hopsHeapBudget = 2448 * 2448 * 49 * 11 / 10

// BenchmarkHopsDump50k is BenchmarkHopsDump on hugeSpec. Besides B/op it
// reports the live heap the hop tables hold (hops-heap-MB; MiB) and fails
// when it is above hopsHeapBudget, so a layout regression shows; and the
// live heap of simulator + discovered fabric before them (fabric-heap-MB).
func BenchmarkHopsDump50k(b *testing.B) {
	f, fabricHeap := hugeFatTree(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	var live uint64
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		h := model.ComputeHops(f)
		live = heapInUse() - before
		cw := &countWriter{}
		if err := model.WriteLIDMatrixDump(cw, f, h); err != nil {
			b.Fatal(err)
		}
		n = cw.n
		runtime.KeepAlive(h)
	}
	b.StopTimer()
	if live > hopsHeapBudget {
		b.Errorf("hop tables hold %d MB of heap, budget %d MB", live>>20, hopsHeapBudget>>20)
	}
	b.ReportMetric(float64(len(f.Switches())), "switches")
	b.ReportMetric(float64(f.MaxLID()), "LIDs")
	b.ReportMetric(float64(n), "dump-bytes")
	b.ReportMetric(float64(live)/(1<<20), "hops-heap-MB")
	b.ReportMetric(float64(fabricHeap)/(1<<20), "fabric-heap-MB")
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
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
