package attach

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestUmadLinuxOnly: off Linux, no transport flag is one line saying the
// kernel transport is Linux-only and what to use instead; --sim works.
func TestUmadLinuxOnly(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "darwin"
	if _, err := Open(context.Background(), Settings{}); !errors.Is(err, ErrUmadLinuxOnly) {
		t.Errorf("Open without a transport off Linux: %v, want ErrUmadLinuxOnly", err)
	}
	f, err := Open(context.Background(), Settings{Sim: "../../testdata/fabrics/loop.net", SimSM: true})
	if err != nil {
		t.Fatalf("--sim off Linux: %v", err)
	}
	f.Close()
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
