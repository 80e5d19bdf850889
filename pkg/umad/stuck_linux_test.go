//go:build linux

package umad

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// A kernel that takes no more requests (the fake stops reading, so its
// socket fills up): blocked writes end when their ctx is cancelled, and
// Close ends the rest; nothing waits for the kernel.
func TestStuckKernel(t *testing.T) {
	for _, how := range []string{"cancel", "close"} {
		t.Run(how, func(t *testing.T) {
			stuck := make(chan struct{})
			defer close(stuck)
			d, _, err := startKernel(t, kernelOpts{}, func(k *fakeKernel, h Header, mad []byte) { <-stuck })
			if err != nil {
				t.Fatal(err)
			}
			// A small send buffer fills after a few records.
			rc, err := d.f.(syscall.Conn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 1) })
			blocked := make(chan struct{})
			var once sync.Once
			testHookWriteBlocked = func() { once.Do(func() { close(blocked) }) }
			defer func() { testHookWriteBlocked = nil }()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const n = 32
			errs := make(chan error, n)
			var wg sync.WaitGroup
			quit := make(chan struct{})
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						// A long deadline: only cancellation or Close
						// may end a blocked write.
						ectx, ecancel := context.WithTimeout(ctx, time.Hour)
						err := d.Exchange(ectx, 0xffff, newReq(t, smp.ClassDirectRoute, 1), make([]byte, smp.MADSize))
						ecancel()
						select {
						case <-quit:
							errs <- err
							return
						default:
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			select {
			case <-blocked:
			case <-time.After(60 * time.Second):
				t.Fatal("writes never blocked")
			}
			close(quit)
			if how == "cancel" {
				cancel()
			} else {
				d.Close()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("Exchanges still blocked 20s after %s", how)
			}
			close(errs)
			for err := range errs {
				ok := errors.Is(err, transport.ErrClosed)
				if how == "cancel" {
					ok = errors.Is(err, transport.ErrTimeout) && errors.Is(err, context.Canceled)
				}
				if !ok {
					t.Errorf("after %s: %v", how, err)
				}
			}
		})
	}
}
