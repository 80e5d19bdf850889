package sim

import (
	"testing"
	"time"
)

// serveInOrder books SMPs stamped at the given times (µs since the
// model's epoch, one hop from node 0) in the order given by order, and
// returns which were dropped and when the others' answers are back.
func serveInOrder(t *testing.T, f *Fabric, l *Latency, stamps []int64, order []int) (drop []bool, until []int64) {
	t.Helper()
	if err := f.SetLatency(l); err != nil {
		t.Fatal(err)
	}
	lat := f.fs.lat.Load()
	tickets := make([]latTicket, len(stamps))
	for i, s := range stamps {
		tickets[i] = latTicket{lat: lat, now: s * int64(time.Microsecond), hops: 1}
	}
	for _, i := range order {
		f.serve(&tickets[i], 0)
	}
	for i := range tickets {
		drop = append(drop, tickets[i].drop)
		until = append(until, tickets[i].until)
	}
	return drop, until
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			q := append(append(append([]int(nil), p[:at]...), n-1), p[at:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestVL15ArrivalOrder: the VL15 buffer is judged by the times the SMPs
// arrive, not by the order their goroutines reach the model. The order is
// driven by the test (serve is called directly), so no timing is involved.
func TestVL15ArrivalOrder(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &Latency{Hop: time.Microsecond, SMA: 100 * time.Microsecond, VL15: 2}
	// Two SMPs 50 µs apart at a buffer for two: both are served, one
	// after the other, whichever reaches the model first.
	for _, order := range permutations(2) {
		drop, until := serveInOrder(t, f, l, []int64{0, 50}, order)
		if drop[0] || drop[1] {
			t.Errorf("order %v: dropped %v with a buffer for two", order, drop)
			continue
		}
		if until[0] == until[1] || min(until[0], until[1]) < 102*int64(time.Microsecond) || max(until[0], until[1]) < 202*int64(time.Microsecond) {
			t.Errorf("order %v: answers back at %v, want one service after the other", order, until)
		}
	}
	if got := f.Stats().BusyDrops; got != 0 {
		t.Errorf("busy drops %d, want 0", got)
	}
	// Three SMPs within one service time at a buffer for two: exactly
	// one is lost, in every order.
	for _, order := range permutations(3) {
		drop, _ := serveInOrder(t, f, l, []int64{0, 25, 50}, order)
		n := 0
		for _, d := range drop {
			if d {
				n++
			}
		}
		if n != 1 {
			t.Errorf("order %v: dropped %v, want exactly one", order, drop)
		}
	}
	// A one-packet buffer: two SMPs within one service time lose one in
	// either order; 150 µs apart neither.
	l.VL15 = 1
	for _, order := range permutations(2) {
		if drop, _ := serveInOrder(t, f, l, []int64{0, 50}, order); drop[0] == drop[1] {
			t.Errorf("vl15=1, order %v: dropped %v, want exactly one", order, drop)
		}
		if drop, _ := serveInOrder(t, f, l, []int64{0, 150}, order); drop[0] || drop[1] {
			t.Errorf("vl15=1, 150 µs apart, order %v: dropped %v", order, drop)
		}
	}
}

// TestForwardingCost: a directed-route SMP is handled by every switch it
// crosses, out and back; SMPs waiting to be forwarded queue at the
// switch's processor and are not dropped, though its VL15 buffer holds
// one packet.
func TestForwardingCost(t *testing.T) {
	f, err := Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		t.Fatal(err)
	}
	us := int64(time.Microsecond)
	if err := f.SetLatency(&Latency{Hop: time.Microsecond, SMA: 100 * time.Microsecond, Fwd: 10 * time.Microsecond, VL15: 1}); err != nil {
		t.Fatal(err)
	}
	lat := f.fs.lat.Load()
	// three hops: requester, switch 1, switch 2, target 3
	tk := func(now int64) *latTicket {
		t := &latTicket{lat: lat, now: now * us, hops: 3, dr: true}
		t.via[1], t.via[2] = 1, 2
		return t
	}
	a := tk(0)
	f.serve(a, 3)
	// out: 3 hops and 2 forwardings; 100 µs of service; back the same
	if want := (3 + 20 + 100 + 20 + 3) * us; a.drop || a.until != want {
		t.Fatalf("one SMP: drop %v, back at %d µs, want %d", a.drop, a.until/us, want/us)
	}
	// A second SMP to another node, sent at once, waits 10 µs behind the
	// first at switch 1 (and again on the way back), and is not dropped.
	b := tk(0)
	f.serve(b, 4)
	if want := (3 + 20 + 100 + 20 + 3 + 10) * us; b.drop || b.until != want {
		t.Errorf("second SMP: drop %v, back at %d µs, want %d", b.drop, b.until/us, want/us)
	}
	if f.Stats().BusyDrops != 0 {
		t.Errorf("busy drops %d", f.Stats().BusyDrops)
	}
	// Switch 1 serves its own SMPs on the same processor: an SMP for it
	// sent at once waits for the two forwardings.
	c := &latTicket{lat: lat, now: 0, hops: 1, dr: true}
	f.serve(c, 1)
	if want := (1 + 20 + 100 + 1) * us; c.drop || c.until != want {
		t.Errorf("SMP for switch 1: drop %v, back at %d µs, want %d", c.drop, c.until/us, want/us)
	}
	// A LID-routed SMP crosses the switches in hardware: Hop per link only.
	d := &latTicket{lat: lat, now: 1000 * us, hops: 3}
	f.serve(d, 5)
	if want := (1000 + 3 + 100 + 3) * us; d.drop || d.until != want {
		t.Errorf("LID-routed SMP: drop %v, back at %d µs, want %d", d.drop, d.until/us, want/us)
	}
}
