package attach

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/fabric"
)

// TestUmadLinuxOnly: off Linux, no transport flag is one line saying the
// kernel transport is Linux-only and what to use instead (fabric.Open's
// own refusal is tested in pkg/fabric).
func TestUmadLinuxOnly(t *testing.T) {
	for _, c := range []struct{ lib, want error }{
		{fabric.ErrUmadLinuxOnly, ErrUmadLinuxOnly},
		{fabric.ErrIBSimLinuxOnly, ErrIBSimLinuxOnly},
	} {
		if err := cliError(c.lib, Settings{}); err != c.want {
			t.Errorf("cliError(%v) = %v, want %v", c.lib, err, c.want)
		}
	}
}

// TestOpenSimErrors: the embedded simulator's failures name the flag at
// fault, as before the opening moved to pkg/fabric.
func TestOpenSimErrors(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{Sim: "/nonexistent.net"}, "--sim /nonexistent.net: no such file or directory"},
		{Settings{Sim: "fattree:levels=2,radix=8", MaxNodes: 3}, "--sim: too many nodes: \"fattree:levels=2,radix=8\" has 44 nodes, more than the limit of 3; --max-nodes raises the limit"},
		{Settings{Sim: "../../testdata/fabrics/loop.net", SimHost: "nosuch"}, "--sim-host nosuch: no node has this id, description, node GUID or port GUID"},
		{Settings{Sim: "../../testdata/fabrics/loop.net", SimHost: "nosuch", SimSM: true}, "--sim-host nosuch: "},
	} {
		_, err := Open(context.Background(), c.s)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Open(%+v): %v, want a UsageError %q...", c.s, err, c.want)
		}
	}
}

// TestDiagConfig: ibdiag.conf's keys, comments and blank lines, unknown
// keys ignored; errors name file and line.
func TestDiagConfig(t *testing.T) {
	c, err := parseDiagConfig("x.conf", stringsReader("# c\n\nCA=mlx5_0\nPort = 2\ntimeout=0x32\nMLX_EPI=false\nm_key=0x10\nsa_key=7\nnd_format=%s\nfuture=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.CA != "mlx5_0" || c.Port != 2 || c.Timeout != 50 || c.MLXEPI == nil || *c.MLXEPI || *c.MKey != 0x10 || *c.SAKey != 7 || c.NDFormat != "%s" {
		t.Errorf("got %+v", c)
	}
	for _, bad := range []struct{ in, want string }{
		{"Port=0\n", `x.conf:1: Port "0": want a port number 1..254`},
		{"#\ntimeout=-1\n", `x.conf:2: timeout "-1": want milliseconds 1..600000`},
		{"m_key=key\n", `x.conf:1: m_key "key": want a 64-bit number`},
		{"CA\n", `x.conf:1: "CA": not name=value`},
	} {
		_, err := parseDiagConfig("x.conf", stringsReader(bad.in))
		var ue *UsageError
		if !errors.As(err, &ue) || err.Error() != bad.want {
			t.Errorf("%q: %v, want %s", bad.in, err, bad.want)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
