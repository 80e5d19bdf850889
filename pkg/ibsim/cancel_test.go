//go:build linux

package ibsim

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/ibsimtest"
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
