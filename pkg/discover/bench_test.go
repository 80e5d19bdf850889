package discover_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// Fat trees of about 1k, 10k and 65k nodes (the last has 62,208 hosts).
var benchFabrics = []struct {
	name string
	spec string
}{
	{"1k", "fattree:levels=2,radix=44"},
	{"10k", "fattree:levels=3,radix=34"},
	{"50k", "fattree:levels=3,radix=48,hosts=36,leaves=36"},
}

// BenchmarkDiscover discovers each fabric through the embedded simulator
// with 16 SMPs on the wire; it reports SMPs/s, ns per SMP and the heap
// the result keeps per node.
func BenchmarkDiscover(b *testing.B) {
	for _, bf := range benchFabrics {
		b.Run(bf.name, func(b *testing.B) {
			if testing.Short() && bf.name == "50k" {
				b.Skip("short")
			}
			f, err := sim.Generate(bf.spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			tr, err := f.Attach("")
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			b.ReportAllocs()
			var smps int64
			var nodes int
			var perNode float64
			for i := 0; i < b.N; i++ {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				smps += res.SMPs
				nodes = len(res.Fabric.Nodes)
				perNode = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(nodes)
				runtime.KeepAlive(res)
				b.StartTimer()
			}
			b.ReportMetric(float64(smps)/b.Elapsed().Seconds(), "SMPs/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(smps), "ns/SMP")
			b.ReportMetric(float64(nodes), "nodes")
			b.ReportMetric(perNode, "B/node")
		})
	}
}

// BenchmarkWindow measures discovery under the simulator's latency model
// (1 µs per hop, 20 µs SMA service time, a one-packet VL15 buffer that
// drops SMPs arriving while the SMA is busy) against the window size, on
// a fabric with few targets per level and on one with many, with the
// default 1 s timeout: a VL15 drop costs a whole timeout. It reports the
// retries (= drops) per discovery.
func BenchmarkWindow(b *testing.B) {
	fabrics := []struct{ name, spec string }{
		{"narrow", "fattree:levels=2,radix=8"},
		{"wide", "fattree:levels=3,radix=24,hosts=12,leaves=12,pods=16"},
	}
	for _, fb := range fabrics {
		for _, o := range []int{1, 2, 4, 8, 16, 32, 64, 0} {
			name := "o=" + strconv.Itoa(o)
			if o == 0 {
				name = "adaptive"
			}
			b.Run(fb.name+"/"+name, func(b *testing.B) {
				f, err := sim.Generate(fb.spec+";Latency hop=1us sma=20us vl15=1", nil)
				if err != nil {
					b.Fatal(err)
				}
				tr, err := f.Attach("")
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				var retries, smps int64
				for i := 0; i < b.N; i++ {
					res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: o, FixedWindow: o != 0})
					if err != nil {
						b.Fatal(err)
					}
					if res.Partial() {
						b.Fatalf("partial: %v", res.Errors)
					}
					retries += res.Retries
					smps += res.SMPs
				}
				b.ReportMetric(float64(retries)/float64(b.N), "retries/op")
				b.ReportMetric(float64(smps)/float64(b.N), "SMPs/op")
			})
		}
	}
}
