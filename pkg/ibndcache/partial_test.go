package ibndcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// checkV44 refuses what ibnetdiscover 44's loader (libibnetdisc before
// rdma-core PR 1767) refuses or mishandles: a node port key without a
// port record, a record claimed twice or by no node (v44 links it and
// then frees it), a port number beyond NumPorts (v44 writes past the
// ports array), a record of a node not in the file, a remote-port
// reference without a record, and an unknown start node.
func checkV44(b []byte) error {
	le := binary.LittleEndian
	if len(b) < HeaderLen || le.Uint32(b) != Magic {
		return errors.New("no header")
	}
	nodeCount, portCount := le.Uint32(b[8:]), le.Uint32(b[12:])
	off := HeaderLen
	type node struct{ numPorts uint8 }
	nodes := map[uint64]node{}
	var keys []portKey
	keyNode := map[portKey]uint64{}
	for i := uint32(0); i < nodeCount; i++ {
		if len(b)-off < NodeLen {
			return errors.New("short node")
		}
		r := b[off:]
		guid := le.Uint64(r[68:])
		nodes[guid] = node{r[77]}
		k := int(r[206])
		if len(b)-off < NodeLen+k*PortKeyLen {
			return errors.New("short keys")
		}
		for j := 0; j < k; j++ {
			kb := r[NodeLen+PortKeyLen*j:]
			key := portKey{le.Uint64(kb), kb[8]}
			keys = append(keys, key)
			keyNode[key] = guid
		}
		off += NodeLen + PortKeyLen*k
	}
	type rec struct {
		node   uint64
		remote bool
		rkey   portKey
	}
	recs := map[portKey]rec{}
	var order []portKey
	for i := uint32(0); i < portCount; i++ {
		if len(b)-off < PortLen {
			return errors.New("short port")
		}
		r := b[off:]
		k := portKey{le.Uint64(r), r[8]}
		if _, dup := recs[k]; dup {
			return fmt.Errorf("two records for port 0x%x[%d]", k.guid, k.num)
		}
		recs[k] = rec{le.Uint64(r[77:]), r[85] != 0, portKey{le.Uint64(r[86:]), r[94]}}
		order = append(order, k)
		off += PortLen
	}
	if off != len(b) {
		return fmt.Errorf("%d bytes after the last record", len(b)-off)
	}
	if _, ok := nodes[le.Uint64(b[16:])]; !ok {
		return errors.New("start node not in the file")
	}
	claimed := map[portKey]bool{}
	for _, k := range keys {
		r, ok := recs[k]
		if !ok {
			return fmt.Errorf("key 0x%x[%d] has no record", k.guid, k.num)
		}
		if claimed[k] {
			return fmt.Errorf("port 0x%x[%d] claimed twice", k.guid, k.num)
		}
		claimed[k] = true
		if k.num > nodes[keyNode[k]].numPorts {
			return fmt.Errorf("port 0x%x[%d] beyond NumPorts", k.guid, k.num)
		}
		if r.node != keyNode[k] {
			return fmt.Errorf("port 0x%x[%d] listed by another node", k.guid, k.num)
		}
	}
	for _, k := range order {
		r := recs[k]
		if !claimed[k] {
			return fmt.Errorf("record 0x%x[%d] claimed by no node", k.guid, k.num)
		}
		if _, ok := nodes[r.node]; !ok {
			return fmt.Errorf("record 0x%x[%d] of unknown node", k.guid, k.num)
		}
		if _, ok := recs[r.rkey]; r.remote && !ok {
			return fmt.Errorf("port 0x%x[%d] linked to 0x%x[%d], which has no record", k.guid, k.num, r.rkey.guid, r.rkey.num)
		}
	}
	return nil
}

// checkRoundTrip asserts that the cache of f is accepted by ibnetdiscover
// 44's rules, loads, and that its bytes are stable from the first rewrite.
func checkRoundTrip(t testing.TB, f *model.Fabric) []byte {
	t.Helper()
	b1, err := Marshal(f)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if err := checkV44(b1); err != nil {
		t.Fatalf("ibnetdiscover 44 would refuse the cache: %v", err)
	}
	g, skipped, err := Decode(b1)
	if err != nil {
		t.Fatalf("written cache does not load: %v", err)
	}
	if skipped.Any() {
		t.Fatalf("written cache is incomplete: %v", skipped)
	}
	b2, err := Marshal(g)
	if err != nil {
		t.Fatalf("re-marshal: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("rewritten cache differs (len %d vs %d) first at byte %d", len(b1), len(b2), firstDiff(b1, b2))
	}
	return b1
}

// dying is a transport that fails for good after n exchanges, as when
// ibsim exits in the middle of a discovery.
type dying struct {
	transport.Transport
	n atomic.Int64
}

var errGone = errors.New("ibsim: connection refused")

func (d *dying) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if d.n.Add(-1) < 0 {
		return errGone
	}
	return d.Transport.Exchange(ctx, dlid, req, resp)
}

func attach(t testing.TB, spec string, seed uint64) transport.Transport {
	t.Helper()
	f, err := sim.Generate(spec, &sim.Options{Seed: seed})
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

// TestPartialCachesLoad: whatever happened during discovery, the cache
// written from its result is one ibnetdiscover 44 accepts and that loads
// back with the same bytes.
func TestPartialCachesLoad(t *testing.T) {
	const tree, big = "fattree:levels=2,radix=8", "fattree:levels=2,radix=16"
	// FixedTimeout: each SMP gets exactly one attempt, so every drop is a
	// failure whatever the engine's retry policy for short attempts.
	cfg := discover.Config{MaxHops: -1, Outstanding: 8, Timeout: 10 * time.Second, Retries: -1, FixedTimeout: true}
	cases := []struct {
		name string
		spec string
		seed uint64
		// cancelAt cancels the discovery after that many SMPs, dieAt
		// makes the transport fail after that many.
		cancelAt, dieAt int64
		partial         bool
	}{
		{name: "drops 5%", spec: big + ";Drop 5", seed: 1, partial: true},
		{name: "drops 10%", spec: big + ";Drop 10", seed: 2, partial: true},
		{name: "drops 30%", spec: big + ";Drop 30", seed: 7, partial: true},
		{name: "no PortInfo from a spine", spec: tree + `;Error "S0" 100 21`, partial: true},
		{name: "no PortInfo from a leaf", spec: tree + `;Error "L1" 100 21`, partial: true},
		{name: "no PortInfo from a host", spec: tree + `;Error "H5" 100 21`, partial: true},
		{name: "no NodeDescription", spec: tree + `;Error "L1" 100 16`, partial: true},
		{name: "no NodeInfo", spec: tree + `;Error "L2" 100 17`, partial: true},
		{name: "no SwitchInfo", spec: tree + `;Error "S1" 100 18`, partial: true},
		{name: "dead switch", spec: tree + `;Kill "S1"`, partial: true},
		{name: "inconsistent numports", spec: tree + `;Inconsistent "L3" numports 2`},
		{name: "inconsistent portguid", spec: tree + `;Inconsistent "L3" portguid 2`},
		{name: "inconsistent type", spec: tree + `;Inconsistent "L3" type 3`},
		{name: "duplicate switch GUID", spec: tree + dupGUID(t, tree, "S3", "S0")},
		{name: "duplicate leaf/spine GUID", spec: tree + dupGUID(t, tree, "L0", "S1")},
		{name: "duplicate CA GUID", spec: tree + dupGUID(t, tree, "H12", "H3")},
		{name: "cancelled", spec: tree, cancelAt: 40, partial: true},
		{name: "cancelled early", spec: tree, cancelAt: 3, partial: true},
		{name: "ibsim dies", spec: tree, dieAt: 50, partial: true},
		{name: "ibsim dies early", spec: tree, dieAt: 4, partial: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := attach(t, c.spec, c.seed)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := cfg
			if c.dieAt > 0 {
				d := &dying{Transport: tr}
				d.n.Store(c.dieAt)
				tr = d
			}
			var sent atomic.Int64
			if c.cancelAt > 0 {
				cfg.Sent = func() {
					if sent.Add(1) == c.cancelAt {
						cancel()
					}
				}
			}
			res, err := discover.Discover(ctx, tr, cfg)
			if err != nil {
				t.Fatalf("discover: %v", err)
			}
			if c.partial && !res.Partial() {
				t.Fatalf("discovery was complete: the case tests nothing")
			}
			checkRoundTrip(t, res.Fabric)
		})
	}
}

// dupGUID is the command giving node b the GUID of node a.
func dupGUID(t testing.TB, spec, b, a string) string {
	t.Helper()
	nf, err := netfile.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	i, ok := nf.Lookup(a)
	if !ok {
		t.Fatalf("no node %s", a)
	}
	return fmt.Sprintf(";Guid %q %#x", b, nf.Nodes[i].GUID)
}

// A port whose PortInfo failed after a NodeInfo answered through it is a
// shell (the link is known, the port is not): neither its key nor a link
// to it is written, and the linked peer's record says "no remote".
func TestShellPortNotReferenced(t *testing.T) {
	tr := attach(t, `fattree:levels=2,radix=8;Error "H5" 100 21`, 0)
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Timeout: 50 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var shell *model.PhysPort
	for _, n := range res.Fabric.Nodes {
		for _, p := range n.Ports {
			if p != nil && !p.HasInfo && p.Remote != nil {
				shell = p
			}
		}
	}
	if shell == nil {
		t.Fatal("no shell port in the discovery")
	}
	peer := shell.Remote
	f, err := Unmarshal(checkRoundTrip(t, res.Fabric))
	if err != nil {
		t.Fatal(err)
	}
	n := f.NodeByGUID(shell.Node.GUID())
	if n == nil || n.Port(int(shell.Num)) != nil {
		t.Errorf("shell port %s was written", shell)
	}
	pn := f.NodeByGUID(peer.Node.GUID())
	if pp := pn.Port(int(peer.Num)); pp == nil || pp.Remote != nil {
		t.Errorf("peer %s: %v, want a port without remote", peer, pp)
	}
}

// Caches of older writers that reference ports without records (node
// keys, remote ports) load with those references skipped; unclaimed
// port records are ignored.
func TestIncompleteCacheTolerated(t *testing.T) {
	good := readCaches(t)["2sw2path4hca.osm.cache"]
	le := binary.LittleEndian
	mod := func(fn func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		fn(b)
		return b
	}
	last := len(good) - PortLen
	owner := le.Uint64(good[last+77:])
	lastKey := portKey{le.Uint64(good[last:]), good[last+8]}
	cases := map[string][]byte{
		"link to unknown port": mod(func(b []byte) {
			b[last+85] = 1
			le.PutUint64(b[last+86:], 0xbeef)
		}),
		"key beyond NumPorts": mod(func(b []byte) {
			b[HeaderLen+NodeLen+8] = 200 // Hca4's only key
		}),
		"unclaimed record": mod(func(b []byte) {
			// the last record's port GUID changes: no key names it now
			le.PutUint64(b[last:], 0xfeed)
		}),
	}
	want := map[string]Skipped{
		"link to unknown port": {Links: 1},
		"key beyond NumPorts":  {Keys: 1, Records: 1, Links: 1},
		"unclaimed record":     {Keys: 1, Records: 1, Links: 1},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			f, skipped, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if skipped != want[name] {
				t.Errorf("skipped %+v, want %+v", skipped, want[name])
			}
			checkRoundTrip(t, f)
			switch name {
			case "link to unknown port":
				n := f.NodeByGUID(owner)
				if p := n.Port(int(lastKey.num)); p == nil || p.Remote != nil {
					t.Errorf("port %v should have no remote", p)
				}
			case "unclaimed record":
				n := f.NodeByGUID(owner)
				if p := n.Port(int(lastKey.num)); p != nil {
					t.Errorf("port %v should be missing", p)
				}
				for _, m := range f.Nodes {
					for _, p := range m.Ports {
						if p != nil && p.Remote != nil && p.Remote.GUID == 0xfeed {
							t.Errorf("%s linked to the unclaimed record", p)
						}
					}
				}
			}
		})
	}
}

// testdata/incomplete/portinfo-swB.v44.cache was written by ibnetdiscover
// 44.0 (-o 1 --cache) on ibsim 0.10 serving testdata/fabrics/dualhomed.net
// plus `do Error "swB" 100 21` (every PortInfo to swB dropped), attached
// at "dual". It references swB's port 2, which it never stored (a shell
// reached by NodeInfo), so ibnetdiscover 44 cannot load it. We load it
// with the reference skipped, and write a cache ibnetdiscover 44 accepts.
func TestLoadV44IncompleteCache(t *testing.T) {
	b, err := os.ReadFile("testdata/incomplete/portinfo-swB.v44.cache")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkV44(b); err == nil {
		t.Fatal("the v44 cache passes the v44 rules: it tests nothing")
	}
	f, skipped, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != (Skipped{Keys: 1, Links: 1}) {
		t.Errorf("skipped %v", skipped)
	}
	swA, swB := f.NodeByGUID(0x200000), f.NodeByGUID(0x200001)
	if swA == nil || swB == nil || len(f.Nodes) != 4 {
		t.Fatalf("nodes: %v", f.Nodes)
	}
	if p := swB.Port(2); p != nil {
		t.Errorf("swB port 2 (no record) loaded: %v", p)
	}
	if p := swA.Port(2); p == nil || p.Remote != nil {
		t.Errorf("swA port 2: %v, want a port without remote", p)
	}
	checkRoundTrip(t, f)
}

// Two nodes holding a port with the same GUID and number (a duplicated
// GUID, a node whose NodeInfo changed): the loaders find ports by that
// key, so only the first node's port is written, and links to the other
// are left out.
func TestDuplicatePortKeyWrittenOnce(t *testing.T) {
	f, err := Unmarshal(readCaches(t)["2sw2path4hca.osm.cache"])
	if err != nil {
		t.Fatal(err)
	}
	var cas []*model.PhysPort
	for _, n := range f.Nodes {
		if !n.IsSwitch() {
			cas = append(cas, n.Port(1))
		}
	}
	first, twin := cas[0], cas[1]
	twin.GUID = first.GUID
	b := checkRoundTrip(t, f)
	g, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.NodeByGUID(first.Node.GUID()).Port(1); p == nil {
		t.Error("first port lost")
	}
	if p := g.NodeByGUID(twin.Node.GUID()).Port(1); p != nil {
		t.Errorf("twin port written: %v", p)
	}
	if r := twin.Remote; r != nil {
		if p := g.NodeByGUID(r.Node.GUID()).Port(int(r.Num)); p == nil || p.Remote != nil {
			t.Errorf("twin's peer %v: want it without remote", p)
		}
	}
}
