package discover_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// classCount counts the LID-routed SMPs sent through it; with noRoute
// they get no answer, as where no subnet manager set up routes.
type classCount struct {
	transport.Transport
	lid     atomic.Int64
	noRoute bool
}

func (c *classCount) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if req[1] == 0x01 {
		c.lid.Add(1)
		if c.noRoute {
			return &transport.OpError{Op: "recv", Source: "test", Err: transport.ErrTimeout}
		}
	}
	return c.Transport.Exchange(ctx, dlid, req, resp)
}

// TestLIDReads: with LIDReads on a managed fabric most reads go
// LID-routed and the result is the same as by directed routes only; on a
// fabric without routes the first failure turns it off and the result is
// still the same and complete.
func TestLIDReads(t *testing.T) {
	const spec = "fattree:levels=3,radix=8"
	f, tr := attach(t, spec, "")
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	want := discoverAll(t, tr, discover.Config{MaxHops: -1})
	cc := &classCount{Transport: tr}
	got := discoverAll(t, cc, discover.Config{MaxHops: -1, LIDReads: true})
	if topo(t, got.Fabric) != topo(t, want.Fabric) || got.Partial() {
		t.Errorf("LID-routed reads: topology differs or partial (%v)", got.Errors)
	}
	if n := cc.lid.Load(); n < got.SMPs/2 {
		t.Errorf("%d of %d SMPs LID-routed", n, got.SMPs)
	}
	// No SM: LIDs are 0, nothing is sent LID-routed.
	_, tr2 := attach(t, spec, "")
	want2 := discoverAll(t, tr2, discover.Config{MaxHops: -1})
	cc2 := &classCount{Transport: tr2}
	got2 := discoverAll(t, cc2, discover.Config{MaxHops: -1, LIDReads: true})
	if topo(t, got2.Fabric) != topo(t, want2.Fabric) || got2.Partial() || cc2.lid.Load() != 0 {
		t.Errorf("no SM: topology differs %v, partial %v, %d LID-routed", topo(t, got2.Fabric) != topo(t, want2.Fabric), got2.Errors, cc2.lid.Load())
	}
	// LIDs but no routes: the first LID-routed read fails, the rest go
	// by directed route, nothing is missing.
	cc3 := &classCount{Transport: tr, noRoute: true}
	got3 := discoverAll(t, cc3, discover.Config{MaxHops: -1, LIDReads: true, Timeout: 50 * time.Millisecond})
	if topo(t, got3.Fabric) != topo(t, want.Fabric) || got3.Partial() {
		t.Errorf("no routes: topology differs or partial (%v)", got3.Errors)
	}
	// (the workers that started a LID-routed read before the first
	// failure finish theirs, each with its attempts)
	if n := cc3.lid.Load(); n == 0 || n >= got3.SMPs/2 {
		t.Errorf("no routes: %d of %d SMPs LID-routed", n, got3.SMPs)
	}
}
