//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/internal/testkit/mcjoin"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ibrouteM runs ibroute -M on a switch LID.
func ibrouteM(t *testing.T, sim *ibsimtest.Sim, host, lid string) []byte {
	t.Helper()
	out, errb, code := sim.RunTool(t, host, "ibroute", "-M", lid)
	if code != 0 {
		t.Fatalf("ibroute -M %s: exit %d\n%s%s", lid, code, out, errb)
	}
	return out
}

// settle polls ibroute -M on every switch until two rounds in a row
// print the same tables and ok accepts the number of MLIDs programmed
// over all switches: OpenSM programs the MFTs after a join or a leave,
// asynchronously, one switch after another.
func settle(t *testing.T, sim *ibsimtest.Sim, host string, lids []string, what string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var prev []byte
	for {
		var all []byte
		for _, lid := range lids {
			all = append(all, ibrouteM(t, sim, host, lid)...)
		}
		if bytes.Equal(all, prev) && ok(bytes.Count(all, []byte("\n0xc"))) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: OpenSM's MFTs did not settle in a minute; ibroute -M:\n%s", what, all)
		}
		prev = all
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCompatMFT compares --mft with ibroute -M, byte for byte, on every
// switch of two ibsim fabrics run by OpenSM (a daemon, so that it
// answers joins): before any join (the broadcast group has no member, so
// OpenSM programs no MFT entry), after CA ports join the broadcast group
// through the test helper, and after they leave one by one. demo.net's
// 40-port switches take ibroute's tens line and three 16-port positions.
func TestCompatMFT(t *testing.T) {
	ibsimtest.Require(t)
	big := []ibsimtest.Option{ibsimtest.Nodes(4096), ibsimtest.Switches(1024), ibsimtest.Ports(65536)}
	demo, err := filepath.Abs(fabrics + "demo.net")
	if err != nil {
		t.Fatal(err)
	}
	for _, fab := range []struct {
		file    string
		opts    []ibsimtest.Option
		smHost  string
		joiners []string
	}{
		{ibsimtest.ExampleNet + "/net.2sw2path4hca", nil, "Hca1", []string{"Hca2", "Hca3", "Hca1"}},
		{demo, big, "H-0c42a10300300100", []string{"H-0c42a10300300200", "H-0c42a10300300400"}},
	} {
		t.Run(filepath.Base(fab.file), func(t *testing.T) {
			sim := ibsimtest.Start(t, fab.file, fab.opts...)
			sim.StartOpenSM(t, fab.smHost)
			f, _ := ibsimFabric(t, sim.SockName)
			var lids []string
			for _, sw := range f.Switches() {
				lids = append(lids, strconv.Itoa(int(sw.SMALID())))
			}
			base := []string{"--ibsim", "--ibsim-sockname", sim.SockName, "--sim-host", fab.smHost}
			compare := func(stage string) int {
				t.Helper()
				total := 0
				for _, lid := range lids {
					theirs := ibrouteM(t, sim, fab.smHost, lid)
					ours, oerr, code := runOurs(t, append(base, "--mft", lid)...)
					if code != 0 {
						t.Errorf("%s: --mft %s: exit %d: %s", stage, lid, code, oerr)
					}
					if !bytes.Equal(ours, theirs) {
						t.Errorf("%s: --mft %s differs from ibroute -M:\n%s", stage, lid, golden.LineDiff(string(theirs), string(ours)))
					}
					total += bytes.Count(theirs, []byte("\n0xc"))
				}
				return total
			}
			if n := compare("before any join"); n != 0 {
				t.Errorf("before any join: %d MLIDs programmed, want none", n)
			}
			var ms []*mcjoin.Member
			for _, h := range fab.joiners {
				m := mcjoin.Attach(t, sim.SockName, h)
				m.Join(t, mcjoin.BroadcastMGID)
				ms = append(ms, m)
			}
			// Every joiner's switch, at least, forwards the group.
			settle(t, sim, fab.smHost, lids, "after the joins", func(n int) bool { return n >= 2 })
			compare("after the joins")
			// The JSON of a table with entries, against docs/mft.schema.json.
			for _, lid := range lids {
				doc, oerr, code := runOurs(t, append(base, "--mft", lid, "--json")...)
				if code != 0 {
					t.Fatalf("--mft %s --json: exit %d: %s", lid, code, oerr)
				}
				validateDoc(t, "--mft "+lid+" --json", doc)
			}
			if fab.smHost == "Hca1" {
				saveMFTVector(t, sim, fab.smHost, "0,1")
			}
			for i, m := range ms {
				m.Leave(t, mcjoin.BroadcastMGID)
				if i == len(ms)-1 {
					settle(t, sim, fab.smHost, lids, "after the last leave", func(n int) bool { return n == 0 })
				} else {
					settle(t, sim, fab.smHost, lids, "after "+m.Host+" left", func(int) bool { return true })
				}
				compare("after " + m.Host + " left")
			}
		})
	}
}

// saveMFTVector, when MFT_CAPTURE=1, writes ../../pkg/smp/testdata's
// 2sw-mft-joined.hex: the MFT SMP answer of the switch at directed route
// dr after the joins, as ibroute -M -D -d -d -d received it (libibmad's
// "rcv buf" dump; directed route, as the package's other vectors).
func saveMFTVector(t *testing.T, sim *ibsimtest.Sim, host, dr string) {
	t.Helper()
	if os.Getenv("MFT_CAPTURE") != "1" {
		return
	}
	out, errb, code := sim.RunTool(t, host, "ibroute", "-M", "-D", "-d", "-d", "-d", dr)
	if code != 0 {
		t.Fatalf("ibroute -M -d -d -d: exit %d\n%s", code, errb)
	}
	row := regexp.MustCompile(`^([0-9a-f]{4} ){7}[0-9a-f]{4}$`)
	lines := strings.Split(string(errb), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "rcv buf" || i+16 >= len(lines) {
			continue
		}
		rows := lines[i+1 : i+17]
		ok := true
		for j := range rows {
			rows[j] = strings.TrimSpace(rows[j])
			ok = ok && row.MatchString(rows[j])
		}
		// The answer for block 0 (MLID 0xC000): attribute 0x001b, modifier 0.
		if !ok || rows[1][:4] != "001b" || rows[1][5:14] != "0000 0000" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# source: ibsim 0.10 (Debian ibsim-utils 0.10-2), net file net.2sw2path4hca (ibsim's examples),\n")
		fmt.Fprintf(&b, "#   OpenSM 3.3.23 as a daemon on Hca1, after Hca2, Hca3 and Hca1 joined the IPoIB broadcast group\n")
		fmt.Fprintf(&b, "#   (cmd/ibhops TestCompatMFT, MFT_CAPTURE=1); response MAD received by `ibroute -M -D %s`\n", dr)
		fmt.Fprintf(&b, "#   (infiniband-diags 44.0 under libumad2sim), attribute 0x001b modifier 0x00000000, from libibmad's \"rcv buf\" dump\n")
		for _, o := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			fmt.Fprintf(&b, "> %s\n", o)
		}
		for _, r := range rows {
			fmt.Fprintf(&b, "%s\n", r)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "pkg", "smp", "testdata", "2sw-mft-joined.hex"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no MFT block 0 answer in ibroute's dump:\n%s", errb)
}

// setMFT writes one MFT block position of switch sw with an SMP Set sent
// by the test (the tool only reads).
func (b *brokenSim) setMFT(t *testing.T, sw string, block uint16, pos uint8, tbl smp.MulticastForwardingTable) {
	t.Helper()
	p, err := b.f.ResolvePort(sw, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := smp.NewGet(p.Node.Path, smp.AttrMulticastFwdTable, smp.MFTModifier(block, pos))
	m.Method = smp.MethodSet
	if err := tbl.MarshalTo(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	req, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, smp.MADSize)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.tr.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
		t.Fatal(err)
	}
	var r smp.MAD
	if err := r.UnmarshalBinary(resp); err != nil || r.StatusCode() != 0 {
		t.Fatalf("MFT Set: %v, status %#x", err, r.StatusCode())
	}
}

// TestMFTPositions sets MFT entries of a 40-port switch (three 16-port
// positions, two blocks) in the embedded simulator and checks --mft's
// lines, written by hand from ibroute -M's format (an x under each port
// of the mask, only non-empty MLIDs), and its JSON ports.
func TestMFTPositions(t *testing.T) {
	b := newBrokenSim(t, fabrics+"demo.net")
	b.setMFT(t, "spine01", 0, 0, smp.MulticastForwardingTable{0: 0x0003, 5: 0x8000})
	b.setMFT(t, "spine01", 0, 2, smp.MulticastForwardingTable{0: 0x0102})  // ports 33 and 40
	b.setMFT(t, "spine01", 1, 1, smp.MulticastForwardingTable{31: 0x0001}) // 0xC03F port 16
	out, stderr, code := runOurs(t, "--sim", fabrics+"demo.net", "--mft", "spine01")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	row := func(mlid string, ports ...int) string {
		cols := make([]byte, 2*41)
		for i := range cols {
			cols[i] = ' '
		}
		for _, p := range ports {
			cols[2*p] = 'x'
		}
		return mlid + "      " + string(cols)
	}
	lines := strings.Split(string(out), "\n")
	want := []string{
		"Multicast mlids [0xc000-0xc3ff] of switch Lid 1 guid 0x0c42a1030010a000 (spine01):",
		"            0                   1                   2                   3                   4 ",
		"     Ports: 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 ",
		" MLid",
		row("0xc000", 0, 1, 33, 40),
		row("0xc005", 15),
		row("0xc03f", 16),
		"3 valid mlids dumped ",
		"",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("--mft:\n%s", golden.LineDiff(strings.Join(want, "\n"), string(out)))
	}
	doc, _, code := runOurs(t, "--sim", fabrics+"demo.net", "--mft", "spine01", "--json")
	var j jsonMFT
	if err := json.Unmarshal(doc, &j); err != nil || code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	got := fmt.Sprint(j.Entries)
	if w := "[{49152 [0 1 33 40]} {49157 [15]} {49215 [16]}]"; got != w {
		t.Errorf("JSON entries %s, want %s", got, w)
	}
	validateDoc(t, "--mft --json", doc)
}

// mftFault is a transport that fails (or, with cancel set, interrupts
// the run at) every MulticastForwardingTable read of block 1 and later.
type mftFault struct {
	transport.Transport
	cancel func()
}

func (m *mftFault) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	var r smp.MAD
	if r.UnmarshalBinary(req) == nil && r.AttrID == smp.AttrMulticastFwdTable {
		if blk, _ := smp.MFTSplitModifier(r.AttrMod); blk >= 1 {
			if m.cancel != nil {
				m.cancel()
				<-ctx.Done()
				return ctx.Err()
			}
			return &transport.OpError{Op: "exchange", Err: transport.ErrTimeout}
		}
	}
	return m.Transport.Exchange(ctx, dlid, req, resp)
}

// TestMFTReadFails: an MFT block that cannot be read ends the table there
// (what was read is printed, exit 3, the block named in one line); an
// interrupt during the reads exits 130 and leaves --output's file
// unwritten.
func TestMFTReadFails(t *testing.T) {
	b := newBrokenSim(t, fabrics+"demo.net")
	b.setMFT(t, "spine01", 0, 0, smp.MulticastForwardingTable{0: 0x0003})
	b.setMFT(t, "spine01", 2, 0, smp.MulticastForwardingTable{0: 0x0003})
	var cancel func()
	inner := openFabric
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		f, err := inner(ctx, s)
		if err == nil {
			f.Transport = &mftFault{Transport: f.Transport, cancel: cancel}
		}
		return f, err
	}
	out, stderr, code := runOurs(t, "--sim", fabrics+"demo.net", "--mft", "spine01")
	if code != exitcode.Partial {
		t.Errorf("exit %d, want %d", code, exitcode.Partial)
	}
	if !bytes.Contains(out, []byte("\n0xc000      ")) || bytes.Contains(out, []byte("0xc040")) || !bytes.HasSuffix(out, []byte("\n1 valid mlids dumped \n")) {
		t.Errorf("stdout:\n%s", out)
	}
	if !bytes.Contains(stderr, []byte(`ibhops: --mft: reading block 1 position 0 (AM 0x1) of "spine01": `)) {
		t.Errorf("stderr:\n%s", stderr)
	}

	ctx, c := context.WithCancel(context.Background())
	defer c()
	cancel = c
	file := filepath.Join(t.TempDir(), "mft.txt")
	var o, e bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &o, &e, []string{"ibhops", "--sim", fabrics + "demo.net", "--mft", "spine01", "--output", file})
	}()
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("--mft did not stop within a minute of its interrupt")
	}
	if code != exitcode.Interrupted {
		t.Errorf("interrupted: exit %d, want %d: %s", code, exitcode.Interrupted, e.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("--output file written by an interrupted run: %v", err)
	}
}
