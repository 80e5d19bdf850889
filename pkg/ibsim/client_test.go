//go:build linux

package ibsim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

const exampleNet = ibsimtest.ExampleNet + "/net.2sw2path4hca"

// ownNet exercises the NodeInfo-related net-file settings: vendid (next
// node only), devid (sticky), sysimgguid (next node only), explicit GUIDs,
// descriptions and a switch port-0 LID.
const ownNet = `# test fabric
vendid=0x2c9
devid=0xc738
sysimgguid=0xe41d2d030000abcd
switchguid=0xe41d2d0300001000
Switch 4 "S-e41d2d0300001000" # "sw-core" enhanced port 0 lid 7 lmc 0
[1] "H-0002c903000a1b2c"[1]
[2] "H-0002c903000a1b40"[1]
[3] "S-e41d2d0300002000"[3]

vendid=0x8f1
switchguid=0xe41d2d0300002000
Switch 4 "S-e41d2d0300002000" # "sw-edge"
[3] "S-e41d2d0300001000"[3]

vendid=0x2c9
caguid=0x0002c903000a1b2c
Ca 2 "H-0002c903000a1b2c" # "node01 HCA-1"
[1] "S-e41d2d0300001000"[1]

caguid=0x0002c903000a1b40
Ca 1 "H-0002c903000a1b40" # "node02 HCA-1"
[1] "S-e41d2d0300001000"[2]
`

// ---- a minimal net-file model, enough to predict NodeInfo/PortInfo ----

type netNode struct {
	id, desc       string
	typ            uint8
	ports          uint8
	guid, sysimg   uint64
	vendid, devid  uint32
	lid            uint16
	links          map[uint8][2]string // port -> remote id, remote port
	remotePortNums map[uint8]uint8
}

type netFile struct {
	first string
	nodes map[string]*netNode
}

var (
	reHeader = regexp.MustCompile(`^(Switch|Hca|Ca)\s+(\d+)\s+"([^"]+)"(.*)$`)
	rePort   = regexp.MustCompile(`^\[(\d+)\]\s*"([^"]+)"\[(\d+)\]`)
	reSet    = regexp.MustCompile(`^(vendid|devid|sysimgguid|switchguid|caguid)=(\S+)`)
	reDesc   = regexp.MustCompile(`#\s*"([^"]*)"`)
	reLID    = regexp.MustCompile(`\blid\s+(\d+)`)
)

func parseNet(t *testing.T, text string) *netFile {
	t.Helper()
	nf := &netFile{nodes: map[string]*netNode{}}
	swNext, caNext := uint64(0x200000), uint64(0x100000)
	var vendid, devid uint32
	var sysimg uint64
	var cur *netNode
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("net file number %q: %v", s, err)
		}
		return v
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := reSet.FindStringSubmatch(line); m != nil {
			v := num(m[2])
			switch m[1] {
			case "vendid":
				vendid = uint32(v)
			case "devid":
				devid = uint32(v)
			case "sysimgguid":
				sysimg = v
			case "switchguid":
				swNext = v
			case "caguid":
				caNext = v
			}
			continue
		}
		if m := reHeader.FindStringSubmatch(line); m != nil {
			n := &netNode{id: m[3], desc: m[3], ports: uint8(num(m[2])), links: map[uint8][2]string{}, remotePortNums: map[uint8]uint8{}}
			if m[1] == "Switch" {
				n.typ, n.guid = smp.NodeSwitch, swNext
				swNext++
			} else {
				n.typ, n.guid = smp.NodeCA, caNext
				caNext += uint64(n.ports) + 1
			}
			if d := reDesc.FindStringSubmatch(m[4]); d != nil {
				n.desc = d[1]
			}
			if l := reLID.FindStringSubmatch(m[4]); l != nil {
				n.lid = uint16(num(l[1]))
			}
			n.sysimg = n.guid
			if sysimg != 0 {
				n.sysimg = sysimg
			}
			n.vendid, n.devid = vendid, devid
			vendid, sysimg = 0, 0
			nf.nodes[n.id] = n
			if nf.first == "" {
				nf.first = n.id
			}
			cur = n
			continue
		}
		if m := rePort.FindStringSubmatch(line); m != nil && cur != nil {
			p := uint8(num(m[1]))
			cur.links[p] = [2]string{m[2], m[3]}
			cur.remotePortNums[p] = uint8(num(m[3]))
			continue
		}
		if line == "" {
			cur = nil
		}
	}
	return nf
}

// walk follows a DR path from the default attach point and returns the
// node reached and the port the SMP entered it through.
func (nf *netFile) walk(t *testing.T, path string) (*netNode, uint8) {
	t.Helper()
	p, err := smp.ParseDRPath(path)
	if err != nil {
		t.Fatal(err)
	}
	n := nf.nodes[nf.first]
	in := uint8(0)
	if n.typ == smp.NodeCA {
		in = 1
	}
	for i := 1; i <= int(p.Len()); i++ {
		out := p.Port(i)
		l, ok := n.links[out]
		if !ok {
			t.Fatalf("path %s: %s port %d not linked", path, n.id, out)
		}
		in = n.remotePortNums[out]
		n = nf.nodes[l[0]]
	}
	return n, in
}

// ---- helpers ----

func dial(t *testing.T, s *ibsimtest.Sim, host string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{SockName: s.SockName, Host: host})
	if err != nil {
		t.Fatalf("Dial: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends a DR SubnGet and returns the decoded response.
func get(ctx context.Context, c *Client, path string, attr uint16, mod uint32) (smp.MAD, error) {
	p, err := smp.ParseDRPath(path)
	if err != nil {
		return smp.MAD{}, err
	}
	m := smp.NewGet(p, attr, mod)
	req, err := m.MarshalBinary()
	if err != nil {
		return smp.MAD{}, err
	}
	resp := make([]byte, smp.MADSize)
	if err := c.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		return smp.MAD{}, err
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil {
		return r, err
	}
	if r.StatusCode() != 0 {
		return r, &smp.StatusError{Status: r.StatusCode()}
	}
	return r, nil
}

func mustGet(t *testing.T, c *Client, path string, attr uint16, mod uint32) smp.MAD {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := get(ctx, c, path, attr, mod)
	if err != nil {
		t.Fatalf("DR %s attr %#x mod %d: %v", path, attr, mod, err)
	}
	if !r.IsResponse() || !r.Returning() || r.AttrID != attr || r.Path() != mustPath(t, path) {
		t.Fatalf("DR %s: odd response %+v", path, r)
	}
	return r
}

func mustPath(t *testing.T, s string) smp.DRPath {
	p, err := smp.ParseDRPath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var reField = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9 ]*):\.{2,}(.*)$`)

// smpquery runs `smpquery -D args...` and returns its Name:....value lines.
func smpquery(t *testing.T, s *ibsimtest.Sim, host string, args ...string) map[string]string {
	t.Helper()
	out, errOut, exit := s.RunTool(t, host, "smpquery", append([]string{"-D"}, args...)...)
	if exit != 0 {
		t.Fatalf("smpquery %v: exit %d\n%s%s", args, exit, out, errOut)
	}
	f := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := reField.FindStringSubmatch(sc.Text()); m != nil {
			f[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if len(f) == 0 {
		t.Fatalf("smpquery %v printed no fields:\n%s", args, out)
	}
	return f
}

func nodeInfoFields(ni *smp.NodeInfo) map[string]string {
	typ := map[uint8]string{smp.NodeCA: "Channel Adapter", smp.NodeSwitch: "Switch", smp.NodeRouter: "Router"}[ni.NodeType]
	return map[string]string{
		"BaseVers":   strconv.Itoa(int(ni.BaseVersion)),
		"ClassVers":  strconv.Itoa(int(ni.ClassVersion)),
		"NodeType":   typ,
		"NumPorts":   strconv.Itoa(int(ni.NumPorts)),
		"SystemGuid": fmt.Sprintf("0x%016x", ni.SystemImageGUID),
		"Guid":       fmt.Sprintf("0x%016x", ni.NodeGUID),
		"PortGuid":   fmt.Sprintf("0x%016x", ni.PortGUID),
		"PartCap":    strconv.Itoa(int(ni.PartitionCap)),
		"DevId":      fmt.Sprintf("0x%04x", ni.DeviceID),
		"Revision":   fmt.Sprintf("0x%08x", ni.Revision),
		"LocalPort":  strconv.Itoa(int(ni.LocalPortNum)),
		"VendorId":   fmt.Sprintf("0x%06x", ni.VendorID),
	}
}

func maskNames(v uint8, names []string) string {
	var s []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return strings.Join(s, " or ")
}

func portInfoFields(p *smp.PortInfo) map[string]string {
	widths := []string{"1X", "4X", "8X", "12X", "2X"}
	speeds := []string{"2.5 Gbps", "5.0 Gbps", "10.0 Gbps"}
	state := []string{"NoChange", "Down", "Initialize", "Armed", "Active"}
	phys := []string{"NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}
	mtu := map[uint8]string{1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}
	vls := map[uint8]string{1: "VL0", 2: "VL0-1", 3: "VL0-3", 4: "VL0-7", 5: "VL0-14"}
	d := func(v any) string { return fmt.Sprint(v) }
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	f := map[string]string{
		"GidPrefix":                       fmt.Sprintf("0x%016x", p.GIDPrefix),
		"Lid":                             d(p.LID),
		"SMLid":                           d(p.MasterSMLID),
		"CapMask":                         fmt.Sprintf("0x%x", p.CapabilityMask),
		"DiagCode":                        fmt.Sprintf("0x%04x", p.DiagCode),
		"MkeyLeasePeriod":                 d(p.MKeyLeasePeriod),
		"LocalPort":                       d(p.LocalPortNum),
		"LinkWidthEnabled":                maskNames(p.LinkWidthEnabled, widths),
		"LinkWidthSupported":              maskNames(p.LinkWidthSupported, widths),
		"LinkWidthActive":                 maskNames(p.LinkWidthActive, widths),
		"LinkSpeedSupported":              maskNames(p.LinkSpeedSupported, speeds),
		"LinkSpeedActive":                 maskNames(p.LinkSpeedActive, speeds),
		"LinkSpeedEnabled":                maskNames(p.LinkSpeedEnabled, speeds),
		"LinkState":                       state[p.PortState%5],
		"PhysLinkState":                   phys[p.PortPhysicalState%8],
		"LinkDownDefState":                phys[p.LinkDownDefaultState%8],
		"ProtectBits":                     d(p.MKeyProtectBits),
		"LMC":                             d(p.LMC),
		"NeighborMTU":                     mtu[p.NeighborMTU],
		"MtuCap":                          mtu[p.MTUCap],
		"SMSL":                            d(p.MasterSMSL),
		"VLCap":                           vls[p.VLCap],
		"OperVLs":                         vls[p.OperationalVLs],
		"InitType":                        fmt.Sprintf("0x%02x", p.InitType),
		"InitReply":                       fmt.Sprintf("0x%02x", p.InitTypeReply),
		"VLHighLimit":                     d(p.VLHighLimit),
		"VLArbHighCap":                    d(p.VLArbitrationHighCap),
		"VLArbLowCap":                     d(p.VLArbitrationLowCap),
		"VLStallCount":                    d(p.VLStallCount),
		"HoqLife":                         d(p.HOQLife),
		"PartEnforceInb":                  b(p.PartEnforceInbound),
		"PartEnforceOutb":                 b(p.PartEnforceOutbound),
		"FilterRawInb":                    b(p.FilterRawInbound),
		"FilterRawOutb":                   b(p.FilterRawOutbound),
		"MkeyViolations":                  d(p.MKeyViolations),
		"PkeyViolations":                  d(p.PKeyViolations),
		"QkeyViolations":                  d(p.QKeyViolations),
		"GuidCap":                         d(p.GUIDCap),
		"ClientReregister":                b(p.ClientReregister),
		"McastPkeyTrapSuppressionEnabled": d(p.McastPKeyTrapSuppress),
		"SubnetTimeout":                   d(p.SubnetTimeOut),
		"RespTimeVal":                     d(p.RespTimeValue),
		"LocalPhysErr":                    d(p.LocalPhyErrors),
		"OverrunErr":                      d(p.OverrunErrors),
		"MaxCreditHint":                   d(p.MaxCreditHint),
		"RoundTrip":                       d(p.LinkRoundTripLatency),
		"CapabilityMask2":                 fmt.Sprintf("0x%x", p.CapabilityMask2),
		"LinkSpeedExtSupported":           d(p.LinkSpeedExtSupported),
		"LinkSpeedExtEnabled":             d(p.LinkSpeedExtEnabled),
	}
	if p.LinkSpeedExtActive == 0 {
		f["LinkSpeedExtActive"] = "No Extended Speed"
	}
	return f
}

// compareFields checks every field smpquery printed that we can format.
func compareFields(t *testing.T, what string, ours, theirs map[string]string) {
	t.Helper()
	n := 0
	for k, v := range theirs {
		o, ok := ours[k]
		if !ok {
			continue
		}
		n++
		if o != v {
			t.Errorf("%s %s: client %q, smpquery %q", what, k, o, v)
		}
	}
	if n < len(theirs)/2 {
		t.Errorf("%s: only %d of %d smpquery fields compared", what, n, len(theirs))
	}
}

// ---- tests ----

func checkFabric(t *testing.T, netPath, text string, paths []string) {
	s := ibsimtest.Start(t, netPath)
	nf := parseNet(t, text)
	c := dial(t, s, "")
	if c.AttachedNode() != nf.first {
		t.Fatalf("attached to %q, want the first node %q", c.AttachedNode(), nf.first)
	}
	if c.Slot() != 0 || c.ID() == 0 || c.ID() > 1<<31-1 {
		t.Fatalf("slot %d id %d", c.Slot(), c.ID())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := nf.nodes[nf.first]
	if g, err := c.GUID(ctx); err != nil || g != first.guid {
		t.Errorf("GET_GUID %#x %v, want %#x", g, err, first.guid)
	}
	if ni, err := c.NodeInfo(ctx); err != nil || ni.NodeGUID != first.guid || ni.NodeType != first.typ || ni.NumPorts != first.ports {
		t.Errorf("GET_NODEINFO %+v %v", ni, err)
	}
	if v, err := c.Vendor(ctx); err != nil || v.VendorID != first.vendid || v.PartID != first.devid || v.HWVer != 0xa1 || v.FWVer != 1 {
		t.Errorf("GET_VENDOR %+v %v", v, err)
	}
	if p, err := c.Port(ctx); err != nil || p.LID != first.lid || (first.typ == smp.NodeSwitch && p.State != 4) {
		t.Errorf("GET_PORT %+v %v", p, err)
	}
	if k, err := c.PKeys(ctx); err != nil || k[0] != 0xffff || k[1] != 0 {
		t.Errorf("GET_PKEYS %x %v", k[:2], err)
	}
	if g, err := c.GID(ctx); err != nil || le.Uint64(g[8:]) != first.guid {
		t.Errorf("GET_GID %x %v", g, err)
	}
	if pi, err := c.PortInfo(ctx, 0); err != nil || pi.LID != first.lid {
		t.Errorf("GET_PORTINFO %+v %v", pi, err)
	}

	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			want, in := nf.walk(t, path)

			var ni smp.NodeInfo
			r := mustGet(t, c, path, smp.AttrNodeInfo, 0)
			if err := ni.UnmarshalBinary(r.Data[:]); err != nil {
				t.Fatal(err)
			}
			portGUID := want.guid
			if want.typ == smp.NodeCA {
				portGUID += uint64(in)
			}
			if ni.NodeType != want.typ || ni.NumPorts != want.ports || ni.NodeGUID != want.guid ||
				ni.PortGUID != portGUID || ni.SystemImageGUID != want.sysimg || ni.LocalPortNum != in ||
				ni.VendorID != want.vendid || uint32(ni.DeviceID) != want.devid || ni.BaseVersion != 1 {
				t.Errorf("NodeInfo %+v\nnet file: %+v ingress %d", ni, want, in)
			}
			compareFields(t, "nodeinfo", nodeInfoFields(&ni), smpquery(t, s, "", "nodeinfo", path))

			var nd smp.NodeDescription
			r = mustGet(t, c, path, smp.AttrNodeDescription, 0)
			nd.UnmarshalBinary(r.Data[:])
			if nd.String() != want.desc {
				t.Errorf("NodeDescription %q, want %q", nd.String(), want.desc)
			}
			if q := smpquery(t, s, "", "nodedesc", path)["Node Description"]; q != nd.String() {
				t.Errorf("NodeDescription %q, smpquery %q", nd.String(), q)
			}

			// PortInfo of the ingress port (modifier 0 means the same on
			// a CA and port 0 on a switch) and of every port of a switch.
			ports := []uint8{in}
			if want.typ == smp.NodeSwitch {
				ports = ports[:0]
				for p := uint8(0); p <= want.ports; p++ {
					ports = append(ports, p)
				}
			}
			for _, port := range ports {
				var pi smp.PortInfo
				r := mustGet(t, c, path, smp.AttrPortInfo, uint32(port))
				if err := pi.UnmarshalBinary(r.Data[:]); err != nil {
					t.Fatal(err)
				}
				_, linked := want.links[port]
				wantState, wantPhys := uint8(1), uint8(2) // Down, Polling
				switch {
				case want.typ == smp.NodeSwitch && port == 0:
					wantState, wantPhys = 4, 5 // port 0 is always Active
				case linked:
					wantState, wantPhys = 2, 5 // Init, LinkUp: no SM yet
				}
				wantLID := uint16(0)
				if port == 0 || want.typ == smp.NodeCA {
					wantLID = want.lid
				}
				if pi.PortState != wantState || pi.PortPhysicalState != wantPhys || pi.LID != wantLID || pi.MasterSMLID != 0 {
					t.Errorf("port %d: state %d phys %d lid %d smlid %d, want %d %d %d 0",
						port, pi.PortState, pi.PortPhysicalState, pi.LID, pi.MasterSMLID, wantState, wantPhys, wantLID)
				}
				if want.typ == smp.NodeCA && pi.LocalPortNum != in {
					t.Errorf("CA LocalPortNum %d, want %d", pi.LocalPortNum, in)
				}
				compareFields(t, fmt.Sprintf("portinfo %d", port), portInfoFields(&pi),
					smpquery(t, s, "", "portinfo", path, strconv.Itoa(int(port))))
			}
		})
	}
}

func TestExampleFabric(t *testing.T) {
	text, err := os.ReadFile(exampleNet)
	if err != nil {
		ibsimtest.Require(t)
		t.Fatal(err)
	}
	checkFabric(t, exampleNet, string(text), []string{"0", "0,1", "0,2", "0,3", "0,3,1", "0,3,2", "0,5,2"})
}

func TestOwnFabric(t *testing.T) {
	ibsimtest.Require(t)
	checkFabric(t, ibsimtest.WriteNetFile(t, ownNet), ownNet, []string{"0", "0,1", "0,2", "0,3"})
}

// The NodeInfo of a CA attachment: the client can attach by node id.
func TestAttachHost(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	c := dial(t, s, "Hca4")
	if c.AttachedNode() != "Hca4" {
		t.Fatalf("attached to %q", c.AttachedNode())
	}
	var ni smp.NodeInfo
	r := mustGet(t, c, "0", smp.AttrNodeInfo, 0)
	ni.UnmarshalBinary(r.Data[:])
	if ni.NodeGUID != 0x100009 || ni.PortGUID != 0x10000a || ni.LocalPortNum != 1 {
		t.Fatalf("local NodeInfo %+v", ni)
	}
	// Unknown nodes are refused and ibsim survives.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, Config{SockName: s.SockName, Host: "NoSuchNode"})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("unknown node: %v", err)
	}
	if _, err := Dial(ctx, Config{SockName: s.SockName, Host: strings.Repeat("x", 32)}); !errors.Is(err, ErrNodeID) {
		t.Fatalf("long node id: %v", err)
	}
	mustGet(t, c, "0,1", smp.AttrNodeInfo, 0)
	if !s.Alive() {
		t.Fatal("ibsim died")
	}
}

func TestStatus110IsTimeout(t *testing.T) {
	ibsimtest.Require(t)
	text, err := os.ReadFile(exampleNet)
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, ibsimtest.WriteNetFile(t, string(text)+"\ndo Error \"Hca3\" 100\n"))
	c := dial(t, s, "")
	tests := []struct{ name, path string }{
		{"dropped by Error 100", "0,2"},
		{"unlinked port", "0,4"},
		{"through a CA", "0,1,1"},
	}
	for _, tt := range tests {
		// Status 110 is an answer: the Exchange ends with it, not with
		// its hour-long deadline (a minute without an answer means it
		// waited for the deadline; no wall-clock bound on "immediate").
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		done := make(chan error, 1)
		go func() {
			_, err := get(ctx, c, tt.path, smp.AttrNodeInfo, 0)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: no status 110 within a minute; it should end the Exchange", tt.name)
		}
		cancel()
		var op *transport.OpError
		if !errors.Is(err, transport.ErrTimeout) || !errors.As(err, &op) {
			t.Errorf("%s (%s): %v, want ErrTimeout in *OpError", tt.name, tt.path, err)
		}
	}
	// The client is still fine.
	mustGet(t, c, "0,1", smp.AttrNodeInfo, 0)
}

// A request ibsim drops without an answer (hop pointer != 0) times out by
// the ctx deadline, or by Config.Timeout when ctx has none.
func TestNoAnswerTimeout(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, Config{SockName: s.SockName, Timeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := badHopPointer(t)
	resp := make([]byte, smp.MADSize)
	within := func(what string, c *Client, ctx context.Context) error { return exchangeEnds(t, what, c, ctx, req) }

	// Without a ctx deadline, Config.Timeout ends the wait (not before,
	// and not a deadlineMargin after).
	start := time.Now()
	err = endsBy(t, "no deadline", start.Add(150*time.Millisecond), func() error {
		return within("no deadline", c, context.Background())
	})
	if el := time.Since(start); !errors.Is(err, transport.ErrTimeout) || el < 150*time.Millisecond {
		t.Fatalf("no deadline: %v after %v", err, el)
	}
	// A ctx deadline ends it, also when Config.Timeout is an hour.
	long, err := Dial(ctx, Config{SockName: s.SockName, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	dl, _ := dctx.Deadline()
	if err := endsBy(t, "ctx deadline", dl, func() error { return within("ctx deadline", long, dctx) }); !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("ctx deadline: %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := c.Exchange(cctx, smp.PermissiveLID, req, resp); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	if err := c.Exchange(ctx, smp.PermissiveLID, req[:100], resp); !errors.Is(err, ErrShort) {
		t.Fatalf("short req: %v", err)
	}
	c.mu.Lock()
	n := c.pending.len()
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls left pending", n)
	}
}

// deadlineMargin is how late after its deadline a wait may end: generous
// for a busy machine (the janitor's period is 5 ms), and short enough
// that a deadline enforced a second late fails.
const deadlineMargin = 500 * time.Millisecond

// endsBy runs fn and returns its error; it fails the test when fn is
// still running deadlineMargin after deadline. The bound is a timer
// armed when fn starts, an event on the same clock and scheduler as the
// deadline fn should keep, so a slow machine delays both.
func endsBy(t *testing.T, what string, deadline time.Time, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	late := time.NewTimer(time.Until(deadline) + deadlineMargin)
	defer late.Stop()
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-late.C:
		t.Fatalf("%s: still waiting %v after its deadline", what, deadlineMargin)
		return nil
	}
}

// exchangeEnds runs one Exchange of req on c and returns how it ended; a
// minute without its end is a hang (the bound it should have kept was
// ignored), a failure naming what. No upper bound on time is asserted.
func exchangeEnds(t *testing.T, what string, c *Client, ctx context.Context, req []byte) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Exchange(ctx, smp.PermissiveLID, req, make([]byte, smp.MADSize)) }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: no end within a minute", what)
		return nil
	}
}

// badHopPointer is a DR NodeInfo Get with hop pointer 1, which ibsim
// silently drops.
func badHopPointer(t *testing.T) []byte {
	m := smp.NewGet(mustPath(t, "0,1"), smp.AttrNodeInfo, 0)
	m.HopPointer = 1
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPipelined(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	c := dial(t, s, "")
	paths := map[string]uint64{"0": 0x200000, "0,1": 0x100000, "0,2": 0x100006, "0,3": 0x200001, "0,3,1": 0x100003, "0,3,2": 0x100009}
	var keys []string
	for k := range paths {
		keys = append(keys, k)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			<-start
			r, err := get(ctx, c, path, smp.AttrNodeInfo, 0)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", path, err)
				return
			}
			var ni smp.NodeInfo
			ni.UnmarshalBinary(r.Data[:])
			if ni.NodeGUID != paths[path] || r.Path() != mustPath(t, path) {
				errs <- fmt.Errorf("%s: GUID %#x path %v", path, ni.NodeGUID, r.Path())
			}
		}(keys[i%len(keys)])
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCloseDuringExchange(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	c := dial(t, s, "")
	req := badHopPointer(t)
	const n = 5
	errs := make(chan error, n)
	sent := make(chan struct{}, n)
	testHookSent = func() { sent <- struct{}{} }
	defer func() { testHookSent = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for range n {
		go func() {
			errs <- c.Exchange(ctx, smp.PermissiveLID, req, make([]byte, smp.MADSize))
		}()
	}
	// Wait until all n are written and waiting (a minute is a hang).
	for i := range n {
		select {
		case <-sent:
		case err := <-errs:
			t.Fatalf("exchange %d ended before Close: %v", i, err)
		case <-time.After(time.Minute):
			t.Fatalf("only %d of %d exchanges in flight after a minute", i, n)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Their ctx allows an hour: only Close can end them.
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, transport.ErrClosed) {
				t.Errorf("in-flight Exchange: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("in-flight Exchange did not return after Close")
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Exchange(ctx, smp.PermissiveLID, req, make([]byte, smp.MADSize)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Exchange after Close: %v", err)
	}
	if _, err := c.GUID(ctx); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("GUID after Close: %v", err)
	}
	// The slot was released.
	d := dial(t, s, "")
	if d.Slot() != c.Slot() {
		t.Errorf("new client got slot %d, want the released %d", d.Slot(), c.Slot())
	}
}

func TestSlotsReleased(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 12 {
		c, err := Dial(ctx, Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if _, err := get(ctx, c, "0,1", smp.AttrNodeInfo, 0); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slots still attached:\n%s", out)
	}

	// Fill all 10 slots: the 11th is refused, and Close frees them again.
	var cs []*Client
	for i := range MaxClients {
		c, err := Dial(ctx, Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		cs = append(cs, c)
	}
	if out := s.Console(t, "Attached"); strings.Count(out, "Client ") != MaxClients {
		t.Fatalf("Attached:\n%s", out)
	}
	if _, err := Dial(ctx, Config{SockName: s.SockName}); !errors.Is(err, ErrRefused) {
		t.Fatalf("11th client: %v", err)
	}
	for _, c := range cs {
		c.Close()
	}
	c := dial(t, s, "")
	mustGet(t, c, "0", smp.AttrNodeInfo, 0)
}

// With nothing listening, Dial fails at once, naming the socket and how
// to start ibsim, whatever its ctx allows.
func TestDialNoSimulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("nosuchsim%d", os.Getpid())
	_, err := Dial(ctx, Config{SockName: name})
	if !errors.Is(err, ErrNotRunning) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Dial: %v", err)
	}
	for _, want := range []string{"@" + name + ":ctl", "ibsim -s NETFILE", "IBSIM_SOCKNAME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("Dial waited for its ctx")
	}
}

// Dial keeps retrying until ibsim comes up.
func TestDialWaitsForSimulator(t *testing.T) {
	ibsimtest.Require(t)
	name := fmt.Sprintf("late%d", os.Getpid())
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, Config{SockName: name, WaitStart: 10 * time.Second})
		done <- result{c, err}
	}()
	time.Sleep(300 * time.Millisecond)
	cmd := exec.Command("ibsim", "-s", "-n", exampleNet)
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+name)
	cmd.SysProcAttr = ibsimtest.ProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("Dial: %v", r.err)
	}
	defer r.c.Close()
	mustGet(t, r.c, "0,1", smp.AttrNodeInfo, 0)
}

// A client process stopped by SIGINT closes its client and so releases
// its slot: more than 10 fresh connections succeed afterwards.
func TestSIGINTReleasesSlot(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	bin := filepath.Join(t.TempDir(), "sigclient")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./internal/sigclient").CombinedOutput(); err != nil {
		t.Fatalf("build sigclient: %v\n%s", err, out)
	}
	for round := range 3 {
		cmd := exec.Command(bin)
		cmd.Env = s.Env()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("sigclient did not get ready: %q %s", sc.Text(), stderr.String())
		}
		if out := s.Console(t, "Attached"); !strings.Contains(out, "Client ") {
			t.Errorf("round %d: sigclient not attached:\n%s", round, out)
		}
		// Mid-run: signal once the first Exchange is done (a fixed
		// sleep could come before it: "closed 0").
		if !sc.Scan() || sc.Text() != "exchanging" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: sigclient did not start exchanging: %q %s", round, sc.Text(), stderr.String())
		}
		cmd.Process.Signal(os.Interrupt)
		var last string
		for sc.Scan() {
			last = sc.Text()
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("round %d: sigclient: %v\n%s", round, err, stderr.String())
		}
		if !strings.HasPrefix(last, "closed ") || last == "closed 0" {
			t.Fatalf("round %d: sigclient said %q", round, last)
		}
	}
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client ") {
		t.Fatalf("slots leaked:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range MaxClients + 2 {
		c, err := Dial(ctx, Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("fresh connection %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}

func BenchmarkExchange(b *testing.B) {
	ibsimtest.Require(b)
	s := ibsimtest.Start(b, exampleNet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, Config{SockName: s.SockName})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, _ := smp.ParseDRPath("0,3,1")
	m := smp.NewGet(p, smp.AttrNodeInfo, 0)
	req, _ := m.MarshalBinary()
	resp := make([]byte, smp.MADSize)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// Inet (UDP) mode. `ibsim -r` binds its UDP ports on all interfaces, but
// the only traffic is on loopback: the client talks to 127.0.0.1 and ibsim
// answers the address the CONNECT came from.
func TestInetMode(t *testing.T) {
	ibsimtest.Require(t)
	port := 20000 + os.Getpid()%20000
	cmd := exec.Command("ibsim", "-s", "-n", "-r", "-l", strconv.Itoa(port), exampleNet)
	cmd.SysProcAttr = ibsimtest.ProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{ServerName: "127.0.0.1", ServerPort: uint16(port), Host: "Hca2", WaitStart: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.AttachedNode() != "Hca2" {
		t.Fatalf("attached to %q", c.AttachedNode())
	}
	var ni smp.NodeInfo
	r := mustGet(t, c, "0,1", smp.AttrNodeInfo, 0)
	ni.UnmarshalBinary(r.Data[:])
	if ni.NodeGUID != 0x200001 {
		t.Fatalf("NodeInfo %+v", ni)
	}
	if g, err := c.GUID(ctx); err != nil || g != 0x100003 {
		t.Fatalf("GUID %#x %v", g, err)
	}
}

// TestLimits checks what Limits promises: the deadline holds without a
// Done channel behind it, a ctx cancelled while its SMP is in flight ends
// the Exchange (the janitor sees it; there is no select on ctx), and the
// window is what the default socket buffers carry (ibsim's connected
// sockets are not bound by net.unix.max_dgram_qlen).
func TestLimits(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, Config{SockName: s.SockName, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lim := c.Limits()
	if !lim.Deadline || lim.Window < 64 || !lim.Queues {
		t.Errorf("Limits %+v: want Deadline, Queues and a window of at least 64", lim)
	}
	// Queues: ibsim answers every SMP however many one node has at once
	// (the node one hop away: its NodeInfo and NodeDescription).
	var wg sync.WaitGroup
	errs := make(chan error, 2*lim.Window)
	for i := 0; i < lim.Window; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			attr := uint16(smp.AttrNodeInfo)
			if i%2 == 1 {
				attr = smp.AttrNodeDescription
			}
			r, err := get(ctx, c, "0,1", attr, 0)
			if err == nil && r.AttrID != attr {
				err = fmt.Errorf("asked attr %#x, answered %#x", attr, r.AttrID)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("%d SMPs to one switch at once: %v", lim.Window, err)
		}
	}
	if got := transport.LimitsOf(transport.ReadOnly(c)); got != lim {
		t.Errorf("through ReadOnly: %+v", got)
	}
	req := badHopPointer(t) // never answered
	end := func(what string, ctx context.Context) error { return exchangeEnds(t, what, c, ctx, req) }
	dl := time.Now().Add(30 * time.Millisecond)
	if err := end("deadline without Done", deadlineOnly{Context: context.Background(), d: dl}); !errors.Is(err, transport.ErrTimeout) || time.Now().Before(dl) {
		t.Errorf("deadline without Done: %v", err)
	}
	// cancel once the request is written and its call pending
	cctx, ccancel := context.WithCancel(context.Background())
	testHookSent = ccancel
	defer func() { testHookSent = nil }()
	if err := end("cancelled in flight", cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled in flight: %v", err)
	}
	testHookSent = nil
	c.mu.Lock()
	n := c.pending.len()
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}

// calls keeps a call whose ring slot is taken in its map, and finds,
// removes and lists calls from both.
func TestCallsRing(t *testing.T) {
	var cs calls
	a, b, c := newCall(), newCall(), newCall()
	cs.put(5, a)
	cs.put(5+ringSize, b) // same slot
	cs.put(6, c)
	if cs.get(5) != a || cs.get(5+ringSize) != b || cs.get(6) != c || cs.get(7) != nil || cs.get(5+2*ringSize) != nil || cs.len() != 3 {
		t.Fatal("lookup")
	}
	seen := map[uint32]*call{}
	cs.each(func(lo uint32, cl *call) { seen[lo] = cl; cs.del(lo, cl) })
	if len(seen) != 3 || seen[5] != a || seen[5+ringSize] != b || seen[6] != c || cs.len() != 0 || cs.get(5) != nil || cs.get(5+ringSize) != nil {
		t.Fatalf("each/del: %v, %d left", seen, cs.len())
	}
	cs.put(5+ringSize, b)
	if cs.get(5) != nil || cs.get(5+ringSize) != b {
		t.Fatal("slot reused")
	}
	// calls spread over the whole ring, the latest TID wrapping around
	// zero, are all seen
	var ds calls
	tids := []uint32{1<<32 - 700, 1<<32 - 3, 2, 300}
	for _, lo := range tids {
		ds.put(lo, newCall())
	}
	n := 0
	ds.each(func(lo uint32, cl *call) { n++; ds.del(lo, cl) })
	if n != len(tids) || ds.len() != 0 {
		t.Fatalf("each saw %d of %d calls, %d left", n, len(tids), ds.len())
	}
}
