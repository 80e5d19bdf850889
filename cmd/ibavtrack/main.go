// Command ibavtrack checks the MTU and VL settings of every link as OpenSM
// computes them, prints the address vector (path MTU, static rate, hops)
// of the route between two ports, and watches those address vectors
// change.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Stdout, os.Stderr, os.Args)
	stop()
	os.Exit(code)
}
