package fabric

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
	"github.com/ibfabric/ibdiag/pkg/umad"
)

// TestOpenErrors: every failure of Open can be told apart with errors.Is
// and errors.As, one sentinel at a time.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.net")
	if err := os.WriteFile(empty, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    Options
		goos string
		want error
		op   string // the SimError's Op, if one
	}{
		{"umad off Linux", Options{}, "darwin", ErrUmadLinuxOnly, ""},
		{"ibsim off Linux", Options{IBSim: true}, "windows", ErrIBSimLinuxOnly, ""},
		{"two transports", Options{Sim: "testdata/loop.net", IBSim: true}, "", ErrTwoTransports, ""},
		{"no InfiniBand device", Options{SysfsRoot: "../umad/testdata/empty/sys"}, "linux", umad.ErrNoInfiniBand, ""},
		{"missing net file", Options{Sim: filepath.Join(dir, "nosuch.net")}, "", fs.ErrNotExist, "load"},
		{"net file without nodes", Options{Sim: empty}, "", netfile.ErrNoNodes, "load"},
		{"not a net file", Options{Sim: "/etc/passwd"}, "", netfile.ErrNoNodes, "load"},
		{"too many nodes", Options{Sim: "fattree:levels=2,radix=8", MaxNodes: 10}, "", netfile.ErrTooManyNodes, "load"},
		{"bad generator", Options{Sim: "fattree:levels=9"}, "", netfile.ErrSpec, "load"},
		{"no such host", Options{Sim: "testdata/loop.net", Host: "nosuch"}, "", sim.ErrNoNode, "attach"},
		{"no such SM host", Options{Sim: "testdata/loop.net", Host: "nosuch", SimSM: true}, "", sim.ErrNoNode, "attach"}, // Host is looked up before the SM runs
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.goos != "" {
				defer func(g string) { goos = g }(goos)
				goos = c.goos
			}
			conn, err := Open(context.Background(), c.o)
			if conn != nil || !errors.Is(err, c.want) {
				t.Fatalf("Open: %v, %v; want nil, an error wrapping %q", conn, err, c.want)
			}
			var se *SimError
			if got := errors.As(err, &se); got != (c.op != "") || got && se.Op != c.op {
				t.Errorf("Open: %v: SimError %v (%+v), want Op %q", err, got, se, c.op)
			}
		})
	}
}

// TestOpenSim: the simulator is opened read-only unless Sets are asked
// for, the SM's warnings (380 hosts of 49,531 ports left without a LID)
// reach Warn, and Sim is the simulator behind it.
func TestOpenSim(t *testing.T) {
	set := make([]byte, 256)
	set[0], set[1], set[2], set[3] = 1, 0x81, 1, transport.MethodSet
	for _, allow := range []bool{false, true} {
		c, err := Open(context.Background(), Options{Sim: "testdata/loop.net", AllowSet: allow})
		if err != nil {
			t.Fatal(err)
		}
		if c.Sim == nil || c.Limits() != transport.LimitsOf(c.Transport) {
			t.Errorf("AllowSet %v: Sim %v", allow, c.Sim)
		}
		err = c.Exchange(context.Background(), 0xffff, set, make([]byte, 256))
		if got := errors.Is(err, transport.ErrReadOnly); got == allow {
			t.Errorf("AllowSet %v: a Set gave %v", allow, err)
		}
		c.Close()
	}
	var warned []string
	c, err := Open(context.Background(), Options{Sim: "fattree:levels=2,radix=254,hosts=253,leaves=195", SimSM: true, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(warned) != 1 || len(c.Warnings) != 1 || warned[0] != c.Warnings[0] {
		t.Errorf("warnings %q, Conn.Warnings %q: want the SM's one warning of LIDs run out", warned, c.Warnings)
	}
}

// TestOpenIBSim: Open reaches a running ibsim as libumad2sim would, at
// the node Host names.
func TestOpenIBSim(t *testing.T) {
	net, err := filepath.Abs("testdata/loop.net")
	if err != nil {
		t.Fatal(err)
	}
	s := ibsimtest.Start(t, net) // skips off Linux, as ibsim runs only there
	c, err := Open(context.Background(), Options{IBSim: true, IBSimSockName: s.SockName, Host: "h3"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := discover.Discover(context.Background(), c, discover.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fabric.Nodes) != 6 || res.Fabric.Nodes[0].Description() != "h3" {
		t.Errorf("%s: %d nodes from %q, want 6 from h3", c.Desc, len(res.Fabric.Nodes), res.Fabric.Nodes[0].Description())
	}
}
