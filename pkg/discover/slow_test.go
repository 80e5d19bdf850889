package discover_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// stall delays every 50th SMP past the first attempt's short timeout and
// then reports its context's error, as a transport may.
type stall struct {
	transport.Transport
	n atomic.Int64
}

func (s *stall) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if s.n.Add(1)%50 == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(discover.MinRTO + 30*time.Millisecond):
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
