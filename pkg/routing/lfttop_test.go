package routing_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// smpSet sends one DR SMP Get, lets edit change its data, and Sets it
// back; it returns the Set's response data.
func smpSet(t *testing.T, r *routed, path smp.DRPath, attr uint16, mod uint32, edit func(data []byte)) []byte {
	t.Helper()
	exchange := func(m smp.MAD) []byte {
		req, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, smp.MADSize)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.tr.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
			t.Fatal(err)
		}
		var a smp.MAD
		if err := a.UnmarshalBinary(resp); err != nil {
			t.Fatal(err)
		}
		if a.StatusCode() != 0 {
			t.Fatalf("SMP status %#x", a.StatusCode())
		}
		return a.Data[:]
	}
	data := exchange(smp.NewGet(path, attr, mod))
	m := smp.NewGet(path, attr, mod)
	m.Method = smp.MethodSet
	copy(m.Data[:], data)
	edit(m.Data[:])
	return exchange(m)
}

// TestReadStopsAtLinearFDBTop: a switch forwards only the LIDs up to
// its LinearFDBTop; entries past it, in the last block read, are not
// routes. sw1's top is lowered under the hosts' LIDs while its table
// still holds their (good) ports: the tables read hold NoRoute there, and
// Check finds a black hole at sw1 for each of them.
func TestReadStopsAtLinearFDBTop(t *testing.T) {
	r := load(t, fabrics+"loop.net")
	sw1 := r.node(t, "sw1")
	top := r.lid(t, "sw3") // the switches' LIDs 1..3 stay under the top
	var hosts []uint16
	for _, h := range []string{"h1", "h2", "h3"} {
		l := r.lid(t, h)
		if l <= top {
			t.Fatalf("%s has LID %d, not above sw3's %d", h, l, top)
		}
		if p := r.tabs.Port(sw1, l); p == routing.NoRoute || p == 0 {
			t.Fatalf("sw1 has no route to %s before the test: %d", h, p)
		}
		hosts = append(hosts, l)
	}
	got := smpSet(t, r, sw1.Path, smp.AttrSwitchInfo, 0, func(d []byte) {
		binary.BigEndian.PutUint16(d[6:], top)
	})
	if binary.BigEndian.Uint16(got[6:]) != top {
		t.Fatalf("SwitchInfo Set did not take: top %d", binary.BigEndian.Uint16(got[6:]))
	}

	ctx := context.Background()
	res, err := discover.Discover(ctx, r.tr, discover.Config{MaxHops: -1, Outstanding: 8, Timeout: time.Second})
	if err != nil || res.Partial() {
		t.Fatalf("discover: %v %v", err, res.Errors)
	}
	f := res.Fabric
	var sw *model.Node
	for _, n := range f.Switches() {
		if n.Description() == "sw1" {
			sw = n
		}
	}
	if sw == nil || sw.SwitchInfo.LinearFDBTop != top {
		t.Fatalf("sw1 rediscovered with top %v", sw)
	}
	tabs, err := routing.Read(ctx, r.q, f, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range hosts {
		if p := tabs.Port(sw, l); p != routing.NoRoute {
			t.Errorf("sw1's entry for LID %d past its LinearFDBTop %d read as port %d, want %d (no route)", l, top, p, routing.NoRoute)
		}
	}
	for l := uint16(1); l <= top; l++ {
		if p := tabs.Port(sw, l); p == routing.NoRoute {
			t.Errorf("sw1's entry for LID %d (under the top) read as no route", l)
		}
	}

	chk := routing.Check(f, tabs, model.ComputeHops(f))
	var holes []string
	for _, fd := range chk.Findings {
		if fd.Kind == routing.KindBlackHole && fd.At == sw {
			holes = append(holes, fmt.Sprint(fd.DLID))
		}
	}
	var want []string
	for _, l := range hosts {
		want = append(want, fmt.Sprint(l))
	}
	if !slices.Equal(holes, want) || chk.Clean() {
		t.Errorf("black holes at sw1 for LIDs %v, want %v; clean %v", holes, want, chk.Clean())
	}
}
