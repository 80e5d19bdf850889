//go:build linux

package ibsim

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// readerClient is a Client whose data socket is one end of a datagram
// socketpair, with the real reader goroutine on it; peer is the other
// end, standing in for ibsim.
func readerClient(t testing.TB) (c *Client, peer *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	c = newClient(Config{SockName: "fuzz"})
	if c.data, err = fdConn(fds[0], "fuzz-data"); err != nil {
		t.Fatal(err)
	}
	if c.dataRaw, err = c.data.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	go c.reader()
	return c, os.NewFile(uintptr(fds[1]), "fuzz-peer")
}

// stopReader ends the reader as Close would, without a control socket.
func stopReader(t testing.TB, c *Client, peer *os.File) {
	close(c.closed)
	c.data.Close()
	peer.Close()
	select {
	case <-c.readerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not stop")
	}
}

// reply builds a valid ibsim reply datagram for TID low word lo.
func reply(lo uint32) []byte {
	b := make([]byte, RequestSize)
	be.PutUint16(b[0:], smp.PermissiveLID)
	be.PutUint16(b[4:], smp.PermissiveLID)
	b[32], b[33], b[34], b[35] = 1, smp.ClassDirectRoute, 1, 0x81
	be.PutUint32(b[32+12:], lo)
	return b
}

// FuzzReader feeds arbitrary datagrams through a socket into the
// client's reader goroutine while an Exchange-like call waits: nothing
// may panic, a datagram the reader takes for the call must be the one
// handed over, and a valid reply sent afterwards must still reach a
// waiting call. The input's first byte says how many datagrams to cut it
// into.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1})
	f.Add(append([]byte{1}, reply(7)...))
	f.Add(append([]byte{2}, append(reply(7), reply(8)...)...))
	short := reply(7)[:100]
	f.Add(append([]byte{1}, short...))
	req := reply(7)
	req[35] = 0x01 // a request, not a response: ignored
	f.Add(append([]byte{1}, req...))
	timeout := reply(7)
	be.PutUint32(timeout[16:], StatusTimeout)
	timeout[35] = 0x01 // status 110 carries the request back
	f.Add(append([]byte{1}, timeout...))
	f.Add(append([]byte{3}, bytes.Repeat([]byte{0xff}, 600)...))

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		parts := int(in[0]%4) + 1
		data := in[1:]
		c, peer := readerClient(t)
		defer stopReader(t, c, peer)

		const lo = 7
		cl := newCall()
		c.mu.Lock()
		c.pending.put(lo, cl)
		c.mu.Unlock()
		var sent [][]byte
		size := (len(data) + parts - 1) / parts
		for i := 0; i < parts; i++ {
			a := min(i*size, len(data))
			b := min(a+size, len(data))
			d := data[a:b]
			if _, err := peer.Write(d); err != nil {
				t.Fatalf("write %d bytes: %v", len(d), err)
			}
			sent = append(sent, d)
		}
		// Then a valid reply: it completes the call if nothing before did.
		good := reply(lo)
		if _, err := peer.Write(good); err != nil {
			t.Fatal(err)
		}
		select {
		case <-cl.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting call got nothing")
		}
		got := cl.buf[:]
		ok := bytes.Equal(got, good)
		for _, d := range sent {
			ok = ok || bytes.Equal(got, d)
		}
		if !ok {
			t.Fatalf("the call got a datagram nobody sent: %x", got)
		}
		c.mu.Lock()
		left := c.pending.len()
		c.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d calls left pending", left)
		}
	})
}
