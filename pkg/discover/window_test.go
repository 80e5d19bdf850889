package discover_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// counting records every SMP on the wire: how many were outstanding at
// once, and which were outstanding together at one node. Nodes are told
// apart by the NodeGUID their NodeInfo answers give for a DR path, so it
// needs nothing but the SMPs themselves.
type counting struct {
	transport.Transport
	mu       sync.Mutex
	inflight int
	max      int
	seq      int64
	smps     []wireSMP
	guid     map[string]uint64 // DR path -> NodeGUID answered there
}

// wireSMP is one exchange: its DR path, attribute, and when it went out
// and came back on the wrapper's event counter.
type wireSMP struct {
	path       string
	attr       uint16
	start, end int64
}

func (c *counting) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	var m smp.MAD
	if err := m.UnmarshalBinary(req); err != nil {
		return c.Transport.Exchange(ctx, dlid, req, resp)
	}
	s := wireSMP{path: m.Path().String(), attr: m.AttrID}
	c.mu.Lock()
	c.inflight++
	c.max = max(c.max, c.inflight)
	c.seq++
	s.start = c.seq
	c.mu.Unlock()

	err := c.Transport.Exchange(ctx, dlid, req, resp)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	c.seq++
	s.end = c.seq
	c.smps = append(c.smps, s)
	if err == nil && s.attr == smp.AttrNodeInfo {
		var a smp.MAD
		var ni smp.NodeInfo
		if a.UnmarshalBinary(resp) == nil && ni.UnmarshalBinary(a.Data[:]) == nil {
			if c.guid == nil {
				c.guid = make(map[string]uint64)
			}
			c.guid[s.path] = ni.NodeGUID
		}
	}
	return err
}

// check fails t if more than window SMPs were outstanding at once, or if
// one node had two SMPs outstanding together other than NodeInfo probes
// (the documented case: parents of one level probing the same yet
// unknown node). It returns the largest window seen.
func (c *counting) check(t *testing.T, window int) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight != 0 {
		t.Errorf("%d SMPs still outstanding after Discover returned", c.inflight)
	}
	if c.max > window {
		t.Errorf("%d SMPs outstanding at once, window %d", c.max, window)
	}
	byNode := map[uint64][]wireSMP{}
	for _, s := range c.smps {
		if g, ok := c.guid[s.path]; ok {
			byNode[g] = append(byNode[g], s)
		}
	}
	bad := 0
	for g, smps := range byNode {
		sort.Slice(smps, func(i, j int) bool { return smps[i].start < smps[j].start })
		for i, a := range smps {
			for _, b := range smps[i+1:] {
				if b.start > a.end {
					break
				}
				if a.attr == smp.AttrNodeInfo && b.attr == smp.AttrNodeInfo {
					continue
				}
				if bad++; bad <= 5 {
					t.Errorf("node %#x: attr %#x at %s and attr %#x at %s outstanding together", g, a.attr, a.path, b.attr, b.path)
				}
			}
		}
	}
	return c.max
}

// TestWindow: discovery never has more SMPs on the wire than the window
// (-o/--outstanding-smps), and never two at one node except NodeInfo
// probes of one level, on fabrics with parallel links, loops and
// dual-homed CAs, behind a latency model so that SMPs overlap.
func TestWindow(t *testing.T) {
	lat := &sim.Latency{Hop: time.Microsecond, SMA: 50 * time.Microsecond} // VL15 unbounded: nothing lost
	for _, spec := range []string{"fattree:levels=2,radix=8", fabrics + "parallel.net", fabrics + "loop.net", fabrics + "dualhomed.net"} {
		for _, window := range []int{1, 3, 8} {
			t.Run(fmt.Sprintf("%s/o%d", spec, window), func(t *testing.T) {
				var f *sim.Fabric
				var err error
				if len(spec) > 8 && spec[:8] == "fattree:" {
					f, err = sim.Generate(spec, &sim.Options{Latency: lat})
				} else {
					f, err = sim.Load(spec, &sim.Options{Latency: lat})
				}
				if err != nil {
					t.Fatal(err)
				}
				tr, err := f.Attach("")
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				c := &counting{Transport: tr}
				res := discoverAll(t, c, discover.Config{MaxHops: -1, Outstanding: window, Timeout: peerTimeout})
				if res.Partial() {
					t.Fatalf("partial: %v", res.Errors)
				}
				seen := c.check(t, window)
				t.Logf("%d SMPs, at most %d outstanding", len(c.smps), seen)
			})
		}
	}
}
