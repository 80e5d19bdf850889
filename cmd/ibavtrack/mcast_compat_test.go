//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/internal/testkit/mcjoin"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestCompatMcast: on ibsim with OpenSM running, `ibavtrack mcast` prints
// what saquery -g prints and `mcast --members` what saquery -m prints,
// byte for byte, with and without --smkey, with and without an MLID:
// before any join (OpenSM's broadcast group, no member), after three CA
// ports join it through the test helper (OpenSM lists each member only
// to its SM_Key; saquery -m names only the nodes of the first NodeRecord
// the shim lets through), after one leaves, and after a port creates a
// second group. The JSON validates
// against docs/mcast.schema.json and lists the same members.
func TestCompatMcast(t *testing.T) {
	ibsimtest.Require(t)
	const host = "Hca2"
	sim := ibsimtest.Start(t, ibsimtest.ExampleNet+"/net.2sw2path4hca")
	sim.StartOpenSM(t, "Hca1")
	base := []string{"--ibsim-sockname", sim.SockName, "--sim-host", host}
	type pair struct{ theirs, ours []string }
	cases := []pair{
		{[]string{"-g"}, []string{}},
		{[]string{"-m"}, []string{"--members"}},
		{[]string{"-g", "--smkey", "1"}, []string{"--smkey", "1"}},
		{[]string{"-m", "--smkey", "0x1"}, []string{"--members", "--smkey", "0x1"}},
		{[]string{"-m", "0xC000", "--smkey", "1"}, []string{"--members", "0xC000", "--smkey", "1"}},
		{[]string{"-m", "0xc000"}, []string{"--members", "0xc000"}},
	}
	compare := func(stage string, wantMembers int) {
		t.Helper()
		for _, c := range cases {
			theirs, terr, tcode := sim.RunTool(t, host, "saquery", c.theirs...)
			if tcode != 0 {
				t.Fatalf("%s: saquery %v: exit %d: %s", stage, c.theirs, tcode, terr)
			}
			ours, oerr, code := runTool(t, append(append([]string{"mcast"}, c.ours...), base...)...)
			if code != 0 {
				t.Errorf("%s: mcast %v: exit %d: %s", stage, c.ours, code, oerr)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("%s: mcast %v differs from saquery %v:\n%s", stage, c.ours, c.theirs, golden.LineDiff(string(theirs), string(ours)))
			}
		}
		doc, oerr, code := runTool(t, append([]string{"mcast", "--members", "--smkey", "1", "--json"}, base...)...)
		if code != 0 {
			t.Fatalf("%s: mcast --members --json: exit %d: %s", stage, code, oerr)
		}
		validateMcast(t, stage, doc)
		var d struct{ Records []mcastRecordJSON }
		json.Unmarshal(doc, &d)
		if len(d.Records) != wantMembers {
			t.Errorf("%s: --json lists %d members, want %d:\n%s", stage, len(d.Records), wantMembers, doc)
		}
	}
	compare("before any join", 0)
	var js []*mcjoin.Member
	for _, h := range []string{"Hca1", "Hca2", "Hca3"} {
		j := mcjoin.Attach(t, sim.SockName, h)
		j.Join(t, mcjoin.BroadcastMGID)
		js = append(js, j)
	}
	compare("after three joins", 3)
	js[1].Leave(t, mcjoin.BroadcastMGID)
	compare("after Hca2 left", 2)
	// A second group, created by Hca3 (MTU 1024, SL 1): two groups, and
	// Hca3 a member of both.
	js[2].Create(t, sa.MCMemberRecord{MGID: testMGID, QKey: 0x1111, PKey: 0xffff, SL: 1,
		MTUSelector: sa.SelectorExactly, MTU: smp.MTU1024, RateSelector: sa.SelectorExactly, Rate: smp.Rate10})
	cases = append(cases, pair{[]string{"-m", "0xc001", "--smkey", "1"}, []string{"--members", "0xc001", "--smkey", "1"}})
	compare("after Hca3 created a second group", 3)

	// An MLID no group has: nothing on stdout (as saquery), one line.
	out, errb, code := runTool(t, append([]string{"mcast", "--members", "0xc00f"}, base...)...)
	if code != exitcode.Usage || len(out) != 0 || !strings.Contains(string(errb), "MLID 0xc00f: no such multicast group (the SA lists 0xc001, 0xc000)") {
		t.Errorf("unknown MLID: exit %d\n%s%s", code, out, errb)
	}
}

// validateMcast checks a document against docs/mcast.schema.json.
func validateMcast(t *testing.T, name string, doc []byte) {
	t.Helper()
	s, err := jsonschema.Load("../../docs/mcast.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON(doc); err != nil {
		t.Errorf("%s: does not validate against docs/mcast.schema.json: %v\n%s", name, err, doc)
	}
}

// testMGID is a group the test creates (not IPoIB's signature, whose
// values OpenSM takes from the partition).
var testMGID = sa.GID{0xff, 0x12, 0x12, 0x34, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0xff, 0, 0x12, 0x34}

// TestWatchMcastLive: on ibsim with OpenSM running, watch --mcast MGID
// follows a group a CA port created through the test helper (Q_Key
// 0x1111, MTU 2048): its AV at the first sweep; after the one member
// leaves, OpenSM deletes the group and the AV is cleared (gone, the
// held reference shown retired); after the port creates it again with
// other values (Q_Key 0x2222, MTU 1024, SL 1), a new current AV listing
// what changed; a second member joining changes nothing. The MLID form
// finds the same group. Every line validates against
// docs/mcast-event.schema.json.
func TestWatchMcastLive(t *testing.T) {
	ibsimtest.Require(t)
	sim := ibsimtest.Start(t, ibsimtest.ExampleNet+"/net.2sw2path4hca")
	sim.StartOpenSM(t, "Hca1")
	j3, j1 := mcjoin.Attach(t, sim.SockName, "Hca3"), mcjoin.Attach(t, sim.SockName, "Hca1")
	first := sa.MCMemberRecord{MGID: testMGID, QKey: 0x1111, PKey: 0xffff, MTUSelector: sa.SelectorExactly, MTU: smp.MTU2048, RateSelector: sa.SelectorExactly, Rate: smp.Rate10}
	j3.Create(t, first)
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, _ *attach.Fabric) {
		switch sweep {
		case 0:
			j3.Leave(t, testMGID)
		case 1:
			again := first
			again.QKey, again.MTU, again.SL = 0x2222, smp.MTU1024, 1
			j3.Create(t, again)
		case 2:
			j1.Join(t, testMGID)
		}
	}
	defer func() { afterSweep = nil }()
	out, errb, code := runTool(t, "watch", "--mcast", "ff12:1234:ffff::1:ff00:1234", "--json", "--count", "4", "--interval", "1ms",
		"--ibsim-sockname", sim.SockName, "--sim-host", "Hca2")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	t.Logf("watch --mcast --json:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	type ev struct {
		Event     string
		Recreated bool
		Changes   []struct{ Field, Old, New string }
		AV        *groupAVJSON
		Retired   []groupRetiredJSON
	}
	var evs []ev
	for i, l := range lines {
		validateSchema(t, "../../docs/mcast-event.schema.json", fmt.Sprintf("line %d", i+1), []byte(l))
		var e ev
		json.Unmarshal([]byte(l), &e)
		evs = append(evs, e)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events, want new, gone, change:\n%s", len(evs), out)
	}
	if e := evs[0]; e.Event != "new" || e.AV == nil || e.AV.QKey != "0x00001111" || e.AV.MTUBytes != 2048 || e.AV.MLID < 0xc000 {
		t.Errorf("first event %+v", e)
	}
	mlid := evs[0].AV.MLID
	if e := evs[1]; e.Event != "gone" || e.AV != nil || len(e.Retired) != 1 || e.Retired[0].AV.QKey != "0x00001111" {
		t.Errorf("after the leave: %+v", e)
	}
	var changed []string
	for _, c := range evs[2].Changes {
		changed = append(changed, c.Field+" "+c.Old+" "+c.New)
	}
	if e := evs[2]; e.Event != "change" || !e.Recreated || e.AV == nil || e.AV.QKey != "0x00002222" || e.AV.SL != 1 ||
		strings.Join(changed, ", ") != "mtu 2048 1024, sl 0 1, qkey 0x00001111 0x00002222" {
		t.Errorf("after the re-creation: %+v (changes %v)", e, changed)
	}
	// By MLID: the group as it is now, one event.
	afterSweep = nil
	out, errb, code = runTool(t, "watch", "--mcast", fmt.Sprintf("0x%x", mlid), "--count", "1", "--interval", "1ms",
		"--ibsim-sockname", sim.SockName, "--sim-host", "Hca2")
	if code != 0 || !strings.Contains(string(out), "AV mgid ff12:1234:ffff::1:ff00:1234 mlid ") || !strings.Contains(string(out), "mtu 1024 rate 10 Gb/s sl 1 qkey 0x00002222") {
		t.Errorf("by MLID: exit %d\n%s%s", code, out, errb)
	}
}

// validateSchema checks a document against a schema file.
func validateSchema(t *testing.T, file, name string, doc []byte) {
	t.Helper()
	s, err := jsonschema.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON(doc); err != nil {
		t.Errorf("%s: does not validate against %s: %v\n%s", name, file, err, doc)
	}
}

// TestWatchMcastReattaches: ibsim restarted under the same name (with a
// new OpenSM) between two sweeps: watch --mcast attaches again, says so
// once, and finds the broadcast group unchanged (no event after the
// first).
func TestWatchMcastReattaches(t *testing.T) {
	ibsimtest.Require(t)
	net := ibsimtest.ExampleNet + "/net.2sw2path4hca"
	s := ibsimtest.Start(t, net)
	s.StartOpenSM(t, "Hca1")
	hookMu.Lock()
	defer hookMu.Unlock()
	afterSweep = func(sweep int, _ *attach.Fabric) {
		if sweep == 0 {
			s.Stop()
			s2 := ibsimtest.Start(t, net, ibsimtest.WithSockName(s.SockName))
			s2.StartOpenSM(t, "Hca1")
		}
	}
	defer func() { afterSweep = nil }()
	out, errb, code := runTool(t, "watch", "--mcast", "0xc000", "--ibsim-sockname", s.SockName, "--sim-host", "Hca2",
		"--interval", "1ms", "--count", "3")
	if code != 0 || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), "0xc000: AV mgid ff12:401b:ffff::ffff:ffff mlid 0xc000 mtu 2048") {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	if msg := string(errb); strings.Count(msg, "ibsim went away (ended or restarted); attached again: ") != 1 || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr, want one reattach line:\n%s", msg)
	}
}
