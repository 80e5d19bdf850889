package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// discoveries lets runs of ibhops that only read a fabric share its
// discovery (runShared): each distinct fabric is discovered once, by the
// first run that asks, and the runs after it get that result and go on
// from there as a run does after its own discovery (resolving ports,
// reading forwarding tables, computing hops, printing). A fabric is the
// same when the transport (its description, but for an ibsim client's
// slot), the port it is attached at (asked of the fabric by a NodeInfo
// SMP on every run) and the discovery settings are.
//
// The runs sharing a set must run one at a time (they share the model).
// When the test ends, each shared model is checked unchanged since its
// discovery: every node's attributes, route and ports, every port's
// attributes and link (modelSnap).
type discoveries struct {
	mu sync.Mutex
	m  map[string]*sharedDiscovery
}

// sharedDiscovery is one discovery of a set: its result, the cache of
// its model then, and how many runs took it.
type sharedDiscovery struct {
	res  *discover.Result
	snap modelSnap
	runs int
}

// shareKey is the context key runShared passes its set under.
type shareKey struct{}

// ibsimSlot is the part of an ibsim transport's description that
// differs from client to client.
var ibsimSlot = regexp.MustCompile(` slot \d+ `)

func init() {
	discoverFabric = func(ctx context.Context, tr transport.Transport, cfg discover.Config) (*discover.Result, error) {
		if d, ok := ctx.Value(shareKey{}).(*discoveries); ok {
			return d.discover(ctx, tr, cfg)
		}
		return discover.Discover(ctx, tr, cfg)
	}
}

// newDiscoveries returns an empty set, checked when t ends.
func newDiscoveries(t testing.TB) *discoveries {
	d := &discoveries{m: map[string]*sharedDiscovery{}}
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for key, e := range d.m {
			if why := e.snap.changed(e.res.Fabric); why != "" {
				t.Errorf("shared discovery of %s: a run changed the model it shared with %d others: %s", key, e.runs-1, why)
			}
		}
	})
	return d
}

// discover is discover.Discover, once per fabric of the set.
func (d *discoveries) discover(ctx context.Context, tr transport.Transport, cfg discover.Config) (*discover.Result, error) {
	desc := fmt.Sprintf("%T", tr)
	if c, ok := tr.(*fabric.Conn); ok {
		desc = ibsimSlot.ReplaceAllString(c.Desc, " ")
	}
	q := &discover.Querier{Transport: tr, Timeout: cfg.Timeout, Retries: cfg.Retries, FixedTimeout: cfg.FixedTimeout, MKey: cfg.MKey}
	var buf [smp.DataSize]byte
	if err := q.Get(ctx, smp.DRPath{}, smp.AttrNodeInfo, 0, buf[:]); err != nil {
		return nil, fmt.Errorf("shared discovery: NodeInfo of the port attached at: %w", err)
	}
	var ni smp.NodeInfo
	if err := ni.UnmarshalBinary(buf[:]); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s at node %#016x port %d, %+v", desc, ni.NodeGUID, ni.LocalPortNum, cfg)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[key]; e != nil {
		e.runs++
		return e.res, nil
	}
	res, err := discover.Discover(ctx, tr, cfg)
	if err != nil || res.Interrupted {
		return res, err // not shared: the next run tries again
	}
	d.m[key] = &sharedDiscovery{res: res, snap: snapshot(res.Fabric), runs: 1}
	return res, nil
}

// modelSnap is a copy of what a discovery put in a model: the fabric's
// start and every node's and port's fields (a port's by value, so its
// PortInfo and link are compared).
type modelSnap struct {
	from     *model.Node
	fromPort uint8
	maxHops  int
	nodes    []nodeSnap
	ports    []model.PhysPort
}

// nodeSnap is a node's fields but its ports (they are in the ports of
// modelSnap, in order).
type nodeSnap struct {
	n             *model.Node
	info          smp.NodeInfo
	desc          smp.NodeDescription
	switchInfo    smp.SwitchInfo
	hasSwitchInfo bool
	path          smp.DRPath
	index         int
	ports         []*model.PhysPort
}

func snapshot(f *model.Fabric) modelSnap {
	s := modelSnap{from: f.From, fromPort: f.FromPort, maxHops: f.MaxHops, nodes: make([]nodeSnap, len(f.Nodes))}
	for i, n := range f.Nodes {
		s.nodes[i] = nodeSnap{n, n.Info, n.Desc, n.SwitchInfo, n.HasSwitchInfo, n.Path, n.Index, slices.Clone(n.Ports)}
		for _, p := range n.Ports {
			if p != nil {
				s.ports = append(s.ports, *p)
			}
		}
	}
	return s
}

// changed says what differs between f and the snapshot, "" if nothing.
func (s *modelSnap) changed(f *model.Fabric) string {
	if f.From != s.from || f.FromPort != s.fromPort || f.MaxHops != s.maxHops || len(f.Nodes) != len(s.nodes) {
		return fmt.Sprintf("start, hop count or number of nodes (%d, was %d)", len(f.Nodes), len(s.nodes))
	}
	k := 0
	for i, n := range f.Nodes {
		o := &s.nodes[i]
		if n != o.n || n.Info != o.info || n.Desc != o.desc || n.SwitchInfo != o.switchInfo || n.HasSwitchInfo != o.hasSwitchInfo ||
			n.Path != o.path || n.Index != o.index || !slices.Equal(n.Ports, o.ports) {
			return fmt.Sprintf("node %d (%#016x)", i, n.GUID())
		}
		for _, p := range n.Ports {
			if p == nil {
				continue
			}
			if *p != s.ports[k] {
				return fmt.Sprintf("port %d of node %d (%#016x)", p.Num, i, n.GUID())
			}
			k++
		}
	}
	return ""
}

// runShared is runOurs with the discoveries of set d.
func runShared(t testing.TB, d *discoveries, args ...string) ([]byte, []byte, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx := context.WithValue(context.Background(), shareKey{}, d)
	code := run(ctx, &out, &errb, append([]string{"ibhops"}, clitest.WithPeerTimeout(args)...))
	return out.Bytes(), errb.Bytes(), code
}
