//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibndcache"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

// faultFabric is a testdata fabric with SMPs of one attribute always
// dropped at one node (ibsim's `do Error "id"[port] 100 attr`: 16
// NodeDescription, 17 NodeInfo, 18 SwitchInfo, 21 PortInfo).
type faultFabric struct {
	name  string
	file  string // under testdata/fabrics, or a path from here
	do    []string
	hosts []string
}

var faultFabrics = []faultFabric{
	{"portinfo-switch", "dualhomed.net", []string{`Error "swB" 100 21`}, []string{"", "swA"}},
	// (ibnetdiscover cannot start on a node whose PortInfo fails.)
	{"portinfo-ca", "dualhomed.net", []string{`Error "dual" 100 21`}, []string{"swB", "thin"}},
	{"portinfo-leaf", "fattree2.net", []string{`Error "L1" 100 21`}, []string{"", "S0"}},
	{"portinfo-spine", "fattree2.net", []string{`Error "S1" 100 21`}, []string{""}},
	// (ibsim drops by ingress port: swA is reached through port 2 from swB.)
	{"portinfo-switch-port", "dualhomed.net", []string{`Error "swA"[2] 100 21`}, []string{"swB"}},
	{"nodedesc-switch", "dualhomed.net", []string{`Error "swB" 100 16`}, []string{"", "swB"}},
	{"nodedesc-ca", "fattree2.net", []string{`Error "H5" 100 16`, `Error "H0" 100 16`}, []string{"", "S0"}},
	{"nodeinfo-switch", "fattree2.net", []string{`Error "L1" 100 17`}, []string{"", "S0"}},
	{"nodeinfo-ca-port", "dualhomed.net", []string{`Error "dual"[2] 100 17`}, []string{"", "swB"}},
	{"nodeinfo-router", "router.net", []string{`Error "rt" 100 17`}, []string{""}},
	{"switchinfo", "fattree2.net", []string{`Error "S0" 100 18`}, []string{""}},
	{"mixed", "router.net", []string{`Error "rt" 100 21`, `Error "sw2" 100 16`}, []string{"", "h2"}},
	// Chassis grouping (-g) and Mellanox devices (ExtendedPortInfo).
	{"group-portinfo", "testdata/group.net", []string{`Error "chassisA-2" 100 21`}, []string{"", "host3"}},
	{"group-nodedesc", "testdata/group.net", []string{`Error "host2" 100 16`, `Error "chassisA-1" 100 16`}, []string{""}},
	{"group-nodeinfo", "testdata/group.net", []string{`Error "chassisA-2"[1] 100 17`}, []string{"", "host3"}},
}

// toolTimeout is ibnetdiscover's per-SMP timeout (ms) in these tests: ibsim
// answers a dropped SMP at once, so only a busy machine ever waits for it.
const toolTimeout = "5000"

// writeFaultNet writes the fabric file with the do lines appended.
func writeFaultNet(t *testing.T, ff faultFabric) string {
	t.Helper()
	file := ff.file
	if !strings.Contains(file, "/") {
		file = filepath.Join("../../testdata/fabrics", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b) + "\n"
	for _, d := range ff.do {
		s += "do " + d + "\n"
	}
	p := filepath.Join(t.TempDir(), ff.name+".net")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompatFaults compares the topology, lists, ports report and -g of
// ibdiscover (through ibsim and through the embedded simulator) with
// ibnetdiscover 44 on fabrics where PortInfo, NodeDescription, NodeInfo
// or SwitchInfo SMPs are dropped, byte for byte; then checks that the
// cache we write there loads in ibnetdiscover 44 and prints what our
// --load-cache prints.
func TestCompatFaults(t *testing.T) {
	ibsimtest.Require(t)
	t.Parallel()
	outputs := [][]string{nil, {"-f"}, {"-p"}, {"-l"}, {"-H"}, {"-S"}, {"-R"}, {"-g"}}
	// ibnetdiscover 44 caches that ibnetdiscover 44 itself cannot load.
	var mu sync.Mutex // guards the counts: the fabrics run in parallel
	v44Unloadable, ran := 0, 0
	t.Cleanup(func() { // after every fabric's subtest
		mu.Lock()
		defer mu.Unlock()
		if ran == len(faultFabrics) && v44Unloadable == 0 && !t.Failed() {
			t.Error("every ibnetdiscover 44 cache loaded in ibnetdiscover 44: the tolerant loading was not tested")
		}
		t.Logf("%d ibnetdiscover 44 caches unloadable by ibnetdiscover 44, loaded by ibdiscover", v44Unloadable)
	})
	for _, ff := range faultFabrics {
		ff := ff
		t.Run(ff.name, func(t *testing.T) {
			t.Parallel() // each fault fabric has its own ibsim
			mu.Lock()
			ran++
			mu.Unlock()
			net := writeFaultNet(t, ff)
			sim := ibsimtest.Start(t, net)
			dir := t.TempDir()
			for _, host := range ff.hosts {
				for _, extra := range outputs {
					theirs, terr, tcode := sim.RunTool(t, host, "ibnetdiscover", append([]string{"-o", "1", "-t", toolTimeout}, extra...)...)
					if tcode != 0 {
						t.Fatalf("host %q %v: ibnetdiscover exit %d: %s", host, extra, tcode, terr)
					}
					want := stripDate(theirs)
					for _, via := range [][]string{ibsimArgs(sim, host), simArgs(net, host)} {
						ours, oerr, code := runOurs(t, append(via, extra...)...)
						if code != 3 {
							t.Errorf("host %q %v %v: exit %d, want 3 (partial): %s", host, via[0], extra, code, oerr)
						}
						if got := stripDate(ours); got != want {
							t.Errorf("host %q %v %v: differs from ibnetdiscover:\n%s", host, via[0], extra, golden.LineDiff(want, got))
						}
					}
				}
				// The cache we write on the broken fabric loads in both
				// tools, and they print the same from it.
				cache := filepath.Join(dir, "h"+host+".cache")
				if _, e, code := runOurs(t, append(ibsimArgs(sim, host), "--cache", cache)...); code != 3 {
					t.Fatalf("host %q: --cache exit %d: %s", host, code, e)
				}
				compareLoaded(t, host, cache)
				// ibnetdiscover 44's own cache of the broken fabric may
				// reference ports it never stored (it cannot load it
				// itself); we load it, and what we write from it loads
				// in ibnetdiscover 44.
				v44 := filepath.Join(dir, "v44-h"+host+".cache")
				if _, e, code := sim.RunTool(t, host, "ibnetdiscover", "-o", "1", "-t", toolTimeout, "--cache", v44); code != 0 {
					t.Fatalf("host %q: ibnetdiscover --cache: exit %d: %s", host, code, e)
				}
				_, _, v44code := ibnetdiscoverLoad(t, "--load-cache", v44)
				rewritten := filepath.Join(dir, "rewritten-h"+host+".cache")
				_, e, code := runOurs(t, "--load-cache", v44, "--cache", rewritten)
				if code != 0 {
					t.Fatalf("host %q: ibdiscover --load-cache <ibnetdiscover 44 cache>: exit %d: %s", host, code, e)
				}
				if v44code != 0 {
					mu.Lock()
					v44Unloadable++
					mu.Unlock()
					if !strings.Contains(string(e), "incomplete cache: skipped") {
						t.Errorf("host %q: ibnetdiscover 44 cannot load its cache, and ibdiscover does not say it is incomplete: %q", host, e)
					}
				}
				compareLoaded(t, host, rewritten)
			}
		})
	}
}

// compareLoaded checks that ibnetdiscover 44 loads cache and prints from
// it what ibdiscover --load-cache prints.
func compareLoaded(t *testing.T, host, cache string) {
	t.Helper()
	for _, extra := range [][]string{nil, {"-p"}, {"-l"}, {"-g"}} {
		args := append([]string{"--load-cache", cache}, extra...)
		theirs, terr, tcode := ibnetdiscoverLoad(t, args...)
		if tcode != 0 {
			t.Fatalf("host %q: ibnetdiscover %v: exit %d: %s", host, args, tcode, terr)
		}
		ours, oerr, code := runOurs(t, args...)
		if code != 0 {
			t.Fatalf("host %q: ibdiscover %v: exit %d: %s", host, args, code, oerr)
		}
		if o, th := stripDate(ours), stripDate(theirs); o != th {
			t.Errorf("host %q %v: --load-cache of %s differs:\n%s", host, extra, filepath.Base(cache), golden.LineDiff(th, o))
		}
	}
}

func simArgs(net, host string) []string {
	a := []string{"--sim", net}
	if host != "" {
		a = append(a, "--sim-host", host)
	}
	return a
}

// TestPartialCacheLoadsInIBNetDiscover: caches written by partial
// discoveries of the embedded simulator (random drops without retries, a
// dead switch, a node whose NodeInfo answers change) load in
// ibnetdiscover 44, which prints from them what our --load-cache prints.
func TestPartialCacheLoadsInIBNetDiscover(t *testing.T) {
	ibsimtest.Require(t)
	dir := t.TempDir()
	specs := []string{
		"fattree:levels=2,radix=16;Drop 5",
		"fattree:levels=2,radix=16;Drop 10",
		"fattree:levels=2,radix=16;Drop 15",
		`fattree:levels=2,radix=16;Kill "S2"`,
		`fattree:levels=2,radix=8;Error "L1" 100 21`,
		`fattree:levels=2,radix=8;Inconsistent "L3" portguid 2`,
		`fattree:levels=2,radix=8;Inconsistent "L3" numports 2`,
	}
	partial := 0
	for i, spec := range specs {
		cache := filepath.Join(dir, strconv.Itoa(i)+".cache")
		// (--fixed-timeout: no short resends either, so a dropped SMP
		// is lost and the drop specs are partial too)
		_, e, code := runOurs(t, "--sim", spec, "-t", "20", "--retries", "0", "--fixed-timeout", "--cache", cache)
		switch code {
		case 0:
		case 3:
			partial++
		default:
			t.Fatalf("%s: exit %d: %s", spec, code, e)
		}
		for _, extra := range [][]string{nil, {"-p"}, {"-l"}, {"-g"}} {
			args := append([]string{"--load-cache", cache}, extra...)
			theirs, terr, tcode := ibnetdiscoverLoad(t, args...)
			if tcode != 0 {
				t.Fatalf("%s: ibnetdiscover %v: exit %d: %s", spec, args, tcode, terr)
			}
			ours, oerr, code := runOurs(t, args...)
			if code != 0 {
				t.Fatalf("%s: ibdiscover %v: exit %d: %s", spec, args, code, oerr)
			}
			if o, th := stripDate(ours), stripDate(theirs); o != th {
				t.Errorf("%s %v: --load-cache differs from ibnetdiscover:\n%s", spec, extra, golden.LineDiff(th, o))
			}
		}
	}
	if partial < 3 {
		t.Errorf("only %d of %d discoveries were partial", partial, len(specs))
	}
}

// TestInterruptedIBSimCachesLoad: discoveries through ibsim that stop in
// the middle (ibsim killed, the context cancelled, SMPs dropped at
// random by ibsim) leave a fabric whose cache loads in ibnetdiscover 44
// and prints there what our --load-cache prints.
func TestInterruptedIBSimCachesLoad(t *testing.T) {
	ibsimtest.Require(t)
	net := generated(t, "fattree:levels=2,radix=16")
	lossy := ibsimtest.WriteNetFile(t, mustRead(t, net)+"\ndo Error \"L1\" 40\ndo Error \"S3\" 40\n")
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		file   string
		stopAt int64
		kill   bool
	}{
		{"ibsim killed", net, 120, true},
		{"ibsim killed early", net, 5, true},
		{"cancelled", net, 200, false},
		{"lossy", lossy, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sim := ibsimtest.Start(t, c.file, ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: sim.SockName, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var sent atomic.Int64
			cfg := discover.Config{MaxHops: -1, Timeout: 200 * time.Millisecond, Retries: -1, Sent: func() {
				if sent.Add(1) != c.stopAt {
					return
				}
				if c.kill {
					syscall.Kill(sim.PID(), syscall.SIGKILL)
				} else {
					cancel()
				}
			}}
			res, err := discover.Discover(ctx, cl, cfg)
			if err != nil {
				t.Fatalf("discover: %v", err)
			}
			if !res.Partial() {
				t.Fatalf("discovery complete (%d nodes): the case tests nothing", len(res.Fabric.Nodes))
			}
			b, err := ibndcache.Marshal(res.Fabric)
			if err != nil {
				t.Fatal(err)
			}
			cache := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".cache")
			if err := os.WriteFile(cache, b, 0o644); err != nil {
				t.Fatal(err)
			}
			compareLoaded(t, "", cache)
		})
	}
}
