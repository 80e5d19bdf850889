//go:build linux

package ibsim

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

const benchWindow = 16

// BenchmarkWindow16 is the client's cost per SMP as the discovery engine
// uses it: 16 goroutines, each with one SMP on the wire at a time
// (ns/op is per SMP). "deadline" gives every SMP its own ctx deadline,
// as the engine does today; "nodeadline" leaves the timeout to the
// client.
func BenchmarkWindow16(b *testing.B) {
	ibsimtest.Require(b)
	s := ibsimtest.Start(b, exampleNet)
	c, err := Dial(context.Background(), Config{SockName: s.SockName})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, _ := smp.ParseDRPath("0,3,1")
	m := smp.NewGet(p, smp.AttrNodeInfo, 0)
	req, _ := m.MarshalBinary()
	for _, deadline := range []bool{true, false} {
		name := "nodeadline"
		if deadline {
			name = "deadline"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var next sync.WaitGroup
			work := make(chan struct{}, b.N)
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			b.ResetTimer()
			for range benchWindow {
				next.Add(1)
				go func() {
					defer next.Done()
					resp := make([]byte, smp.MADSize)
					for range work {
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if deadline {
							ctx, cancel = context.WithTimeout(ctx, time.Second)
						}
						if err := c.Exchange(ctx, smp.PermissiveLID, req, resp); err != nil {
							b.Error(err)
						}
						cancel()
					}
				}()
			}
			next.Wait()
		})
	}
}

// BenchmarkBareWindow16 is the reference: one goroutine speaks the
// protocol with plain blocking socket calls and keeps 16 SMPs on the wire,
// with no bookkeeping at all (ns/op is per SMP).
func BenchmarkBareWindow16(b *testing.B) {
	ibsimtest.Require(b)
	s := ibsimtest.Start(b, exampleNet)
	id := uint32(os.Getpid()&(1<<27-1))*16 + 15
	sock := func() int {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		return fd
	}
	ctl, data := sock(), sock()
	defer unix.Close(ctl)
	defer unix.Close(data)
	must := func(err error) {
		if err != nil {
			b.Helper()
			b.Fatal(err)
		}
	}
	must(unix.Bind(ctl, unixName(fmt.Sprintf("%s:ctl%d", s.SockName, id))))
	must(unix.Bind(data, unixName(fmt.Sprintf("%s:in%d", s.SockName, id))))
	must(unix.Connect(ctl, unixName(s.SockName+":ctl")))
	var buf [CtlSize]byte
	info := ClientInfo{ID: id}
	var payload [ClientInfoSize]byte
	info.MarshalTo(payload[:])
	conn := NewCtl(CtlConnect, 0, payload[:])
	conn.MarshalTo(buf[:])
	_, err := unix.Write(ctl, buf[:])
	must(err)
	_, err = unix.Read(ctl, buf[:])
	must(err)
	slot := le.Uint32(buf[16:])
	defer func() {
		d := NewCtl(CtlDisconnect, slot, nil)
		d.MarshalTo(buf[:])
		unix.Write(ctl, buf[:])
		unix.Read(ctl, buf[:])
	}()
	must(unix.Connect(data, unixName(fmt.Sprintf("%s:out%d", s.SockName, slot))))

	p, _ := smp.ParseDRPath("0,3,1")
	m := smp.NewGet(p, smp.AttrNodeInfo, 0)
	mad, _ := m.MarshalBinary()
	r := Request{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, Length: MADSize}
	copy(r.MAD[:], mad)
	var out, in [RequestSize]byte
	r.MarshalTo(out[:])
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < benchWindow {
			be.PutUint32(out[32+12:], uint32(sent))
			if _, err := unix.Write(data, out[:]); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if _, err := unix.Read(data, in[:]); err != nil {
			b.Fatal(err)
		}
		got++
	}
}
