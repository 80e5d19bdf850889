package discover

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/topology"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// limited is a transport stating Limits, counting the most Exchanges in
// flight at once and the attempts that carried a deadline.
type limited struct {
	transport.Transport
	lim       transport.Limits
	in, most  atomic.Int32
	deadlines atomic.Int32 // attempts with a deadline
}

func (l *limited) Limits() transport.Limits { return l.lim }

func (l *limited) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	n := l.in.Add(1)
	defer l.in.Add(-1)
	for {
		m := l.most.Load()
		if n <= m || l.most.CompareAndSwap(m, n) {
			break
		}
	}
	if _, ok := ctx.Deadline(); ok {
		l.deadlines.Add(1)
	}
	return l.Transport.Exchange(ctx, dlid, req, resp)
}

// The engine takes -o as an upper bound over the transport's own window,
// and the result does not change.
func TestTransportWindowBoundsOutstanding(t *testing.T) {
	f, err := sim.Generate("fattree:levels=2,radix=8", nil)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, lim := range []transport.Limits{{}, {Window: 3}, {Window: 3, Deadline: true}, {Window: 1000, Deadline: true}} {
		tr, err := f.Attach("")
		if err != nil {
			t.Fatal(err)
		}
		l := &limited{Transport: tr, lim: lim}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := Discover(ctx, l, Config{Outstanding: 16, FixedWindow: true, FixedTimeout: true})
		cancel()
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		bound := int32(16)
		if lim.Window > 0 && lim.Window < 16 {
			bound = int32(lim.Window)
		}
		if m := l.most.Load(); m > bound {
			t.Errorf("%+v: %d SMPs in flight at most, want at most %d", lim, m, bound)
		}
		if l.deadlines.Load() == 0 {
			t.Errorf("%+v: no attempt carried a deadline", lim)
		}
		var b bytes.Buffer
		if err := topology.WriteTopology(&b, res.Fabric, topology.Options{Generated: time.Unix(0, 0).UTC()}); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		if want == "" {
			want = got
		} else if got != want {
			t.Errorf("%+v: result differs:\n%s\nwant\n%s", lim, got, want)
		}
	}
}
