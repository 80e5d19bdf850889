//go:build linux

package ibsim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// The cut that ctx cancellation schedules for a control exchange may run
// after that exchange ended (context.AfterFunc's stop cannot take back a
// function already started). It must not cut the next control request
// short. The hooks hold the cut back until the next request is on the
// wire, the worst moment.
func TestLateCancelSparesNextRequest(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	c := dial(t, s, "")
	guid, err := c.GUID(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	cutEntered := make(chan struct{})
	releaseCut := make(chan struct{})
	cutDone := make(chan struct{})
	testHookCut = func() {
		close(cutEntered)
		<-releaseCut
	}
	testHookCutDone = func() { close(cutDone) }
	sent := 0
	testHookCtlSent = func(CtlType) {
		sent++
		switch sent {
		case 1:
			// First request on the wire: cancel its ctx. The cut starts
			// and waits in the hook.
			cancel1()
			<-cutEntered
		case 2:
			// Second request on the wire: let the stale cut run now.
			close(releaseCut)
			<-cutDone
		}
	}
	defer func() { testHookCut, testHookCutDone, testHookCtlSent = nil, nil, nil }()

	// The first request's reply is not cut off (the cut waits in the
	// hook), so it succeeds or reports the cancellation; either is fine.
	c.GUID(ctx1)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	got, err := c.GUID(ctx2)
	if err != nil {
		t.Fatalf("the request after a cancelled one: %v", err)
	}
	if got != guid {
		t.Fatalf("GUID %#x, want %#x", got, guid)
	}
}

// deadlineOnly is a ctx with a deadline but no timer behind Done (a
// cheap per-SMP ctx an engine might use).
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }

// The client ends an Exchange at its ctx's deadline even when the ctx
// does not fire then.
func TestDeadlineWithoutTimer(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	c := dial(t, s, "")
	ctx := deadlineOnly{Context: context.Background(), d: time.Now().Add(30 * time.Millisecond)}
	done := make(chan error, 1)
	go func() {
		done <- c.Exchange(ctx, smp.PermissiveLID, badHopPointer(t), make([]byte, smp.MADSize))
	}()
	select {
	case err := <-done:
		if !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("Exchange: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Exchange outlived its ctx deadline by 20s")
	}
}
