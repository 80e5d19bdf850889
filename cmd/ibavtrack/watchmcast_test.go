package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// groupsAnswer answers a GetTable of MCMemberRecords with groups() (one
// unsized MAD, as OpenSM's reaches us under libumad2sim).
func groupsAnswer(groups func() []sa.MCMemberRecord) func([]byte) []byte {
	return func(req []byte) []byte {
		b := make([]byte, sa.MADSize)
		copy(b, req[:sa.HeaderSize])
		b[3] |= 0x80
		b[24], b[25], b[26] = 0, 0, 0
		binary.BigEndian.PutUint16(b[44:], 56/8)
		for i, g := range groups() {
			g.MarshalTo(b[sa.DataOffset+56*i:])
		}
		return b
	}
}

// TestWatchMcastText: with a fake SA in front of the embedded simulator
// whose group changes between sweeps, watch --mcast prints the group's
// AV, the change when the SM gives it other values, "gone" (the AV
// cleared, still held by a sweep) when the SA lists it no more, and the
// re-created group with what differs; an unchanged sweep prints nothing.
func TestWatchMcastText(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	g := sa.MCMemberRecord{MGID: testGroupMGID, MLID: 0xc001, QKey: 0x1111, PKey: 0xffff, MTUSelector: 2, MTU: smp.MTU2048, RateSelector: 2, Rate: smp.Rate10, Scope: 2}
	var sweep atomic.Int32
	stages := []func() []sa.MCMemberRecord{
		func() []sa.MCMemberRecord { return []sa.MCMemberRecord{g} },
		func() []sa.MCMemberRecord { return []sa.MCMemberRecord{g} },
		func() []sa.MCMemberRecord { h := g; h.Rate = smp.Rate20; return []sa.MCMemberRecord{h} },
		func() []sa.MCMemberRecord { return nil },
		func() []sa.MCMemberRecord { h := g; h.QKey, h.MLID = 0x2222, 0xc002; return []sa.MCMemberRecord{h} },
	}
	withFakeSA(t, &fakeSA{answer: groupsAnswer(func() []sa.MCMemberRecord { return stages[sweep.Load()]() })}, nil)
	afterSweep = func(s int, _ *attach.Fabric) { sweep.Store(int32(s + 1)) }
	defer func() { afterSweep = nil }()
	out, errb, code := runTool(t, "watch", "--mcast", "ff12:1234:ffff::1:ff00:1234", "--count", "5", "--interval", "1ms", "--sim", "testdata/pathmix.net")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	got := regexp.MustCompile(`(?m)^\S+ `).ReplaceAllString(string(out), "")
	want := "ff12:1234:ffff::1:ff00:1234: AV mgid ff12:1234:ffff::1:ff00:1234 mlid 0xc001 mtu 2048 rate 10 Gb/s sl 0 qkey 0x00001111 pkey 0xffff hop_limit 0 scope 2\n" +
		"ff12:1234:ffff::1:ff00:1234: rate 10 Gb/s → 20 Gb/s; retired, still referenced: [mlid 0xc001 mtu 2048 rate 10 Gb/s sl 0 qkey 0x00001111 pkey 0xffff hop_limit 0 scope 2: 1 ref]\n" +
		"ff12:1234:ffff::1:ff00:1234: gone: the SA lists no such group (AV cleared); retired, still referenced: [mlid 0xc001 mtu 2048 rate 20 Gb/s sl 0 qkey 0x00001111 pkey 0xffff hop_limit 0 scope 2: 1 ref]\n" +
		"ff12:1234:ffff::1:ff00:1234: re-created: AV mgid ff12:1234:ffff::1:ff00:1234 mlid 0xc002 mtu 2048 rate 10 Gb/s sl 0 qkey 0x00002222 pkey 0xffff hop_limit 0 scope 2; mlid 0xc001 → 0xc002, rate 20 Gb/s → 10 Gb/s, qkey 0x00001111 → 0x00002222\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

var testGroupMGID = sa.GID{0xff, 0x12, 0x12, 0x34, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0xff, 0, 0x12, 0x34}

// TestWatchMcastBadInput: a group that is neither an MGID nor an MLID,
// an MGID or MLID the SA does not list, --mcast with a DST, no SM, an SA
// that never answers and an SA error status at the first sweep each end
// watch --mcast with one line naming it and its exit status; Ctrl-C
// while it waits for the SA exits 130 at once.
func TestWatchMcastBadInput(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	sim := []string{"--sim", "testdata/pathmix.net", "--count", "1"}
	for _, c := range []struct {
		name string
		args []string
		fake *fakeSA
		code int
		msg  string
	}{
		{"not a group", []string{"--mcast", "12"}, nil, exitcode.Usage, "ibavtrack: --mcast 12: not an MGID (ff..::..) or an MLID (0xc000-0xfffe)"},
		{"unknown MLID", []string{"--mcast", "0xc00a"}, nil, exitcode.Usage, "ibavtrack: --mcast 0xc00a: no such multicast group (the SA lists 0xc000)"},
		{"unknown MGID", []string{"--mcast", "ff12::1"}, nil, exitcode.Usage, "ibavtrack: --mcast ff12::1: no such multicast group (the SA lists 0xc000)"},
		{"with a DST", []string{"--mcast", "0xc000", "hA"}, nil, exitcode.Usage, "ibavtrack: --mcast: watches multicast groups only"},
		{"no SM", []string{"--mcast", "0xc000", "--sim-sm=false"}, nil, exitcode.NothingChecked, "ibavtrack: no subnet manager"},
		{"silent SA", []string{"--mcast", "0xc000", "--timeout", "50"}, &fakeSA{}, exitcode.Fatal, "ibavtrack: asking the SA for its multicast groups: SA at LID 1: the SA did not answer after 4 attempts"},
		{"SA status", []string{"--mcast", "0xc000"}, &fakeSA{answer: statusAnswer(sa.StatusNoResources)}, exitcode.Fatal,
			"ibavtrack: asking the SA for its multicast groups: SA status 0x0100 (ERR_NO_RESOURCES)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.fake != nil {
				withFakeSA(t, c.fake, nil)
			}
			out, errb, code := runTool(t, append(append([]string{"watch"}, c.args...), sim...)...)
			if code != c.code || len(out) != 0 || bytes.Count(errb, []byte("\n")) != 1 || !strings.HasPrefix(string(errb), c.msg) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want one line starting %q)", code, c.code, out, errb, c.msg)
			}
		})
	}
	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		fake := &fakeSA{}
		withFakeSA(t, fake, nil)
		go func() {
			<-fake.asked() // the run waits on the silent SA now
			cancel()
		}()
		var out, errb bytes.Buffer
		done := make(chan int)
		go func() {
			done <- run(ctx, &out, &errb, []string{"ibavtrack", "watch", "--mcast", "0xc000", "--timeout", "600000", "--sim", "testdata/pathmix.net"})
		}()
		select {
		case code := <-done:
			if code != exitcode.Interrupted || out.Len() != 0 || errb.String() != "ibavtrack: interrupted while asking the SA for its multicast groups\n" {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
			}
		case <-time.After(time.Minute):
			t.Fatal("watch --mcast still waiting for a silent SA a minute after Ctrl-C")
		}
	})
}

// TestWatchMcastSAFailsLater: an SA error status at a later sweep is one
// line on standard error naming the sweep; the sweep is skipped (the
// group is not taken as gone) and the watch goes on, exit 0.
func TestWatchMcastSAFailsLater(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	var asked atomic.Int32
	groups := groupsAnswer(func() []sa.MCMemberRecord {
		return []sa.MCMemberRecord{{MGID: testGroupMGID, MLID: 0xc001, QKey: 1, PKey: 0xffff, MTU: smp.MTU2048, Rate: smp.Rate10}}
	})
	fail := statusAnswer(sa.StatusNoResources)
	withFakeSA(t, &fakeSA{answer: func(req []byte) []byte {
		if asked.Add(1) == 2 { // the second sweep's one SA request
			return fail(req)
		}
		return groups(req)
	}}, nil)
	out, errb, code := runTool(t, "watch", "--mcast", "0xc001", "--count", "3", "--interval", "1ms", "--sim", "testdata/pathmix.net")
	if code != 0 || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), " 0xc001: AV mgid ") ||
		string(errb) != "ibavtrack: sweep 2: asking the SA for its multicast groups: SA status 0x0100 (ERR_NO_RESOURCES)\n" {
		t.Errorf("exit %d\n%s%s", code, out, errb)
	}
}
