package discover_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// stall holds every 50th SMP until its attempt's context ends and then
// reports the context's error, as a transport may: that attempt times
// out whatever timeout the engine chose for it (a fixed delay past
// MinRTO did not outlast an estimate inflated by a busy machine).
type stall struct {
	transport.Transport
	n atomic.Int64
}

func (s *stall) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if s.n.Add(1)%50 == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute): // no deadline: answer late after all
		}
	}
	return s.Transport.Exchange(ctx, dlid, req, resp)
}

// TestSlowAnswerIsRetried: an SMP that outlives the first attempt's
// estimated timeout is retried with the full timeout; the result is
// complete, not interrupted, whatever error the transport reported.
func TestSlowAnswerIsRetried(t *testing.T) {
	_, tr := attach(t, "fattree:levels=2,radix=8", "")
	want := topo(t, discoverAll(t, tr, discover.Config{MaxHops: -1}).Fabric)
	res := discoverAll(t, &stall{Transport: tr}, discover.Config{MaxHops: -1, Outstanding: 4})
	if res.Partial() || res.Interrupted {
		t.Fatalf("partial=%v interrupted=%v errors=%v", res.Partial(), res.Interrupted, res.Errors)
	}
	if res.Retries == 0 {
		t.Error("no retries counted for the stalled SMPs")
	}
	if got := topo(t, res.Fabric); got != want {
		t.Error("topology differs from the run without stalls")
	}
}
