// Command ibdiscover discovers an InfiniBand fabric by directed-route SMPs
// and prints it in ibnetdiscover's formats, or as JSON or DOT.
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
