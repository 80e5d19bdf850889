// Command ibhops prints the LID hop matrix of an InfiniBand fabric in
// OpenSM's opensm-lid-matrix.dump format, answers least-hop queries
// between ports, traces routes through the switches' forwarding tables
// (ibtracert's format), prints one switch's table (ibroute's format) and
// checks every switch-to-LID route for black holes, loops and detours.
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
