package portcounters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

func TestParseThresholds(t *testing.T) {
	th, warn, err := ParseThresholds("th", []byte("# c\n\nSymbolErrorCounter=10\n PortXmitWait = 0x10 \r\nVL15Dropped=010\nQP1Dropped=5\nSymbolErrorCounter=3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if th.Limit[pma.SymbolErrorCounter] != 3 || th.Limit[pma.PortXmitWait] != 16 || th.Limit[pma.VL15Dropped] != 8 {
		t.Errorf("limits %v", th.Limit)
	}
	if got := th.String(); got != "Thresholds: [SymbolErrorCounter = 10][PortXmitWait = 16][VL15Dropped = 8][SymbolErrorCounter = 3]" {
		t.Errorf("String %q", got)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], `th:6: unknown counter "QP1Dropped"`) {
		t.Errorf("warnings %q", warn)
	}
	var none Thresholds
	if none.String() != "(null)" {
		t.Errorf("no file: %q", none.String())
	}
	for in, want := range map[string]string{
		"SymbolErrorCounter\n":                 "th:1: want CounterName=value",
		"SymbolErrorCounter=\n":                "th:1: want CounterName=value",
		"\nPortRcvErrors=-1\n":                 "th:2: PortRcvErrors: bad value",
		"PortRcvErrors=99999999999999999999\n": "th:1: PortRcvErrors: bad value",
	} {
		_, _, err := ParseThresholds("th", []byte(in))
		var te *ThresholdError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, _, err := ParseThresholds("big", make([]byte, MaxThresholdFile+1)); err == nil {
		t.Error("oversized file accepted")
	}
}

func FuzzParseThresholds(f *testing.F) {
	f.Add([]byte("SymbolErrorCounter=10\n#x\nPortXmitWait=0x10\n"))
	f.Add([]byte("=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		th, _, err := ParseThresholds("f", b)
		if err != nil {
			var te *ThresholdError
			if !errors.As(err, &te) {
				t.Fatalf("error type %T", err)
			}
			return
		}
		_ = th.String()
	})
}

func TestHumanCount(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		f    string
		unit string
	}{{0, "0.000", ""}, {1023, "1023.000", ""}, {1024, "1.000", "K"}, {1536, "1.500", "K"}, {5 << 20, "5.000", "M"}, {1 << 62, "4.000", "E"}} {
		f, u := humanCount(tc.v)
		if got := strings.TrimSpace(fmt.Sprintf("%5.3f", f)); got != tc.f || u != tc.unit {
			t.Errorf("%d: %s%s, want %s%s", tc.v, got, u, tc.f, tc.unit)
		}
	}
}

// simFabric builds the net file with its SM run and discovers it.
func simFabric(t testing.TB, net string) (*sim.Fabric, transport.Transport, *model.Fabric) {
	t.Helper()
	nf, err := netfile.Parse("test.net", []byte(net))
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.New(nf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RunSM(""); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 4})
	if err != nil {
		t.Fatal(err)
	}
	return f, tr, res.Fabric
}

const testNet = `
Switch	4 "sw1"		# "sw1" enhanced port 0
[1]	"h1"[1]
[2]	"h2"[1]
[3]	"sw2"[1]

Switch	4 "sw2"		# "sw2" base port 0
[1]	"sw1"[3]
[2]	"h3"[1]

Ca	1 "h1"
[1]	"sw1"[1]

Ca	1 "h2"
[1]	"sw1"[2]

Ca	1 "h3"
[1]	"sw2"[2]

do PerformanceSet "sw1"[2] PortCounters.SymbolErrorCounter=4
do PerformanceSet "sw2"[2] PortCounters.PortXmitDiscards=2
do PerformanceSet "h3"[1] PortCounters.PortXmitWait=70000
`

// TestRenderGolden: ibqueryerrors' format and the JSON form.
func TestRenderGolden(t *testing.T) {
	_, tr, fab := simFabric(t, testNet)
	th, _, _ := ParseThresholds("th", []byte("PortXmitWait=100\n"))
	// One node at a time: the traffic counters read depend on the order.
	rep, err := Read(context.Background(), Config{Transport: tr, Outstanding: 1, Thresholds: th}, fab)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteIBQueryErrors(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/report.txt", b.Bytes())
	js, err := json.MarshalIndent(rep.JSON(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/report.json", append(js, '\n'))
}

// TestExt64Errors: where ClassPortInfo has the additional extended
// counters, the 64-bit values are judged and printed with their
// human-readable form, as ibqueryerrors does.
func TestExt64Errors(t *testing.T) {
	n := &model.Node{Info: smp.NodeInfo{NodeType: smp.NodeCA, NumPorts: 1, NodeGUID: 0x10, PortGUID: 0x11}}
	n.Desc.SetString("h")
	s := Sample{Port: 1, GUID: 0x11, Ext64: true}
	s.Errors[pma.SymbolErrorCounter] = 3 << 20
	s.Errors[pma.PortRcvErrors] = 5
	s.Over = true
	rep := &Report{Nodes: []NodeReport{{Node: n, Ports: []Sample{s}, PortsChecked: 1}}}
	var b bytes.Buffer
	WriteIBQueryErrors(&b, rep)
	want := "Errors for \"h\"\n   GUID 0x11 port 1: [SymbolErrorCounter == 3145728 (3.000M)] [PortRcvErrors == 5 (5.000)]\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("got\n%s\nwant prefix\n%s", b.String(), want)
	}
}

// windowTransport checks that no node ever has two MADs outstanding and
// that no more than max are on the wire.
type windowTransport struct {
	transport.Transport
	mu       sync.Mutex
	inFlight map[uint16]int
	total    int
	max      int
	peak     int
	err      error
}

func (w *windowTransport) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	w.mu.Lock()
	w.inFlight[dlid]++
	w.total++
	if w.inFlight[dlid] > 1 && w.err == nil {
		w.err = errors.New("two MADs outstanding to one LID")
	}
	if w.total > w.peak {
		w.peak = w.total
	}
	w.mu.Unlock()
	time.Sleep(50 * time.Microsecond) // let the others pile up
	err := w.Transport.Exchange(ctx, dlid, req, resp)
	w.mu.Lock()
	w.inFlight[dlid]--
	w.total--
	w.mu.Unlock()
	return err
}

func TestWindow(t *testing.T) {
	_, tr, fab := simFabric(t, testNet)
	for _, outstanding := range []int{1, 3} {
		w := &windowTransport{Transport: tr, inFlight: map[uint16]int{}}
		rep, err := Read(context.Background(), Config{Transport: w, Outstanding: outstanding, PerPort: true}, fab)
		if err != nil || w.err != nil || len(rep.Failures) != 0 {
			t.Fatalf("-o %d: %v %v %v", outstanding, err, w.err, rep.Failures)
		}
		if w.peak > outstanding {
			t.Errorf("-o %d: %d MADs outstanding at once", outstanding, w.peak)
		}
	}
}

// TestReadOnlyTransportRefusesClear: clearing through a read-only
// transport sends nothing and is reported.
func TestReadOnlyTransportRefusesClear(t *testing.T) {
	_, tr, fab := simFabric(t, testNet)
	rep, err := Read(context.Background(), Config{Transport: transport.ReadOnly(tr), Outstanding: 2, ClearErrors: true}, fab)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range rep.Nodes {
		if e := rep.Nodes[i].ClearErr; e != nil && errors.Is(e, transport.ErrReadOnly) {
			refused++
		}
	}
	if refused != len(rep.Nodes) {
		t.Errorf("%d of %d nodes refused", refused, len(rep.Nodes))
	}
	again, _ := Read(context.Background(), Config{Transport: tr, Outstanding: 2}, fab)
	if _, _, _, bad := again.Summary(); bad != 3 {
		t.Errorf("counters changed: %d bad ports", bad)
	}
}

// TestThresholdErrorsShown: a bad threshold line is shown quoted (no raw
// control character reaches the terminal) and bounded (a long line is
// cut, its length said), in errors and warnings alike.
func TestThresholdErrorsShown(t *testing.T) {
	long := strings.Repeat("A", 100000)
	for in, want := range map[string]string{
		"\x1b[2J\x07\n":                    `th:1: want CounterName=value, got "\x1b[2J\a"`,
		"Port\x1bRcv=1x\n":                 `th:1: "Port\x1bRcv": bad value "1x"`,
		long + "\n":                        `th:1: want CounterName=value, got "` + strings.Repeat("A", 80) + `"... (100000 bytes)`,
		"PortRcvErrors=" + long + "\n":     `th:1: PortRcvErrors: bad value "` + strings.Repeat("A", 80) + `"... (100000 bytes)`,
		"PortRcvErrors=\x1b]0;pwned\x07\n": `th:1: PortRcvErrors: bad value "\x1b]0;pwned\a"`,
	} {
		_, _, err := ParseThresholds("th", []byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("%.30q: err = %.200q, want %.200q", in, err, want)
		}
	}
	_, warn, err := ParseThresholds("th", []byte("\x1b[31m"+long+"=1\n"))
	if err != nil || len(warn) != 1 || len(warn[0]) > 200 || strings.ContainsRune(warn[0], 0x1b) {
		t.Errorf("warning %.300q (%v): want one, quoted and bounded", warn, err)
	}
}
