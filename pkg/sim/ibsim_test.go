package sim

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// requireTool skips when a binary is missing, except under CI=true where
// the test fails instead.
func requireTool(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (required when CI=true)", n)
			}
			t.Skipf("%s not installed: skipping the comparison with real ibsim", n)
		}
	}
}

// startIbsim runs `ibsim -s -n` on netfile with a private socket name
// (internal/testkit/ibsimtest: killed by PID at cleanup, a generous start-up
// bound) and returns that name.
func startIbsim(t testing.TB, netfile string, extra ...string) string {
	t.Helper()
	requireTool(t, "ibsim")
	abs, err := filepath.Abs(netfile)
	if err != nil {
		t.Fatal(err)
	}
	return ibsimtest.Start(t, abs, ibsimtest.Args(extra...)).SockName
}

// rawClient speaks ibsim's socket protocol directly (test-only).
type rawClient struct {
	ctl  *net.UnixConn
	data *net.UnixConn
	out  *net.UnixAddr
	slot uint32
}

var rawSeq atomic.Int32

func dialIbsim(t testing.TB, base, node string) *rawClient {
	t.Helper()
	id := os.Getpid()*16 + int(rawSeq.Add(1))%16 + 1
	addr := func(s string) *net.UnixAddr {
		return &net.UnixAddr{Net: "unixgram", Name: "@" + base + ":" + s + "\x00"}
	}
	data, err := net.ListenUnixgram("unixgram", addr(fmt.Sprintf("in%d", id)))
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := net.DialUnix("unixgram", addr(fmt.Sprintf("ctl%d", id)), addr("ctl"))
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 80)
	binary.LittleEndian.PutUint32(msg[0:], 0xdeadbeef)
	binary.LittleEndian.PutUint32(msg[8:], 1) // CONNECT
	binary.LittleEndian.PutUint32(msg[12:], 44)
	binary.LittleEndian.PutUint32(msg[16:], uint32(id))
	copy(msg[28:60], node)
	if _, err := ctl.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = ctl.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := ctl.Read(msg); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(msg[8:]) == 0 {
		t.Fatalf("ibsim refused CONNECT to %q", node)
	}
	c := &rawClient{ctl: ctl, data: data, slot: binary.LittleEndian.Uint32(msg[16:])}
	c.out = addr(fmt.Sprintf("out%d", c.slot))
	t.Cleanup(func() {
		m := make([]byte, 80)
		binary.LittleEndian.PutUint32(m[0:], 0xdeadbeef)
		binary.LittleEndian.PutUint32(m[4:], c.slot)
		binary.LittleEndian.PutUint32(m[8:], 2) // DISCONNECT
		_, _ = ctl.Write(m)
		_ = ctl.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = ctl.Read(m)
		ctl.Close()
		data.Close()
	})
	return c
}

// exchange sends one MAD and returns ibsim's sim status and the MAD.
func (c *rawClient) exchange(t testing.TB, dlid uint16, mad []byte) (uint32, []byte) {
	t.Helper()
	req := make([]byte, 288)
	slid := uint16(0)
	if dlid == 0xffff {
		slid = 0xffff
	}
	binary.BigEndian.PutUint16(req[0:], dlid)
	binary.BigEndian.PutUint16(req[4:], slid)
	binary.BigEndian.PutUint64(req[24:], 256)
	copy(req[32:], mad)
	if _, err := c.data.WriteToUnix(req, c.out); err != nil {
		t.Fatal(err)
	}
	_ = c.data.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp := make([]byte, 288)
	n, err := c.data.Read(resp)
	if err != nil {
		t.Fatalf("no reply from ibsim: %v", err)
	}
	if n != 288 {
		t.Fatalf("short reply %d", n)
	}
	return binary.BigEndian.Uint32(resp[16:]), resp[32:]
}

func hexDiff(a, b []byte) string {
	var sb strings.Builder
	for i := range a {
		if i < len(b) && a[i] != b[i] {
			fmt.Fprintf(&sb, " [%d] ibsim %02x sim %02x", i, a[i], b[i])
		}
	}
	return sb.String()
}
