package discover_test

import (
	"context"
	"runtime"
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
