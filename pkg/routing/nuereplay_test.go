package routing_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// TestReplayNue replays nue on a fabric (testdata/nue-impasse.net, seed 8
// of cmd/ibhops's random fabrics) on which OpenSM 3.3.23's nue backtracked
// for 16 destinations and fell back to its escape paths for 3 (LIDs 34,
// 52, 64), and compares every row of the opensm-lid-matrix.dump opensm -R
// nue wrote there (testdata/nue-impasse.opensm-lid-matrix.dump) with the
// replay: the port nue programs holds the count nue recorded, every other
// port none. (The live comparison, with the forwarding tables read from
// ibsim, is cmd/ibhops's TestCompatNueDumpRandom.)
func TestReplayNue(t *testing.T) {
	dump, err := os.ReadFile("testdata/nue-impasse.opensm-lid-matrix.dump")
	if err != nil {
		t.Fatal(err)
	}
	f := loadWithLIDs(t, "testdata/nue-impasse.net", string(dump))
	lft, hops, err := routing.ReplayNue(f)
	if err != nil {
		t.Fatal(err)
	}
	var sw *model.Node
	rows, routeLength := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(dump)), "\n") {
		if g, ok := strings.CutPrefix(line, "Switch: guid "); ok {
			guid, err := strconv.ParseUint(g, 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			if sw = f.NodeByGUID(guid); sw == nil {
				t.Fatalf("no switch %s", g)
			}
			continue
		}
		l, rest, _ := strings.Cut(line, ":")
		lid64, err := strconv.ParseUint(l, 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		lid := uint16(lid64)
		cells, owner, _ := strings.Cut(rest, "#")
		if g, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(owner), "portguid "), 0, 64); f.PortByLID(lid) == nil || f.PortByLID(lid).GUID != g {
			t.Fatalf("LID %d: the dump gives it to %s, the fabric to %v", lid, owner, f.PortByLID(lid))
		}
		port, ok := lft[sw][lid]
		if !ok {
			t.Errorf("switch %#x LID %d: nue routed it (%s); the replay did not", sw.GUID(), lid, line)
			continue
		}
		h := hops[sw][lid]
		for p, c := range strings.Fields(cells) {
			want := uint64(0xff)
			if p == 0 || p == int(port) {
				want = uint64(h)
			}
			if v, _ := strconv.ParseUint(c, 16, 8); v != want {
				t.Errorf("switch %#x LID %d port %d: OpenSM %s, replay %02x (the replay's route leaves by port %d):\n%s", sw.GUID(), lid, p, c, want, port, line)
			}
		}
		if routed := hopsOfRoute(f, sw, lid, lft); routed == h {
			routeLength++
		}
		rows++
	}
	if rows < 1000 || routeLength == rows {
		t.Errorf("%d rows compared, %d of them the route's length: want many, and counts that are not", rows, routeLength)
	}
	t.Logf("%d rows compared; %d hold the length of the route", rows, routeLength)
}

// hopsOfRoute follows lid's route in the replay's forwarding tables lft
// from sw to the port owning lid.
func hopsOfRoute(f *model.Fabric, sw *model.Node, lid uint16, lft map[*model.Node]map[uint16]uint8) uint8 {
	owner := f.PortByLID(lid).Node
	n, h := sw, uint8(0)
	for n != owner {
		p := lft[n][lid]
		if p == 0 || h > 64 {
			return h // the switch's own LID
		}
		n = n.Port(int(p)).Remote.Node
		h++
	}
	return h
}

// loadWithLIDs builds the fabric of an ibsim net file as written by
// cmd/ibhops's nueNet (switches, single-port CAs, "[p] "name"[q]" links)
// with the LIDs OpenSM gave its ports, read from the "# portguid" notes
// of its opensm-lid-matrix.dump.
func loadWithLIDs(t *testing.T, netFile, dump string) *model.Fabric {
	t.Helper()
	lids := map[uint64]uint16{}
	for _, line := range strings.Split(dump, "\n") {
		l, g, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		_, g, ok = strings.Cut(g, "# portguid ")
		lid, err1 := strconv.ParseUint(l, 0, 16)
		guid, err2 := strconv.ParseUint(g, 0, 64)
		if ok && err1 == nil && err2 == nil {
			lids[guid] = uint16(lid)
		}
	}
	text, err := os.ReadFile(netFile)
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t)
	type end struct {
		name       string
		port, peer int
		peerName   string
	}
	nodes := map[string]*model.Node{}
	var ends []end
	var guid uint64
	var cur string
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case strings.HasPrefix(f[0], "switchguid=") || strings.HasPrefix(f[0], "caguid="):
			_, g, _ := strings.Cut(f[0], "=")
			if guid, err = strconv.ParseUint(g, 0, 64); err != nil {
				t.Fatal(err)
			}
		case f[0] == "Switch" || f[0] == "Ca":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			cur = strings.Trim(f[2], `"`)
			if f[0] == "Switch" {
				nodes[cur] = b.sw(guid, n, lids[guid])
			} else {
				nodes[cur] = b.ca(guid, n, lids[guid+1])
			}
		case strings.HasPrefix(f[0], "["):
			p, err := strconv.Atoi(f[0][1:strings.Index(f[0], "]")])
			if err != nil {
				t.Fatal(err)
			}
			peer := f[len(f)-1]
			q, err := strconv.Atoi(peer[strings.LastIndex(peer, "[")+1 : len(peer)-1])
			if err != nil {
				t.Fatal(err)
			}
			ends = append(ends, end{cur, p, q, strings.Trim(peer[:strings.LastIndex(peer, "[")], `"`)})
		}
	}
	for _, e := range ends {
		b.link(nodes[e.name], e.port, nodes[e.peerName], e.peer)
	}
	return b.f
}
