package discover

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// A transport whose peer queues (Limits.Queues, as ibsim) gets a node's
// reads at once and sibling probes together; the result, the SMPs sent
// and the failures are those of the one-SMP-per-node engine, for every
// window, and -o stays a hard bound (TestQueuesReadsTogether shows the
// SMPs going out together).
func TestQueuesSameResult(t *testing.T) {
	for _, spec := range []string{
		"fattree:levels=2,radix=8",
		"fattree:levels=3,radix=4",
		`fattree:levels=2,radix=8;Error "L2" 100 21`, // PortInfo of one switch fails
		`fattree:levels=2,radix=8;Error "S0" 100 16`, // and a NodeDescription
		"../../testdata/fabrics/mlnxpar.net",         // Mellanox ExtendedPortInfo
		"../../testdata/fabrics/mixed.net",
		"../../testdata/fabrics/loop.net",
		"../../testdata/fabrics/dualhomed.net",
		"../../testdata/fabrics/parallel.net",
		"../../testdata/fabrics/router.net",
		"../../testdata/fabrics/chain10.net",
	} {
		t.Run(spec, func(t *testing.T) {
			var f *sim.Fabric
			var err error
			if strings.HasPrefix(spec, "fattree:") {
				f, err = sim.Generate(spec, nil)
			} else {
				f, err = sim.Load(spec, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				topo          string
				smps, retries int64
				errs          []string
				problems      []string
				levels        int
				err           string
			}
			var limit Config // the hop or node limit of the runs
			run := func(queues bool, o int) outcome {
				tr, err := f.Attach("")
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				p := &limited{Transport: tr, lim: transport.Limits{Queues: queues}}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				res, err := Discover(ctx, p, Config{Outstanding: o, FixedWindow: true, FixedTimeout: true, Timeout: 10 * time.Second, Retries: 1,
					MaxHops: limit.MaxHops, MaxNodes: limit.MaxNodes})
				if err != nil {
					t.Fatal(err)
				}
				if m := p.most.Load(); m > int32(o) {
					t.Errorf("queues %v -o %d: %d SMPs in flight", queues, o, m)
				}
				out := outcome{topo: topoOf(t, res), smps: res.SMPs, retries: res.Retries, levels: res.Levels, err: fmt.Sprint(res.Err)}
				for _, e := range res.Errors {
					out.errs = append(out.errs, e.Error())
				}
				slices.Sort(out.errs)
				for _, p := range res.Problems {
					out.problems = append(out.problems, p.String())
				}
				slices.Sort(out.problems)
				return out
			}
			for _, limit = range []Config{{}, {MaxHops: 2}, {MaxNodes: 10}} {
				want := run(false, 1)
				for _, o := range []int{1, 3, 16, 64} {
					for _, queues := range []bool{false, true} {
						got := run(queues, o)
						what := fmt.Sprintf("queues %v -o %d, hop limit %d, node limit %d", queues, o, limit.MaxHops, limit.MaxNodes)
						if got.topo != want.topo {
							t.Errorf("%s: topology differs:\n%s\nwant\n%s", what, got.topo, want.topo)
						}
						if got.smps != want.smps || got.retries != want.retries {
							t.Errorf("%s: %d SMPs (%d retries), want %d (%d)", what, got.smps, got.retries, want.smps, want.retries)
						}
						if !slices.Equal(got.errs, want.errs) || !slices.Equal(got.problems, want.problems) {
							t.Errorf("%s: failures %q, problems %q, want %q, %q", what, got.errs, got.problems, want.errs, want.problems)
						}
						if got.levels != want.levels || got.err != want.err {
							t.Errorf("%s: %d levels, error %s, want %d, %s", what, got.levels, got.err, want.levels, want.err)
						}
					}
				}
			}
		})
	}
}

// A switch's reads go out together when the peer queues.
func TestQueuesReadsTogether(t *testing.T) {
	tr := fatTree8(t)
	g := &gated{Transport: tr, path: string([]byte{1, 0, 1}), gate: make(chan struct{}), held: make(chan int, 64)}
	done := make(chan error, 1)
	go func() {
		_, err := Discover(context.Background(), g, Config{Outstanding: 64, FixedWindow: true, FixedTimeout: true, Timeout: time.Minute})
		done <- err
	}()
	// The leaf one hop from the host (DR path 0,1): its NodeInfo probe,
	// then all its reads at once: NodeDescription, SwitchInfo and the
	// PortInfo of ports 0 to 8.
	for _, want := range []int{1, 11} {
		receive(t, g.held, want, "SMPs to the leaf at once")
		g.open(want != 11)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// gated holds the SMPs to one node (by hop count and initial path) until
// told: it reports each one held on held, and open lets all held go.
type gated struct {
	transport.Transport
	path string
	mu   sync.Mutex
	gate chan struct{} // nil: open for good
	held chan int
}

// open lets the SMPs held go, and holds the next ones if again.
func (g *gated) open(again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = nil
	if again {
		g.gate = make(chan struct{})
	}
}

func (g *gated) Limits() transport.Limits { return transport.Limits{Queues: true} }

func (g *gated) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if string(req[7:8])+string(req[128:128+int(req[7])+1]) == g.path {
		g.mu.Lock()
		gate := g.gate
		g.mu.Unlock()
		if gate != nil {
			g.held <- 1
			<-gate
		}
	}
	return g.Transport.Exchange(ctx, dlid, req, resp)
}

// fatTree8 attaches to the embedded two-level fat tree of radix 8 at its
// first host.
func fatTree8(t *testing.T) transport.Transport {
	t.Helper()
	f, err := sim.Generate("fattree:levels=2,radix=8", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// receive waits for n values on ch, the events the test expects to
// happen at once; it fails naming what arrived only if they do not
// come before the test's own deadline (a hang), with a minute as the
// bound when the test has none.
func receive[T any](t *testing.T, ch <-chan T, n int, what string) {
	t.Helper()
	limit := time.Minute
	if dl, ok := t.Deadline(); ok {
		limit = time.Until(dl) - 5*time.Second // (before go test's own panic)
	}
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for i := 0; i < n; i++ {
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("%s: %d, want %d", what, i, n)
		}
	}
}

func topoOf(t *testing.T, res *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := topology.WriteTopology(&b, res.Fabric, topology.Options{Generated: time.Unix(0, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// When the peer queues, a level's reads and the next level's probes are
// one phase: a switch port's probe goes out as soon as its PortInfo
// answered, while another port's PortInfo is still out.
func TestQueuesProbesWhileReading(t *testing.T) {
	tr := fatTree8(t)
	h := &holdOne{Transport: tr, release: make(chan struct{}), probes: make(chan struct{}, 64)}
	var once sync.Once
	defer once.Do(func() { close(h.release) })
	done := make(chan error, 1)
	go func() {
		_, err := Discover(context.Background(), h, Config{Outstanding: 64, FixedWindow: true, FixedTimeout: true, Timeout: time.Minute})
		done <- err
	}()
	// The leaf one hop from the host: its ports 2 to 7 are probed (port 1
	// leads back to the host) while its port 8's PortInfo is held.
	receive(t, h.probes, 6, "probes through the leaf while its port 8's PortInfo was out")
	once.Do(func() { close(h.release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// holdOne holds the PortInfo of port 8 of the node at DR path 0,1 until
// release, and reports every NodeInfo probe through that node (when it
// is sent, or with after once it was answered).
type holdOne struct {
	transport.Transport
	release chan struct{}
	probes  chan struct{}
	after   bool
}

func (h *holdOne) Limits() transport.Limits { return transport.Limits{Queues: true} }

func (h *holdOne) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	attr, mod := uint16(req[16])<<8|uint16(req[17]), req[23]
	switch hops, path := req[7], req[128:131]; {
	case hops == 1 && path[1] == 1 && attr == smp.AttrPortInfo && mod == 8:
		<-h.release
	case hops == 2 && path[1] == 1 && attr == smp.AttrNodeInfo:
		if h.after {
			err := h.Transport.Exchange(ctx, dlid, req, resp)
			if err == nil {
				h.probes <- struct{}{}
			}
			return err
		}
		h.probes <- struct{}{}
	}
	return h.Transport.Exchange(ctx, dlid, req, resp)
}

// A peer that queues gets the whole window from the start: nothing is
// lost there, so there is nothing to adapt to. Elsewhere the window
// adapts below -o unless asked to stay fixed. A peer that queues gets at
// most QueuedWindow, whatever -o and its socket allow.
func TestQueuesFixedWindow(t *testing.T) {
	for _, c := range []struct {
		lim   transport.Limits
		fixed bool
		want  int
	}{
		{transport.Limits{Queues: true}, false, 16},
		{transport.Limits{}, true, 16},
		{transport.Limits{}, false, initialWindow},
		{transport.Limits{Queues: true, Window: 104}, false, QueuedWindow},
		{transport.Limits{Queues: true}, true, QueuedWindow},
	} {
		o := 16
		if c.want == QueuedWindow {
			o = DefaultOutstanding // (no -o)
		}
		e := newEngine(&limited{lim: c.lim}, Config{Outstanding: o, FixedWindow: c.fixed})
		if got, got2 := e.readWin.Size(), e.probeWin.Size(); got != c.want || got2 != c.want {
			t.Errorf("%+v, FixedWindow %v: windows %d and %d, want %d", c.lim, c.fixed, got, got2, c.want)
		}
	}
}

// An interrupted queued phase keeps what answered, as the probe phase
// of the other transports does: the leaf's six probes that answered
// before the stop bring six nodes.
func TestQueuesInterruptKeepsProbes(t *testing.T) {
	tr := fatTree8(t)
	h := &holdOne{Transport: tr, release: make(chan struct{}), probes: make(chan struct{}, 64), after: true}
	var once sync.Once
	defer once.Do(func() { close(h.release) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Result, 1)
	go func() {
		res, _ := Discover(ctx, h, Config{Outstanding: 64, FixedWindow: true, FixedTimeout: true, Timeout: time.Minute})
		done <- res
	}()
	receive(t, h.probes, 6, "probes through the leaf answered")
	cancel()
	once.Do(func() { close(h.release) })
	res := <-done
	if res == nil || !res.Interrupted {
		t.Fatalf("not interrupted: %+v", res)
	}
	// the host, the leaf and the six nodes its probes reached (and the
	// node behind port 8 when its PortInfo, released as the stop spreads,
	// still went out)
	if got := len(res.Fabric.Nodes); got < 8 {
		t.Errorf("%d nodes after the stop, want at least 8", got)
	}
}

// WindowFor sizes the window of SMPs sent outside Discover (the Querier
// of the tools' later reads) as Discover sizes its own.
func TestWindowFor(t *testing.T) {
	for _, c := range []struct {
		lim       transport.Limits
		max       int
		wantMax   int
		wantFixed bool
	}{
		{transport.Limits{}, 1024, 1024, false},
		{transport.Limits{Window: 32}, 1024, 32, false},
		{transport.Limits{Window: 32}, 16, 16, false},
		{transport.Limits{Queues: true, Window: 104}, 1024, QueuedWindow, true},
		{transport.Limits{Queues: true, Window: 104}, 16, 16, true},
	} {
		w := WindowFor(&limited{lim: c.lim}, c.max, false)
		wantSize := c.wantMax
		if !c.wantFixed {
			wantSize = min(c.wantMax, initialWindow)
		}
		if w.Max() != c.wantMax || w.Size() != wantSize {
			t.Errorf("%+v, max %d: window max %d size %d, want %d and %d", c.lim, c.max, w.Max(), w.Size(), c.wantMax, wantSize)
		}
	}
}

// shortest is a transport stating lim that records the least time an
// attempt was given (its ctx's deadline less the time it was sent).
type shortest struct {
	transport.Transport
	lim   transport.Limits
	least atomic.Int64 // ns; 0 until an attempt with a deadline
}

func (s *shortest) Limits() transport.Limits { return s.lim }

func (s *shortest) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if d, ok := ctx.Deadline(); ok {
		left := int64(time.Until(d))
		for {
			m := s.least.Load()
			if m != 0 && m <= left || s.least.CompareAndSwap(m, left) {
				break
			}
		}
	}
	return s.Transport.Exchange(ctx, dlid, req, resp)
}

// A peer that queues answers every SMP (a drop too, at once), so every
// attempt waits the full timeout there: a short attempt's resend would
// only queue behind the answer it gave up on. Elsewhere the first
// attempts wait a few round trips.
func TestQueuesFullTimeout(t *testing.T) {
	const timeout = time.Minute
	for _, queues := range []bool{true, false} {
		s := &shortest{Transport: fatTree8(t), lim: transport.Limits{Queues: queues}}
		res, err := Discover(context.Background(), s, Config{Outstanding: 16, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		least := time.Duration(s.least.Load())
		switch {
		case queues && res.Retries != 0:
			t.Errorf("queues: %d retries on a healthy fabric", res.Retries)
		case queues && least < timeout/2:
			t.Errorf("queues: an attempt was given %v, want the full %v", least, timeout)
		case !queues && least >= timeout/2:
			t.Errorf("no queues: every attempt was given at least %v, want short first attempts", least)
		}
	}
}
