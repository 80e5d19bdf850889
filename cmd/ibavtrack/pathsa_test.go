package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

type pathSADoc struct {
	AV           avJSON
	AVSource     string `json:"av_source"`
	AVSourceNote string `json:"av_source_note"`
	PathRecord   *struct {
		SL, MTU, Rate uint8
		PKey          string
		PacketLife    uint8 `json:"packet_life"`
		Reversible    bool
	} `json:"path_record"`
	ComputedAV avJSON `json:"computed_av"`
	Problems   []avProblemJSON
}

// TestPathFromSA: with the embedded simulator's SM (and so its SA) the
// AV comes from the SA's PathRecord, text and JSON say so, the SA and
// the route agree (no problem, --check exits 0).
func TestPathFromSA(t *testing.T) {
	stdout, stderr, code := runTool(t, "path", "--sim", "testdata/pathmix.net", "--check", "hA", "hB")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{"AV from the SA's PathRecord (the SM at LID 1)", "P_Key 0xffff  PacketLife 18  HopLimit 0  FlowLabel 0x0  TClass 0  Reversible true  Preference 0"} {
		if !strings.Contains(string(stdout), w) {
			t.Errorf("no %q in\n%s", w, stdout)
		}
	}
	if strings.Contains(string(stdout), "Problem") {
		t.Errorf("problems:\n%s", stdout)
	}
	stdout, _, code = runTool(t, "path", "--sim", "testdata/pathmix.net", "--json", "hA", "hB")
	var doc pathSADoc
	if err := json.Unmarshal(stdout, &doc); err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, stdout)
	}
	if doc.AVSource != "sa" || doc.PathRecord == nil || doc.PathRecord.MTU != doc.AV.MTU || doc.PathRecord.PKey != "0xffff" ||
		doc.PathRecord.PacketLife != 18 || !doc.PathRecord.Reversible || doc.ComputedAV != doc.AV || doc.Problems == nil || len(doc.Problems) != 0 {
		t.Errorf("%+v %+v", doc, doc.PathRecord)
	}
}

// TestPathCheckSL2VL: a switch on the route whose SLtoVLMappingTable
// sends the SA's SL 0 to VL 15 is a problem naming the hop and port;
// --check exits 4, without it the problem is printed and the exit is 0.
func TestPathCheckSL2VL(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	f, err := sim.Load("testdata/pathmix.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	// swB's table for packets entering at port 1 and leaving at port 3.
	ep, _ := f.Attach("swB")
	set := smp.NewGet(smp.DRPath{}, smp.AttrSLtoVLMappingTable, smp.SL2VLModifier(1, 3))
	set.Method = smp.MethodSet
	tab := smp.SLtoVLMappingTable{smp.VLDrop, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0}
	tab.MarshalTo(set.Data[:])
	req, _ := set.MarshalBinary()
	var resp [smp.MADSize]byte
	if err := ep.Exchange(context.Background(), smp.PermissiveLID, req, resp[:]); err != nil {
		t.Fatal(err)
	}
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		ep, err := f.Attach(s.SimHost)
		if err != nil {
			return nil, err
		}
		return &attach.Fabric{Transport: transport.ReadOnly(ep), Desc: "test simulator", Sim: f}, nil
	}
	defer func() { openFabric = old }()
	const want = "hop 3: swB[3] maps the SA's SL 0 to VL 15: packets are dropped there"
	stdout, stderr, code := runTool(t, "path", "--sim", "testdata/pathmix.net", "--check", "hA", "hB")
	if code != exitcode.Problem || !strings.Contains(string(stdout), "Problem: "+want) {
		t.Fatalf("--check: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = runTool(t, "path", "--sim", "testdata/pathmix.net", "--json", "hA", "hB")
	var doc pathSADoc
	if err := json.Unmarshal(stdout, &doc); err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, stdout)
	}
	if len(doc.Problems) != 1 || doc.Problems[0] != (avProblemJSON{Kind: "sl2vl", Message: want, Hop: 3, At: "swB[3]"}) {
		t.Errorf("problems %+v", doc.Problems)
	}
	// The other direction crosses swB from port 3 to port 1: no problem.
	if stdout, _, code := runTool(t, "path", "--sim", "testdata/pathmix.net", "--check", "hB", "hA"); code != 0 {
		t.Errorf("hB→hA: exit %d\n%s", code, stdout)
	}
}
