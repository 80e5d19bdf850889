package discover_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// benchLatency is the latency model of BenchmarkLatencyModel (see the
// docs/design.md for where the figures come from).
var benchLatency = sim.Latency{Hop: 2 * time.Microsecond, SMA: 100 * time.Microsecond, Fwd: 5 * time.Microsecond, VL15: 1}

// pathRecorder keeps the directed route of every SMP sent through it.
type pathRecorder struct {
	transport.Transport
	mu    sync.Mutex
	paths [][]byte
}

func (r *pathRecorder) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	hops := int(req[7])
	p := append([]byte(nil), req[smp.InitPathOff:smp.InitPathOff+hops+1]...)
	r.mu.Lock()
	r.paths = append(r.paths, p)
	r.mu.Unlock()
	return r.Transport.Exchange(ctx, dlid, req, resp)
}

// bound is the physical lower bound of a discovery under l: the longest
// chain of SMPs that depend on each other (at every level down to the
// deepest node, its NodeInfo and then the PortInfo of the port leading
// on, each a round trip without queueing) and the serial work of the
// busiest SMA (SMA per SMP it answers, 2·Fwd per directed-route SMP it
// forwards), whichever is larger. The SMPs are those of a lossless run.
func bound(f *model.Fabric, paths [][]byte, l sim.Latency) (b, chain, busiest time.Duration) {
	work := map[*model.Node]time.Duration{}
	for _, p := range paths {
		n := f.From
		for i := 1; i < len(p) && n != nil; i++ {
			if i > 1 {
				work[n] += 2 * l.Fwd
			}
			pp := n.Port(int(p[i]))
			if pp == nil || pp.Remote == nil {
				n = nil
				break
			}
			n = pp.Remote.Node
		}
		if n != nil {
			work[n] += l.SMA
		}
	}
	for _, w := range work {
		busiest = max(busiest, w)
	}
	depth := 0
	for _, d := range discover.Distances(f, f.From) {
		depth = max(depth, d)
	}
	for k := 0; k <= depth; k++ {
		rtt := time.Duration(2*k)*l.Hop + l.SMA
		if k > 1 {
			rtt += time.Duration(2*(k-1)) * l.Fwd
		}
		chain += 2 * rtt
	}
	return max(chain, busiest), chain, busiest
}

// BenchmarkLatencyModel compares, under the simulator's latency model
// (benchLatency: per-hop forwarding at every switch, a one-packet VL15
// buffer), the default adaptive window (also with LID-routed reads) with
// fixed windows and with the fabric's physical bound for directed-route
// reads. It reports the bound and the run's ratio to it.
func BenchmarkLatencyModel(b *testing.B) {
	fabrics := []struct{ name, spec string }{
		{"324", "fattree:levels=2,radix=24"},
		{"2832", "fattree:levels=3,radix=24,hosts=12,leaves=12,pods=16"},
		{"20.7k", "fattree:levels=3,radix=42"},
	}
	for _, fb := range fabrics {
		if testing.Short() && fb.name == "20.7k" {
			continue // (its set-up alone takes seconds)
		}
		f, tr := latencyFabric(b, latencyTree{name: fb.name, spec: fb.spec}) // managed: LIDs and routes for the LID-routed reads
		rec := &pathRecorder{Transport: tr}
		res, err := discover.Discover(context.Background(), rec, discover.Config{MaxHops: -1})
		if err != nil {
			b.Fatal(err)
		}
		bnd, chain, busiest := bound(res.Fabric, rec.paths, benchLatency)
		for _, o := range []int{0, -1, 8, 16, 32, 64, 128} {
			name := "o=" + strconv.Itoa(o)
			switch o {
			case 0:
				name = "adaptive"
			case -1:
				name = "adaptive+lid-reads"
			}
			b.Run(fb.name+"/"+name, func(b *testing.B) {
				if err := f.SetLatency(&benchLatency); err != nil {
					b.Fatal(err)
				}
				defer f.SetLatency(nil)
				var retries, smps int64
				for i := 0; i < b.N; i++ {
					res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: max(o, 0), FixedWindow: o > 0, LIDReads: o < 0})
					if err != nil {
						b.Fatal(err)
					}
					if res.Partial() {
						b.Fatalf("partial: %v", res.Errors)
					}
					retries += res.Retries
					smps += res.SMPs
				}
				per := b.Elapsed() / time.Duration(b.N)
				b.ReportMetric(float64(retries)/float64(b.N), "retries/op")
				b.ReportMetric(float64(smps)/float64(b.N), "SMPs/op")
				b.ReportMetric(float64(bnd.Microseconds())/1000, "bound-ms")
				b.ReportMetric(float64(chain.Microseconds())/1000, "chain-ms")
				b.ReportMetric(float64(busiest.Microseconds())/1000, "busiest-ms")
				b.ReportMetric(float64(per)/float64(bnd), "x-bound")
			})
		}
	}
}
