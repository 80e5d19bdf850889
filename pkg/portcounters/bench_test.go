package portcounters

import (
	"context"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// BenchmarkReadFatTree reads every port of a 2,144-node fat tree served
// by the embedded simulator (AllPortSelect sums on the switches), 16
// nodes at a time.
func BenchmarkReadFatTree(b *testing.B) {
	f, err := sim.Generate("fattree:levels=2,radix=64", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		b.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		b.Fatal(err)
	}
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16})
	if err != nil {
		b.Fatal(err)
	}
	for _, perPort := range []bool{false, true} {
		name := "sums"
		if perPort {
			name = "per-port"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var mads int64
			for b.Loop() {
				rep, err := Read(context.Background(), Config{Transport: tr, Outstanding: 16, PerPort: perPort}, res.Fabric)
				if err != nil || len(rep.Failures) > 0 {
					b.Fatalf("%v %v", err, rep.Failures)
				}
				mads = rep.MADs
			}
			b.ReportMetric(float64(mads), "MADs/op")
		})
	}
}
