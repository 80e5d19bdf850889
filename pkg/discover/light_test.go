package discover_test

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// getsOnly fails the test on any SMP that is not a SubnGet.
type getsOnly struct {
	transport.Transport
	t *testing.T
}

func (g getsOnly) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if req[3] != smp.MethodGet {
		g.t.Errorf("method %#x sent", req[3])
	}
	return g.Transport.Exchange(ctx, dlid, req, resp)
}

// TestLightSweepPortStateChange: with an SM that clears the
// PortStateChange bits an idle light sweep reads each switch's SwitchInfo
// alone; without one every switch stays marked and its neighbourhood is
// read every time, and still no change is reported while nothing
// changed, and a link unplugged is. Only SubnGet is sent.
func TestLightSweepPortStateChange(t *testing.T) {
	for _, withSM := range []bool{true, false} {
		name := "no SM"
		if withSM {
			name = "SM"
		}
		t.Run(name, func(t *testing.T) {
			f, err := sim.Generate("fattree:levels=2,radix=8", nil)
			if err != nil {
				t.Fatal(err)
			}
			if withSM {
				if err := f.RunSM("H0"); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := f.Attach("")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			tr := getsOnly{raw, t}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := discover.Discover(ctx, tr, discover.Config{})
			if err != nil || res.Partial() {
				t.Fatalf("discover: %v %v", err, res.Errors)
			}
			sws := len(res.Fabric.Switches())
			light := func() *discover.LightResult {
				t.Helper()
				lr, err := discover.LightSweep(ctx, &discover.Querier{Transport: tr, Timeout: time.Second}, res.Fabric, nil, 8)
				if err != nil {
					t.Fatal(err)
				}
				return lr
			}
			lr := light()
			if lr.Changed {
				t.Fatalf("idle: change seen: %s", lr.Why)
			}
			switch {
			case withSM && (lr.Marked != 0 || lr.SMPs != int64(sws)):
				t.Errorf("idle with an SM: %d marked, %d SMPs; want 0 and one per switch (%d)", lr.Marked, lr.SMPs, sws)
			case !withSM && (lr.Marked != sws || lr.SMPs <= int64(sws)):
				t.Errorf("idle without an SM: %d marked, %d SMPs; want all %d switches and their neighbourhoods", lr.Marked, lr.SMPs, sws)
			}
			if err := f.Unlink("H12", 1); err != nil {
				t.Fatal(err)
			}
			if lr := light(); !lr.Changed {
				t.Errorf("link unplugged: no change seen (%+v)", lr)
			} else {
				t.Logf("link unplugged: %s", lr.Why)
			}
		})
	}
}
