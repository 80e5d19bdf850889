package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// dualCANet: a two-port CA "dual" between sw1 (port 1) and sw2 (port
// 2); sw3 joins sw1 and sw2 the long way; hA hangs off sw1, hB off sw2.
const dualCANet = `Hca 1 "hA"	# "hA"
[1] "sw1"[1]

Switch 4 "sw1"	# "sw1"
[1] "hA"[1]
[2] "dual"[1]
[3] "sw3"[1]

Hca 2 "dual"	# "dual"
[1] "sw1"[2]
[2] "sw2"[1]

Switch 4 "sw2"	# "sw2"
[1] "dual"[2]
[2] "hB"[1]
[3] "sw3"[2]

Switch 4 "sw3"	# "sw3"
[1] "sw1"[3]
[2] "sw2"[3]

Hca 1 "hB"	# "hB"
[1] "sw2"[2]
`

// TestHopsFromMultiPortCA: -hops N -from PATH where PATH ends at a
// two-port CA leaves the CA only by the port PATH enters (as libibnetdisc
// does from a CA start node), so hops count through that port: sw2, one
// hop away through the CA's other port, is three hops away through sw1
// and sw3 and is found only with -hops 3.
func TestHopsFromMultiPortCA(t *testing.T) {
	net := clitest.WriteFile(t, t.TempDir(), "dualca.net", dualCANet)
	for _, tt := range []struct {
		hops string
		want string
	}{
		{"0", "dual"},
		{"1", "dual sw1"},
		{"2", "dual hA sw1 sw3"},
		{"3", "dual hA sw1 sw2 sw3"},
		{"4", "dual hA hB sw1 sw2 sw3"},
	} {
		out, stderr, code := runOurs(t, "--sim", net, "-hops", tt.hops, "-from", "0,1,2", "--json")
		if code != 0 {
			t.Fatalf("-hops %s: exit %d: %s", tt.hops, code, stderr)
		}
		var doc struct {
			Nodes []struct {
				Description string `json:"description"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range doc.Nodes {
			got = append(got, n.Description)
		}
		sort.Strings(got)
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("-hops %s -from 0,1,2 (the CA's port 1): nodes %s, want %s", tt.hops, g, tt.want)
		}
	}
}
