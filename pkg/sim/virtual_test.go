package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// TestLatencyVirtualClock: with TimersOnly the model runs on a virtual
// clock (a testing/synctest bubble) and an Exchange takes exactly the
// modelled time: hops each way, firmware forwarding at every switch a
// directed route crosses, the target's SMA, and a VL15 drop waits for the
// attempt's deadline.
func TestLatencyVirtualClock(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", nil) // H0 - L0 port 1; L0 ports 3, 4 to the spines
	if err != nil {
		t.Fatal(err)
	}
	get := func(ports ...uint8) []byte {
		var p smp.DRPath
		for _, n := range ports {
			var err error
			if p, err = p.Extend(n); err != nil {
				t.Fatal(err)
			}
		}
		m := smp.NewGet(p, smp.AttrNodeInfo, 0)
		b := make([]byte, smp.MADSize)
		if err := m.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		if err := f.SetLatency(&Latency{Hop: 2 * time.Microsecond, SMA: 100 * time.Microsecond, Fwd: 5 * time.Microsecond, VL15: 1, TimersOnly: true}); err != nil {
			t.Fatal(err)
		}
		defer f.SetLatency(nil)
		tr, err := f.Attach("")
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		resp := make([]byte, smp.MADSize)
		for _, tc := range []struct {
			name string
			req  []byte
			want time.Duration
		}{
			// 2 µs out, 100 µs SMA, 2 µs back
			{"leaf, 1 hop", get(1), 104 * time.Microsecond},
			// 2 out, 5 forwarding at the leaf, 2, 100 SMA, 2, 5 at the leaf, 2
			{"spine, 2 hops", get(1, 3), 118 * time.Microsecond},
		} {
			start := time.Now()
			if err := tr.Exchange(context.Background(), smp.PermissiveLID, tc.req, resp); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := time.Since(start); got != tc.want {
				t.Errorf("%s: took %v, want %v", tc.name, got, tc.want)
			}
		}
		// Two SMPs for the leaf at once: its one-packet buffer takes one,
		// the other is lost and its attempt ends at its deadline.
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		start := time.Now()
		errs := make(chan error, 2)
		for range 2 {
			req, resp := get(1), make([]byte, smp.MADSize)
			go func() { errs <- tr.Exchange(ctx, smp.PermissiveLID, req, resp) }()
		}
		lost := 0
		for range 2 {
			if err := <-errs; errors.Is(err, transport.ErrTimeout) {
				lost++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); lost != 1 || got != time.Millisecond {
			t.Errorf("two SMPs at once: %d lost after %v, want 1 after the 1ms deadline", lost, got)
		}
	})
}
