package portcounters

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// queueingPeer is a peer that queues, as ibsim does: it takes at most
// room requests at once (more wait to be taken, and one not taken by its
// deadline times out, "ibsim does not take our requests"), and answers
// them one at a time, each after service.
type queueingPeer struct {
	transport.Transport
	room    chan struct{}
	server  chan struct{}
	service time.Duration
}

func (q *queueingPeer) Limits() transport.Limits {
	return transport.Limits{Window: cap(q.room), Queues: true}
}

func (q *queueingPeer) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	select {
	case q.room <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("peer does not take our requests: %w", transport.ErrTimeout)
	}
	defer func() { <-q.room }()
	select {
	case q.server <- struct{}{}:
	case <-ctx.Done():
		return transport.ErrTimeout
	}
	time.Sleep(q.service)
	err := q.Transport.Exchange(context.Background(), dlid, req, resp)
	<-q.server
	if ctx.Err() != nil {
		return transport.ErrTimeout // answered after the requester gave up
	}
	return err
}

// TestQueueingPeerNoPartial: through a peer that queues (ibsim) and is
// slow (a loaded machine), reading every port's counters with the
// default -o of 1024 is as robust as discovery through it: the MADs go
// through discovery's Querier, whose window keeps no more in flight than
// the peer takes, so none waits long enough to time out. (Each node's
// reader sent its MAD at once, and ibavtrack errors --ibsim on 2,144
// nodes under load ended partial with PMA queries "timed out".)
func TestQueueingPeerNoPartial(t *testing.T) {
	nf, err := netfile.Generate("fattree:levels=2,radix=16")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.New(nf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v", err)
	}
	peer := &queueingPeer{Transport: tr, room: make(chan struct{}, 8), server: make(chan struct{}, 1), service: 3 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Read(ctx, Config{Transport: peer, Timeout: 400 * time.Millisecond, Retries: 0,
		Outstanding: discover.DefaultOutstanding, PerPort: true}, res.Fabric)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Failures); n != 0 {
		t.Fatalf("%d of %d PMA queries failed through a queueing peer (partial result), the first: %v", n, rep.MADs, rep.Failures[0])
	}
	t.Logf("%d MADs, %d nodes", rep.MADs, len(rep.Nodes))
}
