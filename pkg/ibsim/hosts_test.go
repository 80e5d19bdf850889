//go:build linux

package ibsim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerIP: IBSIM_SERVER_NAME is a dotted IPv4 address or a name the
// hosts table gives one (first match, any case, comments and IPv6 lines
// skipped); anything else is one error naming it.
func TestServerIP(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("# comment simhost\n127.0.0.1\tlocalhost\n::1 ip6-localhost simhost\n10.1.2.3 simhost sim.example # trailing simbox\n10.9.9.9 SimHost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(p string) { hostsFile = p }(hostsFile)
	hostsFile = hosts
	for _, tt := range []struct {
		name string
		want [4]byte
		err  string
	}{
		{"192.168.7.9", [4]byte{192, 168, 7, 9}, ""},
		{"::ffff:10.0.0.1", [4]byte{10, 0, 0, 1}, ""},
		{"localhost", [4]byte{127, 0, 0, 1}, ""},
		{"simhost", [4]byte{10, 1, 2, 3}, ""},
		{"SIM.example", [4]byte{10, 1, 2, 3}, ""},
		{"simbox", [4]byte{}, `"simbox" is neither an IPv4 address nor a name`},
		{"ip6-localhost", [4]byte{}, "neither an IPv4 address"},
		{"::1", [4]byte{}, "neither an IPv4 address"},
	} {
		c := newClient(Config{ServerName: tt.name, ServerPort: DefaultServerPort})
		got, err := c.serverIP(context.Background())
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
