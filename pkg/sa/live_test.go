//go:build linux

package sa

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// liveFabric is the fabric the live tests and the capture run on:
// ibsim's example net.2sw2path4hca, OpenSM on Hca1, queries from Hca2.
const (
	liveNet    = ibsimtest.ExampleNet + "/net.2sw2path4hca"
	liveSMHost = "Hca1"
	liveHost   = "Hca2"
)

// startLive starts ibsim and OpenSM and returns a client attached at
// liveHost.
func startLive(t *testing.T) (*ibsimtest.Sim, *Client) {
	t.Helper()
	s := ibsimtest.Start(t, liveNet)
	s.StartOpenSM(t, liveSMHost)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName, Host: liveHost, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	tr := transport.ReadOnly(cl)
	lid, err := MasterSMLID(ctx, tr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(tr, lid)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 5 * time.Second
	return s, c
}

// capture, when SA_CAPTURE=1, makes TestLiveMatchesSaquery write the
// answers it compares into testdata/ (see testdata/capture.sh).
var capture = os.Getenv("SA_CAPTURE") == "1"

// saquery runs saquery at liveHost and returns its output lines.
func saquery(t *testing.T, s *ibsimtest.Sim, args ...string) []string {
	t.Helper()
	o, e, code := s.RunTool(t, liveHost, "saquery", args...)
	if code != 0 {
		t.Fatalf("saquery %v: exit %d\n%s%s", args, code, o, e)
	}
	return strings.Split(strings.TrimRight(string(o), "\n"), "\n")
}

// answerTap is a transport that keeps the last answer MAD.
type answerTap struct {
	transport.Transport
	last [MADSize]byte
}

func (a *answerTap) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := a.Transport.Exchange(ctx, dlid, req, resp)
	if err == nil {
		copy(a.last[:], resp)
	}
	return err
}

// save writes one captured answer with saquery's output for it.
func save(t *testing.T, name, query string, tool []string, mad []byte) {
	t.Helper()
	if !capture {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# source: ibsim 0.10 (Debian ibsim-utils) on %s, OpenSM 3.3.23 running on %s\n", filepath.Base(liveNet), liveSMHost)
	fmt.Fprintf(&b, "#   (opensm -F /dev/null -D 0x43 -d2 under libumad2sim), answer MAD received at %s by pkg/sa's client\n", liveHost)
	fmt.Fprintf(&b, "#   through pkg/ibsim for %s; the tool output below is saquery (infiniband-diags 44) at %s:\n", query, liveHost)
	fmt.Fprintf(&b, "#   saquery %s\n", strings.Join(tool, " "))
	fmt.Fprintf(&b, "# regenerate: pkg/sa/testdata/capture.sh\n")
	for _, l := range tool2lines(t, tool) {
		fmt.Fprintf(&b, "> %s\n", l)
	}
	for i := 0; i < MADSize; i += 16 {
		fmt.Fprintf(&b, "%x\n", mad[i:i+16])
	}
	if err := os.WriteFile(filepath.Join("testdata", name+".hex"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

var liveSim *ibsimtest.Sim // set by TestLiveMatchesSaquery for save

func tool2lines(t *testing.T, args []string) []string { return saquery(t, liveSim, args...) }

// TestLiveMatchesSaquery: on ibsim with OpenSM running, the client's
// NodeRecords, PortInfoRecords (every port of every node) and PathRecords
// (every ordered LID pair) equal saquery's, field by field; a LID with no
// node is ErrNoRecords; the IPoIB broadcast group's MCMemberRecord equals
// saquery -g's.
func TestLiveMatchesSaquery(t *testing.T) {
	ibsimtest.Require(t)
	s, c := startLive(t)
	liveSim = s
	tap := &answerTap{Transport: c.tr}
	c.tr = tap
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var nodes []NodeRecord
	for lid := uint16(1); ; lid++ {
		var tmpl NodeRecord
		tmpl.LID = lid
		var rec [NodeRecordSize]byte
		tmpl.MarshalTo(rec[:])
		var out [112]byte
		err := c.Get(ctx, AttrNodeRecord, NRLID, rec[:], out[:])
		if errors.Is(err, ErrNoRecords) {
			if lid < 6 {
				t.Fatalf("LID %d: %v", lid, err)
			}
			break
		}
		if err != nil {
			t.Fatalf("NodeRecord LID %d: %v", lid, err)
		}
		var n NodeRecord
		n.UnmarshalBinary(out[:])
		lines := saquery(t, s, "NR", fmt.Sprint(lid))
		if d := diffFields(nodeFields(&n), parseSaquery(lines)); len(d) > 0 || n.LID != lid {
			t.Errorf("NodeRecord LID %d: %v", lid, d)
		}
		if lid <= 2 {
			save(t, fmt.Sprintf("nr-%d", lid), fmt.Sprintf("SubnAdmGet(NodeRecord) LID %d", lid), []string{"NR", fmt.Sprint(lid)}, tap.last[:])
		}
		nodes = append(nodes, n)
	}
	pirs := 0
	for _, n := range nodes {
		first := uint8(1)
		if n.NodeInfo.NodeType == smp.NodeSwitch {
			first = 0
		}
		for port := first; port <= n.NodeInfo.NumPorts; port++ {
			tmpl := PortInfoRecord{LID: n.LID, PortNum: port}
			var rec [PortInfoRecordSize]byte
			tmpl.MarshalTo(rec[:])
			tab, err := c.GetTable(ctx, AttrPortInfoRecord, PIRLID|PIRPortNum, rec[:])
			if err != nil {
				t.Fatalf("PortInfoRecord %d/%d: %v", n.LID, port, err)
			}
			lines := saquery(t, s, "PIR", fmt.Sprintf("%d/%d", n.LID, port))
			if tab.Len() == 0 {
				if len(parseSaquery(lines)) != 0 {
					t.Errorf("PortInfoRecord %d/%d: none, saquery %q", n.LID, port, lines)
				}
				continue
			}
			if tab.Len() != 1 {
				t.Fatalf("PortInfoRecord %d/%d: %d records", n.LID, port, tab.Len())
			}
			var r PortInfoRecord
			r.UnmarshalBinary(tab.Record(0))
			if d := diffFields(portInfoFields(&r), parseSaquery(lines)); len(d) > 0 {
				t.Errorf("PortInfoRecord %d/%d: %v", n.LID, port, d)
			}
			if pirs < 2 || (n.NodeInfo.NodeType == smp.NodeSwitch && port == 0 && n.LID <= 2) {
				save(t, fmt.Sprintf("pir-%d-%d", n.LID, port), fmt.Sprintf("SubnAdmGetTable(PortInfoRecord) LID %d port %d", n.LID, port), []string{"PIR", fmt.Sprintf("%d/%d", n.LID, port)}, tap.last[:])
			}
			pirs++
		}
	}
	paths := 0
	for _, a := range nodes {
		for _, b := range nodes {
			tmpl := PathRecord{SLID: a.LID, DLID: b.LID}
			var rec [PathRecordSize]byte
			tmpl.MarshalTo(rec[:])
			tab, err := c.GetTable(ctx, AttrPathRecord, PRSLID|PRDLID, rec[:])
			if err != nil || tab.Len() != 1 {
				t.Fatalf("PathRecord %d→%d: %d records, %v", a.LID, b.LID, tab.Len(), err)
			}
			var p PathRecord
			p.UnmarshalBinary(tab.Record(0))
			args := []string{"-p", "--slid", fmt.Sprint(a.LID), "--dlid", fmt.Sprint(b.LID)}
			if d := diffFields(pathFields(&p), parseSaquery(saquery(t, s, args...))); len(d) > 0 {
				t.Errorf("PathRecord %d→%d: %v", a.LID, b.LID, d)
			}
			if paths%11 == 1 {
				save(t, fmt.Sprintf("pr-%d-%d", a.LID, b.LID), fmt.Sprintf("SubnAdmGetTable(PathRecord) SLID %d DLID %d", a.LID, b.LID), args, tap.last[:])
			}
			paths++
		}
	}
	tab, err := c.GetTable(ctx, AttrMCMemberRecord, 0, nil)
	if err != nil || tab.Len() != 1 {
		t.Fatalf("MCMemberRecords: %d, %v", tab.Len(), err)
	}
	var m MCMemberRecord
	m.UnmarshalBinary(tab.Record(0))
	if d := diffFields(mcFields(&m), parseSaquery(saquery(t, s, "-g"))); len(d) > 0 {
		t.Errorf("MCMemberRecord: %v", d)
	}
	save(t, "mcmr-all", "SubnAdmGetTable(MCMemberRecord) with no component", []string{"-g"}, tap.last[:])
	if len(nodes) < 6 || pirs < 20 || paths < 36 {
		t.Fatalf("only %d nodes, %d PortInfoRecords, %d PathRecords compared", len(nodes), pirs, paths)
	}
	t.Logf("%d NodeRecords, %d PortInfoRecords, %d PathRecords equal saquery's", len(nodes), pirs, paths)
}

// TestLiveErrors: without a running SM (opensm --once has assigned LIDs
// and left) the SA never answers: ErrNoAnswer after Retries+1 attempts,
// within their timeouts; before any SM ran the local port's MasterSMLID
// is 0: ErrNoSM; an unknown LID is ErrNoRecords and a Get that matches
// every NodeRecord the SA's ERR_TOO_MANY_RECORDS status, from a running OpenSM.
func TestLiveErrors(t *testing.T) {
	ibsimtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := ibsimtest.Start(t, liveNet)
	dial := func() transport.Transport {
		cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: s.SockName, Host: liveHost, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return transport.ReadOnly(cl)
	}
	if _, err := MasterSMLID(ctx, dial(), 5*time.Second); !errors.Is(err, ErrNoSM) {
		t.Fatalf("no SM ran: %v", err)
	}
	s.RunOpenSM(t, liveSMHost, t.TempDir())
	tr := dial()
	lid, err := MasterSMLID(ctx, tr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(tr, lid)
	c.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err = c.GetTable(ctx, AttrNodeRecord, 0, nil)
	if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("SM gone: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("SM gone: %v to give up", d)
	}
	s.StartOpenSM(t, liveSMHost)
	c.Timeout = 5 * time.Second
	var tmpl NodeRecord
	tmpl.LID = 999
	var rec [NodeRecordSize]byte
	tmpl.MarshalTo(rec[:])
	var out [NodeRecordSize]byte
	if err := c.Get(ctx, AttrNodeRecord, NRLID, rec[:], out[:]); !errors.Is(err, ErrNoRecords) {
		t.Fatalf("unknown LID: %v", err)
	}
	err = c.Get(ctx, AttrNodeRecord, 0, nil, out[:])
	var se *StatusError
	if !errors.As(err, &se) || se.Status != StatusTooManyRecords || !errors.Is(err, ErrStatus) {
		t.Fatalf("Get of every NodeRecord: %v", err)
	}
}
