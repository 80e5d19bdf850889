//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
	"github.com/ibfabric/ibdiag/internal/testkit/mcjoin"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/sa"
)

// joiner is a CA port that joins groups through the test-only helper.
type joiner struct {
	host string
	cl   *ibsim.Client
	guid uint64
	sm   uint16
}

// attachJoiner dials ibsim at host with a client that may send the join
// (the test helper's, never a tool's).
func attachJoiner(t *testing.T, sim *ibsimtest.Sim, host string) *joiner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: sim.SockName, Host: host, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	guid, err := mcjoin.LocalPortGUID(ctx, cl)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	sm, err := sa.MasterSMLID(ctx, cl, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return &joiner{host: host, cl: cl, guid: guid, sm: sm}
}

func (j *joiner) join(t *testing.T, mgid [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := mcjoin.Join(ctx, j.cl, j.sm, j.guid, mgid); err != nil {
		t.Fatalf("join from %s: %v", j.host, err)
	}
}

func (j *joiner) leave(t *testing.T, mgid [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := mcjoin.Leave(ctx, j.cl, j.sm, j.guid, mgid); err != nil {
		t.Fatalf("leave from %s: %v", j.host, err)
	}
}

// TestCompatMcast: on ibsim with OpenSM running, `ibavtrack mcast` prints
// what saquery -g prints and `mcast --members` what saquery -m prints,
// byte for byte, with and without --smkey, with and without an MLID:
// before any join (OpenSM's broadcast group, no member), after three CA
// ports join it through the test helper (OpenSM lists each member only
// to its SM_Key; saquery -m names only the nodes of the first NodeRecord
// the shim lets through), and after one leaves. The JSON validates
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
	var js []*joiner
	for _, h := range []string{"Hca1", "Hca2", "Hca3"} {
		j := attachJoiner(t, sim, h)
		j.join(t, mcjoin.BroadcastMGID)
		js = append(js, j)
	}
	compare("after three joins", 3)
	js[1].leave(t, mcjoin.BroadcastMGID)
	compare("after Hca2 left", 2)

	// An MLID no group has: nothing on stdout (as saquery), one line.
	out, errb, code := runTool(t, append([]string{"mcast", "--members", "0xc00f"}, base...)...)
	if code != exitcode.Usage || len(out) != 0 || !strings.Contains(string(errb), "MLID 0xc00f: no such multicast group (the SA lists 0xc000)") {
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
