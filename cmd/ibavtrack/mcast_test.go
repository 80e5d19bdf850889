package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// TestMcastSim: the embedded simulator's SA lists OpenSM's IPoIB
// broadcast group as saquery -g prints it on ibsim under OpenSM 3.3.23
// (TestCompatMcast), and its one record with no member as saquery -m.
func TestMcastSim(t *testing.T) {
	const groups = "MCMemberRecord group dump:\n" +
		"\t\tMGID....................ff12:401b:ffff::ffff:ffff\n" +
		"\t\tMlid....................0xC000\n" +
		"\t\tMtu.....................0x84\n" +
		"\t\tpkey....................0xFFFF\n" +
		"\t\tRate....................0x83\n" +
		"\t\tSL......................0x0\n"
	const members = "MCMemberRecord member dump:\n" +
		"\t\tMGID....................ff12:401b:ffff::ffff:ffff\n" +
		"\t\tMlid....................0xC000\n" +
		"\t\tPortGid.................::\n" +
		"\t\tScopeState..............0x20\n" +
		"\t\tProxyJoin...............0x0\n" +
		"\t\tNodeDescription.........<unknown>\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcast"}, groups},
		{[]string{"mcast", "--members"}, members},
		{[]string{"mcast", "--members", "0xc000"}, "\t\tPortGid.................:: (<unknown>)\n"},
	} {
		out, errb, code := runTool(t, append(c.args, "--sim", "testdata/pathmix.net")...)
		if code != 0 || string(out) != c.want {
			t.Errorf("%v: exit %d\n%s%s\nwant\n%s", c.args, code, out, errb, c.want)
		}
	}
}

// TestGIDText: GIDs print as glibc's inet_ntop prints them (saquery's).
func TestGIDText(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want string
	}{
		{"00000000000000000000000000000000", "::"},
		{"fe800000000000000000000000100001", "fe80::10:1"},
		{"ff12401bffff000000000000ffffffff", "ff12:401b:ffff::ffff:ffff"},
		{"00000000000000000000000001020304", "::1.2.3.4"},
		{"00000000000000000000ffff01020304", "::ffff:1.2.3.4"},
		{"00000000000000000000000000000001", "::1"},
		{"fe800000000000010000000000000000", "fe80:0:0:1::"},
		{"00010002000300040005000600070008", "1:2:3:4:5:6:7:8"},
		{"00010000000200000000000300000000", "1:0:2::3:0:0"},
		{"00010000000200000003000000000000", "1:0:2:0:3::"},
		{"00010000000000020000000000030004", "1::2:0:0:3:4"},
	} {
		var g sa.GID
		hex.Decode(g[:], []byte(c.hex))
		if got := gidText(g); got != c.want {
			t.Errorf("%s: %q, want %q", c.hex, got, c.want)
		}
	}
}

// fakeSA is the embedded simulator with its SA replaced: SA requests get
// answer's MAD, or none when answer is nil (an SA that never answers).
type fakeSA struct {
	transport.Transport
	answer    func(req []byte) []byte
	firstOnce sync.Once
	askedOnce sync.Once
	first     chan struct{} // closed at the first SA request
}

// asked is closed when the first SA request arrives.
func (f *fakeSA) asked() chan struct{} {
	f.firstOnce.Do(func() { f.first = make(chan struct{}) })
	return f.first
}

func (f *fakeSA) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	if req[1] != sa.Class {
		return f.Transport.Exchange(ctx, dlid, req, resp)
	}
	f.askedOnce.Do(func() { close(f.asked()) })
	if f.answer == nil {
		<-ctx.Done()
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("SA request: %w", transport.ErrTimeout)
		}
		return ctx.Err()
	}
	copy(resp, f.answer(req))
	return nil
}

// withFakeSA makes the next runs attach to pathmix.net's simulator with
// fake's SA; cancel, when set, is called at the first SA request.
func withFakeSA(t *testing.T, fake *fakeSA, cancel func()) {
	old := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := old(ctx, s)
		if err == nil {
			fake.Transport = f.Transport
			f.Transport = fake
			if cancel != nil {
				ans := fake.answer
				fake.answer = func(req []byte) []byte { cancel(); return ans(req) }
			}
		}
		return f, err
	}
	t.Cleanup(func() { openFabric = old })
}

// statusAnswer answers every SA request with status st.
func statusAnswer(st uint16) func([]byte) []byte {
	return func(req []byte) []byte {
		b := make([]byte, sa.MADSize)
		copy(b, req[:sa.HeaderSize])
		b[3] |= 0x80
		binary.BigEndian.PutUint16(b[4:], st)
		return b
	}
}

// TestMcastBadInput: an SM_Key or MLID that is not one, an unknown MLID,
// no SM, an SA that never answers and an SA error status each end mcast
// with one line naming the problem, its exit status and nothing on
// stdout; Ctrl-C while waiting for the SA exits 130 at once.
func TestMcastBadInput(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	sim := []string{"--sim", "testdata/pathmix.net"}
	for _, c := range []struct {
		name string
		args []string
		fake *fakeSA
		code int
		msg  string
	}{
		{"bad smkey", []string{"--smkey", "x"}, nil, exitcode.Usage, "ibavtrack: --smkey x: not a number"},
		{"bad MLID", []string{"--members", "12"}, nil, exitcode.Usage, "ibavtrack: 12: not a multicast LID (0xc000-0xfffe)"},
		{"MLID without --members", []string{"0xc000"}, nil, exitcode.Usage, "ibavtrack: 0xc000: an MLID is taken with --members only"},
		{"unknown MLID", []string{"--members", "0xc001"}, nil, exitcode.Usage, "ibavtrack: MLID 0xc001: no such multicast group (the SA lists 0xc000)"},
		{"no SM", []string{"--sim-sm=false"}, nil, exitcode.NothingChecked, "ibavtrack: no subnet manager"},
		{"silent SA", []string{"--timeout", "50"}, &fakeSA{}, exitcode.Fatal, "ibavtrack: asking the SA for its MCMemberRecords: SA at LID 1: the SA did not answer after 4 attempts"},
		{"SA status", nil, &fakeSA{answer: statusAnswer(sa.StatusReqInvalid)}, exitcode.Fatal,
			"ibavtrack: asking the SA for its MCMemberRecords: SA status 0x0200 (ERR_REQ_INVALID)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.fake != nil {
				withFakeSA(t, c.fake, nil)
			}
			out, errb, code := runTool(t, append(append([]string{"mcast"}, c.args...), sim...)...)
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
		start := time.Now()
		done := make(chan int)
		go func() {
			done <- run(ctx, &out, &errb, []string{"ibavtrack", "mcast", "--timeout", "600000", "--sim", "testdata/pathmix.net"})
		}()
		select {
		case code := <-done:
			if code != exitcode.Interrupted || out.Len() != 0 || errb.String() != "ibavtrack: interrupted while asking the SA for its MCMemberRecords\n" {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("mcast still waiting for a silent SA a minute after Ctrl-C (started %v ago)", time.Since(start))
		}
	})
}
