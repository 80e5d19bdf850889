//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/mcjoin"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// mftSMP reads (set false) or writes (set true, a test's SMP on its
// private fabric) MFT block 0, position 0 of switch sw.
func mftSMP(t *testing.T, tr transport.Transport, sw *model.Node, set bool, tbl smp.MulticastForwardingTable) smp.MulticastForwardingTable {
	t.Helper()
	m := smp.NewGet(sw.Path, smp.AttrMulticastFwdTable, smp.MFTModifier(0, 0))
	if set {
		m.Method = smp.MethodSet
		if err := tbl.MarshalTo(m.Data[:]); err != nil {
			t.Fatal(err)
		}
	}
	req, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, smp.MADSize)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil || r.StatusCode() != 0 {
		t.Fatalf("MFT SMP: %v, status %#x", err, r.StatusCode())
	}
	var out smp.MulticastForwardingTable
	if err := out.UnmarshalBinary(r.Data[:]); err != nil {
		t.Fatal(err)
	}
	return out
}

func switchNamed(t *testing.T, f *model.Fabric, name string) *model.Node {
	t.Helper()
	for _, sw := range f.Switches() {
		if sw.Description() == name {
			return sw
		}
	}
	t.Fatalf("no switch %q", name)
	return nil
}

// mcastRun runs --check-mcast (text and JSON) and returns the text, the
// JSON document decoded and the exit status (the same for both).
func mcastRun(t *testing.T, args ...string) (string, jsonMCastCheck, int) {
	t.Helper()
	out, errb, code := runOurs(t, append(args, "--check-mcast")...)
	doc, jerr, jcode := runOurs(t, append(args, "--check-mcast", "--json")...)
	if jcode != code {
		t.Errorf("--json: exit %d, text exit %d: %s", jcode, code, jerr)
	}
	validateDoc(t, "--check-mcast --json", doc)
	var j jsonMCastCheck
	if err := json.Unmarshal(doc, &j); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return string(out) + string(errb), j, code
}

func kinds(j jsonMCastCheck) string {
	var k []string
	for _, f := range j.Findings {
		k = append(k, f.Kind)
	}
	return strings.Join(k, ",")
}

// TestCheckMCastLive: on ibsim under OpenSM (a daemon), before any join
// nothing is checked (exit 5); after Hca1, Hca2 and Hca3 join the IPoIB
// broadcast group (the test-only helper), the trees OpenSM programmed are
// clean, with three members reached, the members saquery -m --smkey 1
// lists. Then the test breaks Switch1's and Switch2's MFT entries with
// SMP Sets, one fault at a time, restoring OpenSM's between: the second
// inter-switch link added at both ends (a loop), Hca3's port dropped (a
// member missed, found only with --smkey: without it the members are the
// tree's leaves), Hca4's port added (not a member), the inter-switch
// link at one end only (one way: the two switches are two trees).
func TestCheckMCastLive(t *testing.T) {
	ibsimtest.Require(t)
	sim := ibsimtest.Start(t, ibsimtest.ExampleNet+"/net.2sw2path4hca")
	sim.StartOpenSM(t, "Hca1")
	f, fab := ibsimFabric(t, sim.SockName)
	var lids []string
	for _, sw := range f.Switches() {
		lids = append(lids, strconv.Itoa(int(sw.SMALID())))
	}
	base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", "Hca1"}
	key := append(append([]string{}, base...), "--smkey", "1")

	out, j, code := mcastRun(t, key...)
	if code != exitcode.NothingChecked || j.Summary.Clean || !strings.Contains(out, "Result: nothing to check: ") {
		t.Errorf("before any join: exit %d, want %d:\n%s", code, exitcode.NothingChecked, out)
	}

	for _, h := range []string{"Hca2", "Hca3", "Hca1"} {
		mcjoin.Attach(t, sim.SockName, h).Join(t, mcjoin.BroadcastMGID)
	}
	settle(t, sim, "Hca1", lids, "after the joins", func(n int) bool { return n == 2 })

	// OpenSM's own view of the members: saquery -m --smkey 1.
	sq, serr, scode := sim.RunTool(t, "Hca1", "saquery", "-m", "--smkey", "1")
	if scode != 0 {
		t.Fatalf("saquery -m: exit %d: %s", scode, serr)
	}
	saMembers := strings.Count(string(sq), "PortGid") - strings.Count(string(sq), "PortGid.................::\n")
	for _, args := range [][]string{key, base} {
		out, j, code := mcastRun(t, args...)
		if code != 0 || !j.Summary.Clean || !strings.Contains(out, "Result: clean\n") {
			t.Fatalf("%v after the joins: exit %d:\n%s", args, code, out)
		}
		if len(j.Groups) != 1 || j.Groups[0].Members != 3 || j.Groups[0].Reached != 3 || j.Groups[0].Switches != 2 || j.Groups[0].Links != 1 {
			t.Errorf("%v: groups %+v, want 1 group: 2 switches, 1 link, 3 of 3 members", args, j.Groups)
		}
		// OpenSM's tree as ibroute -M prints it: the switches with an
		// entry for 0xc000.
		programmed := 0
		for _, lid := range lids {
			if bytes.Contains(ibrouteM(t, sim, "Hca1", lid), []byte("\n0xc000 ")) {
				programmed++
			}
		}
		if j.Groups[0].Switches != programmed {
			t.Errorf("%d switches forward the group, ibroute -M shows %d", j.Groups[0].Switches, programmed)
		}
		if len(args) == len(key) && (j.Summary.MembersFrom != "sa" || saMembers != 3) {
			t.Errorf("--smkey: members from %q; saquery -m --smkey 1 lists %d members, want 3:\n%s", j.Summary.MembersFrom, saMembers, sq)
		}
	}

	s1, s2 := switchNamed(t, f, "Switch1"), switchNamed(t, f, "Switch2")
	orig1, orig2 := mftSMP(t, fab, s1, false, smp.MulticastForwardingTable{}), mftSMP(t, fab, s2, false, smp.MulticastForwardingTable{})
	// OpenSM's tree crosses one of the two inter-switch links (ports 3
	// and 5 of both): the other one closes a loop.
	inter, other := uint16(1<<3), uint16(1<<5)
	if orig1[0]&inter == 0 {
		inter, other = other, inter
	}
	if orig1[0]&inter == 0 || orig2[0]&inter == 0 || orig1[0]&other != 0 {
		t.Fatalf("OpenSM's entries for 0xc000: Switch1 %#x, Switch2 %#x: no one inter-switch link", orig1[0], orig2[0])
	}
	for _, c := range []struct {
		name   string
		m1, m2 uint16 // bits set (or cleared, with clear) on Switch1's and Switch2's entries
		clear  bool
		want   string
		plain  string // the kinds found without --smkey
	}{
		{"loop", other, other, false, routing.MCastLoop, routing.MCastLoop},
		{"member dropped", 1 << 2, 0, true, routing.MCastMissing, ""},
		{"non-member added", 0, 1 << 2, false, routing.MCastNonMember, ""},
		{"one way", 0, inter, true, routing.MCastOneWay + "," + routing.MCastSplit, routing.MCastOneWay + "," + routing.MCastSplit},
	} {
		t.Run(c.name, func(t *testing.T) {
			e1, e2 := orig1, orig2
			if c.clear {
				e1[0] &^= c.m1
				e2[0] &^= c.m2
			} else {
				e1[0] |= c.m1
				e2[0] |= c.m2
			}
			mftSMP(t, fab, s1, true, e1)
			mftSMP(t, fab, s2, true, e2)
			defer func() {
				mftSMP(t, fab, s1, true, orig1)
				mftSMP(t, fab, s2, true, orig2)
			}()
			out, j, code := mcastRun(t, key...)
			if code != exitcode.Problem || !strings.Contains(out, "Result: PROBLEMS FOUND") || kinds(j) != c.want {
				t.Errorf("--smkey 1: exit %d, findings %q, want %d, %q:\n%s", code, kinds(j), exitcode.Problem, c.want, out)
			}
			out, j, code = mcastRun(t, base...)
			if kinds(j) != c.plain || (c.plain == "") != (code == 0) {
				t.Errorf("no --smkey: exit %d, findings %q, want %q:\n%s", code, kinds(j), c.plain, out)
			}
		})
	}
	// Restored: clean again.
	if out, _, code := mcastRun(t, key...); code != 0 {
		t.Errorf("restored: exit %d:\n%s", code, out)
	}
	// A fourth member: OpenSM's answer (4 records, 224 bytes) needs two
	// MADs; under libumad2sim it comes cut to one, without RMPP (saquery
	// -m lists three members): the members are asked port by port.
	mcjoin.Attach(t, sim.SockName, "Hca4").Join(t, mcjoin.BroadcastMGID)
	settle(t, sim, "Hca1", lids, "after Hca4 joined", func(n int) bool { return n == 2 })
	out, j, code = mcastRun(t, key...)
	if code != 0 || len(j.Groups) != 1 || j.Groups[0].Members != 4 || j.Groups[0].Reached != 4 || j.Summary.MembersFrom != "sa" ||
		!strings.Contains(out, "asked port by port") {
		t.Errorf("4 members: exit %d, groups %+v:\n%s", code, j.Groups, out)
	}
}

// TestCheckMCastSlowLink: the inter-switch links of net.2sw2path4hca at
// 1x (ibsim's w=1): the broadcast group's 10 Gb/s is above the 2.5 Gb/s
// the tree's link carries, found at both of its ends' switch.
func TestCheckMCastSlowLink(t *testing.T) {
	ibsimtest.Require(t)
	b, err := os.ReadFile(ibsimtest.ExampleNet + "/net.2sw2path4hca")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	inSwitch := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Switch") || strings.HasPrefix(l, "Hca") {
			inSwitch = strings.HasPrefix(l, "Switch")
		}
		if inSwitch && strings.Contains(l, `"Switch`) && strings.HasPrefix(l, "[") {
			l += "\tw=1"
		}
		lines = append(lines, l)
	}
	file := filepath.Join(t.TempDir(), "slow.net")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := ibsimtest.Start(t, file)
	sim.StartOpenSM(t, "Hca1")
	f, _ := ibsimFabric(t, sim.SockName)
	var lids []string
	for _, sw := range f.Switches() {
		lids = append(lids, strconv.Itoa(int(sw.SMALID())))
	}
	for _, h := range []string{"Hca2", "Hca1"} {
		mcjoin.Attach(t, sim.SockName, h).Join(t, mcjoin.BroadcastMGID)
	}
	settle(t, sim, "Hca1", lids, "after the joins", func(n int) bool { return n == 2 })
	out, j, code := mcastRun(t, "--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", "Hca1", "--smkey", "1")
	if code != exitcode.Problem || kinds(j) != routing.MCastRate {
		t.Fatalf("exit %d, findings %q, want %d, %q:\n%s", code, kinds(j), exitcode.Problem, routing.MCastRate, out)
	}
	if !bytes.Contains([]byte(out), []byte("the link's rate 2.5 Gb/s is below the group's 10 Gb/s")) {
		t.Errorf("message:\n%s", out)
	}
}

// TestCheckMCastSim: the embedded simulator's SM joins every CA port to
// the broadcast group and programs its tree: clean, with the members
// from the SA given its SM_Key, else from the tree; then faults set in
// its MFTs by SMP (a CA port dropped, an end port added, the tree cut)
// are found, each with its own kind.
func TestCheckMCastSim(t *testing.T) {
	file := fabrics + "demo.net"
	for _, c := range []struct {
		args []string
		from string
	}{{nil, "tree"}, {[]string{"--smkey", "1"}, "sa"}, {[]string{"--smkey", "0x1"}, "sa"}} {
		out, j, code := mcastRun(t, append([]string{"--sim", file}, c.args...)...)
		if code != 0 || !j.Summary.Clean || j.Summary.MembersFrom != c.from || len(j.Groups) != 1 || j.Groups[0].Members == 0 || j.Groups[0].Reached != j.Groups[0].Members {
			t.Errorf("%v: exit %d, summary %+v, groups %+v:\n%s", c.args, code, j.Summary, j.Groups, out)
		}
	}
	b := newBrokenSim(t, file)
	spine := switchNamed(t, b.f, "spine01")
	orig := mftSMP(t, b.tr, spine, false, smp.MulticastForwardingTable{})
	if orig[0] == 0 {
		t.Fatal("the simulator's SM programmed no entry for 0xc000 on spine01")
	}
	var leaf *model.Node
	var caPort, freePort uint8
	for _, sw := range b.f.Switches() {
		tab := mftSMP(t, b.tr, sw, false, smp.MulticastForwardingTable{})
		for p := 1; p <= min(sw.NumPorts(), 15); p++ {
			pp := sw.Port(p)
			if pp == nil || pp.Remote == nil || pp.Remote.Node.IsSwitch() {
				continue
			}
			if tab[0]&(1<<p) != 0 && caPort == 0 {
				leaf, caPort = sw, uint8(p)
			}
		}
	}
	if leaf == nil {
		t.Fatal("no CA port in the tree")
	}
	for p := 1; p <= min(leaf.NumPorts(), 15); p++ {
		if pp := leaf.Port(p); pp == nil || pp.Remote == nil {
			freePort = uint8(p)
			break
		}
	}
	for _, f := range []struct {
		name string
		sw   *model.Node
		set  func(e uint16) uint16
		want string // with --smkey 1
	}{
		{"member dropped", leaf, func(e uint16) uint16 { return e &^ (1 << caPort) }, routing.MCastMissing},
		{"port without a link", leaf, func(e uint16) uint16 { return e | 1<<freePort }, routing.MCastDownPort},
		{"own port 0", leaf, func(e uint16) uint16 { return e | 1 }, routing.MCastNonMember},
		{"tree cut at the spine", spine, func(uint16) uint16 { return 0 }, ""},
	} {
		t.Run(f.name, func(t *testing.T) {
			base := mftSMP(t, b.tr, f.sw, false, smp.MulticastForwardingTable{})
			e := base
			e[0] = f.set(e[0])
			mftSMP(t, b.tr, f.sw, true, e)
			defer mftSMP(t, b.tr, f.sw, true, base)
			out, j, code := mcastRun(t, "--sim", file, "--smkey", "1")
			got := kinds(j)
			if f.want == "" {
				// the spine's links now lead to switches whose entries
				// still point back: one-way links and a split tree
				if !strings.Contains(got, routing.MCastOneWay) || !strings.Contains(got, routing.MCastSplit) {
					t.Errorf("findings %q, want one-way and split:\n%s", got, out)
				}
			} else if got != f.want {
				t.Errorf("findings %q, want %q:\n%s", got, f.want, out)
			}
			if code != exitcode.Problem {
				t.Errorf("exit %d, want %d", code, exitcode.Problem)
			}
		})
	}
}

// saFault is a transport on which SA requests (class 0x03) get no
// answer; with cancel set, the first one interrupts the run instead.
type saFault struct {
	transport.Transport
	cancel func()
}

func (s *saFault) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if len(req) > 1 && req[1] == 0x03 {
		if s.cancel != nil {
			s.cancel()
		}
		<-ctx.Done()
		return &transport.OpError{Op: "exchange", Err: transport.ErrTimeout}
	}
	return s.Transport.Exchange(ctx, dlid, req, resp)
}

// TestCheckMCastBadInput: no SM (exit 5, said why), an SA that never
// answers (one line, exit 1, within a bound), an interrupt while waiting
// for it (130), and bad flags (2).
func TestCheckMCastBadInput(t *testing.T) {
	out, j, code := mcastRun(t, "--sim", fabrics+"loop.net", "--sim-sm=false")
	if code != exitcode.NothingChecked || j.Summary.Clean || !strings.Contains(j.Summary.Reason, "no SM") || !strings.Contains(out, "Result: nothing to check: no SM") {
		t.Errorf("no SM: exit %d, reason %q:\n%s", code, j.Summary.Reason, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--check-mcast", "--smkey", "x"}, "--smkey x: not an SM_Key"},
		{[]string{"--smkey", "1"}, "--smkey: only with --check-mcast"},
		{[]string{"--check-mcast", "--check-routes"}, "choose one mode"},
		{[]string{"--check-mcast", "h1"}, "no arguments with --check-mcast"},
	} {
		_, errb, code := runOurs(t, append([]string{"--sim", fabrics + "loop.net"}, c.args...)...)
		if code != exitcode.Usage || !strings.Contains(string(errb), c.want) || strings.Count(string(errb), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want %d and one line with %q", c.args, code, errb, exitcode.Usage, c.want)
		}
	}

	var cancel func()
	newBrokenSim(t, fabrics+"loop.net") // openFabric: its simulator
	inner := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := inner(ctx, s)
		if err == nil {
			f.Transport = &saFault{Transport: f.Transport, cancel: cancel}
		}
		return f, err
	}
	start := time.Now()
	outb, errb, code := runOurs(t, "--sim", fabrics+"loop.net", "--check-mcast", "--timeout", "200", "--retries", "1")
	if code != exitcode.Fatal || len(outb) != 0 || strings.Count(string(errb), "\n") != 1 || !strings.Contains(string(errb), "MCMemberRecords from the SA at LID 1") {
		t.Errorf("SA silent: exit %d, stdout %q, stderr %q", code, outb, errb)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("SA silent: %v to give up (2 tries of 200 ms)", d)
	}

	ctx, c := context.WithCancel(context.Background())
	defer c()
	cancel = c
	done := make(chan int, 1)
	var o, e bytes.Buffer
	go func() {
		done <- run(ctx, &o, &e, []string{"ibhops", "--sim", fabrics + "loop.net", "--check-mcast", "--timeout", "60000"})
	}()
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("--check-mcast did not stop within a minute of its interrupt")
	}
	if code != exitcode.Interrupted {
		t.Errorf("interrupted: exit %d, want %d: %s", code, exitcode.Interrupted, e.String())
	}
}
