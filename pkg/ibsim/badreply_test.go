//go:build linux

package ibsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestBadReply: a CONNECT answered with a slot ibsim cannot have (not
// below MaxClients) is an error wrapping ErrBadReply, from a fake ibsim
// that answers the client's CONNECT and nothing else (its socket name
// ends in a NUL, as ibsim's does).
func TestBadReply(t *testing.T) {
	sock := fmt.Sprintf("ibdiag-badreply-%d", os.Getpid())
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + sock + ":ctl\x00", Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		var buf [CtlSize]byte
		srv.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			n, from, err := srv.ReadFromUnix(buf[:])
			if err != nil {
				return
			}
			var req Ctl
			if n < CtlSize || req.UnmarshalBinary(buf[:n]) != nil || req.Type != CtlConnect {
				continue // a DISCONNECT, or anything else: no answer
			}
			var data [ClientInfoSize]byte
			info := ClientInfo{ID: MaxClients + 5}
			if info.MarshalTo(data[:]) != nil {
				return
			}
			reply := NewCtl(CtlConnect, 0, data[:])
			b, _ := reply.MarshalBinary()
			// Go drops the trailing NUL of the client's name: put it back
			srv.WriteToUnix(b, &net.UnixAddr{Name: from.Name + "\x00", Net: "unixgram"})
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{SockName: sock, Timeout: time.Second, ConnectTimeout: 5 * time.Second})
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, ErrBadReply) {
		t.Fatalf("Dial to a peer answering slot %d: %v; want an error wrapping ErrBadReply", MaxClients+5, err)
	}
}
