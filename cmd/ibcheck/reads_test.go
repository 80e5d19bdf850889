//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// read is one MAD as sent, before its target is resolved: the class,
// method, attribute and modifier, the directed route or LID it was sent
// to, and its payload (a PortCounters' PortSelect, an SA query's record).
type read struct {
	class, method uint8
	attr          uint16
	mod           uint32
	dr            bool
	path          smp.DRPath
	dlid          uint16
	data          string
}

// madCounter is a transport that records every MAD answered through it
// (a request that failed, retried later, is not a read).
type madCounter struct {
	transport.Transport
	mu    sync.Mutex
	reads []read
}

func (m *madCounter) Limits() transport.Limits { return transport.LimitsOf(m.Transport) }

func (m *madCounter) note(dlid uint16, req []byte) {
	r := read{class: req[1], method: req[3] & 0x7f, attr: uint16(req[16])<<8 | uint16(req[17]),
		mod: uint32(req[20])<<24 | uint32(req[21])<<16 | uint32(req[22])<<8 | uint32(req[23]), dlid: dlid}
	switch {
	case r.class == 0x81:
		r.dr = true
		p := smp.DRPath{}
		for i := 1; i <= int(req[7]); i++ {
			p, _ = p.Extend(req[smp.InitPathOff+i])
		}
		r.path = p
		r.data = fmt.Sprintf("%x", req[smp.DataOffset:smp.InitPathOff])
	case transport.SMPClass(r.class):
		r.data = fmt.Sprintf("%x", req[smp.DataOffset:smp.InitPathOff])
	default:
		r.data = fmt.Sprintf("%x", req[24:]) // after the TID: the class header and the data
	}
	m.mu.Lock()
	m.reads = append(m.reads, r)
	m.mu.Unlock()
}

func (m *madCounter) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := m.Transport.Exchange(ctx, dlid, req, resp)
	if err == nil {
		m.note(dlid, req)
	}
	return err
}

func (m *madCounter) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	s, ok := transport.StreamerOf(m.Transport)
	if !ok {
		return fmt.Errorf("no streamer behind the counter")
	}
	err := s.Stream(ctx, dlid, req, idle, recv)
	if err == nil {
		m.note(dlid, req)
	}
	return err
}

// key names a read by what it reads: the node and port it reached (the
// port a directed route entered a CA by; a switch's port 0), so that one
// attribute read twice by two routes counts twice.
func (r read) key(t *testing.T, f *model.Fabric) string {
	t.Helper()
	var target string
	if r.dr {
		n, port := f.From, f.FromPort
		for i := 1; i <= int(r.path.Len()); i++ {
			pp := n.Port(int(r.path.Port(i)))
			if pp == nil || pp.Remote == nil {
				t.Fatalf("directed route %s leaves the discovered fabric at hop %d", r.path, i)
			}
			n, port = pp.Remote.Node, pp.Remote.Num
		}
		if n.IsSwitch() {
			port = 0
		}
		target = fmt.Sprintf("node 0x%016x port %d", n.GUID(), port)
	} else {
		p := f.PortByLID(r.dlid)
		if p == nil {
			t.Fatalf("a MAD to LID %d, which no discovered port has", r.dlid)
		}
		target = fmt.Sprintf("node 0x%016x port %d", p.Node.GUID(), p.Phys.Num)
	}
	return fmt.Sprintf("class 0x%02x method 0x%02x attr 0x%04x mod 0x%08x at %s data %s", r.class, r.method, r.attr, r.mod, target, r.data)
}

// TestReadsOnce: one ibcheck run with every check the fabric allows
// (links, ids, mtu-vl, sm, counters, routes, credit-loops: a torus routed
// min-hop by a live OpenSM, so the credit-loops check also asks the SA
// for the routes' SLs and reads the switches' SLtoVL tables) runs
// discovery once and reads nothing twice: every MAD of the run is
// either one of a single discovery's (the same discovery, on its own
// connection, reads exactly those) or read once, of an attribute the
// discovery did not read at that node and port.
func TestReadsOnce(t *testing.T) {
	ibsimtest.Require(t)
	s := ibsimtest.Start(t, abs(t, fabrics+"torus.net"))
	s.StartOpenSM(t, "h00")

	var ref, runc *madCounter
	var refFab *model.Fabric
	oldOpen := openFabric
	t.Cleanup(func() { openFabric = oldOpen })
	openFabric = func(ctx context.Context, st attach.Settings) (*attach.Fabric, error) {
		if runc != nil {
			return nil, fmt.Errorf("the fabric opened a second time")
		}
		// the discovery on its own, through a counter of its own
		c, err := oldOpen(ctx, st)
		if err != nil {
			return nil, err
		}
		ref = &madCounter{Transport: c.Transport}
		c.Transport = ref
		res, err := discover.Discover(ctx, c, st.Config())
		c.Close()
		if err != nil {
			return nil, err
		}
		if res.Partial() {
			return nil, fmt.Errorf("the reference discovery is partial")
		}
		refFab = res.Fabric
		c, err = oldOpen(ctx, st)
		if err != nil {
			return nil, err
		}
		runc = &madCounter{Transport: c.Transport}
		c.Transport = runc
		return c, nil
	}
	stdout, stderr, code := runTool(t, "--ibsim-sockname", s.SockName, "--sim-host", "h11", "--json")
	out := string(stdout) + string(stderr)
	var d doc
	var sum struct {
		Summary jsonSummary `json:"summary"`
	}
	if err := json.Unmarshal(stdout, &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := json.Unmarshal(stdout, &sum); err != nil {
		t.Fatal(err)
	}
	if code != exitcode.Problem || d.status("credit-loops") != "failed" {
		t.Fatalf("exit %d, credit-loops %s: want %d and a credit loop\n%s", code, d.status("credit-loops"), exitcode.Problem, out)
	}
	var ran []string
	for _, c := range d.Checks {
		if c.Status != "passed" && c.Status != "failed" {
			t.Fatalf("check %s: %s (every check must run on this fabric)\n%s", c.Name, c.Status, out)
		}
		ran = append(ran, c.Name)
	}
	if want := []string{"links", "ids", "mtu-vl", "sm", "counters", "routes", "credit-loops"}; !slices.Equal(ran, want) {
		t.Fatalf("checks run %v, want %v", ran, want)
	}

	count := func(m *madCounter) map[string]int {
		n := map[string]int{}
		for _, r := range m.reads {
			n[r.key(t, refFab)]++
		}
		return n
	}
	disc, all := count(ref), count(runc)
	var problems []string
	attrs := map[string]int{} // the checks' reads per class/attribute
	for k, n := range all {
		switch extra := n - disc[k]; {
		case extra < 0:
			problems = append(problems, fmt.Sprintf("%s: %d times, the discovery alone %d", k, n, disc[k]))
		case extra > 1:
			problems = append(problems, fmt.Sprintf("%s: read %d times by the checks", k, extra))
		case extra == 1 && disc[k] > 0:
			problems = append(problems, fmt.Sprintf("%s: read by the discovery and again by a check", k))
		case extra == 1:
			attrs[k[:strings.Index(k, " mod ")]]++
		}
	}
	for k, n := range disc {
		if all[k] < n {
			problems = append(problems, fmt.Sprintf("%s: the discovery alone %d times, the run %d", k, n, all[k]))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Fatalf("%d reads repeated or missing:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	// what the checks read: the forwarding tables, SMInfo, the counters,
	// SA PathRecords and SLtoVL tables (the test counts them, so it sees
	// each check at work)
	for _, a := range []string{
		"class 0x81 method 0x01 attr 0x0019", // LinearForwardingTable
		"class 0x81 method 0x01 attr 0x0020", // SMInfo
		"class 0x04 method 0x01 attr 0x0012", // PortCounters
		"class 0x03 method 0x12 attr 0x0035", // PathRecord (SubnAdmGetTable)
		"class 0x81 method 0x01 attr 0x0017", // SLtoVLMappingTable
	} {
		if attrs[a] == 0 {
			t.Errorf("no %s read by the checks; they read %v", a, attrs)
		}
	}
	if got := int64(len(ref.reads)); sum.Summary.DiscoverySMPs != got {
		t.Errorf("the run's discovery sent %d SMPs, the discovery alone %d", sum.Summary.DiscoverySMPs, got)
	}
	t.Logf("discovery: %d MADs; the checks: %d more, %v", len(ref.reads), len(runc.reads)-len(ref.reads), attrs)
}
