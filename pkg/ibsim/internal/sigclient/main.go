//go:build linux

// Command sigclient is a test helper: it attaches to ibsim (configured by
// the environment, as libumad2sim would be), prints "ready <slot>", sends
// DR NodeInfo Gets until SIGINT or SIGTERM, then closes the client
// (releasing its slot), prints "closed <n>" and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sigclient:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := ibsim.Dial(dctx, ibsim.ConfigFromEnv())
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("ready %d\n", c.Slot())

	m := smp.NewGet(smp.DRPath{}, smp.AttrNodeInfo, 0)
	req, _ := m.MarshalBinary()
	resp := make([]byte, smp.MADSize)
	n := 0
	for ctx.Err() == nil {
		ectx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Exchange(ectx, smp.PermissiveLID, req, resp)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, transport.ErrTimeout) {
			return err
		}
		if n++; n == 1 {
			fmt.Println("exchanging") // the test signals after this line
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Printf("closed %d\n", n)
	return nil
}
