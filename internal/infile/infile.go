// Package infile lets a tool's input file that is a FIFO honour the first
// Ctrl-C: opening a FIFO for reading waits for a writer, and that wait
// cannot be cancelled by itself.
package infile

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// poke is how often a cancelled wait is poked until it is let go.
const poke = 10 * time.Millisecond

// UnblockOnCancel watches the input file path until stop is called: when
// path is a FIFO and ctx is done, an open of it for reading that waits
// for a writer (the tool's loader) is let go at once, by opening the FIFO
// for writing and closing it again, so the loader reads an empty input
// and returns, and the tool can see ctx's cancellation. Anything else
// than a FIFO is not watched.
func UnblockOnCancel(ctx context.Context, path string) (stop func()) {
	if !isFIFO(path) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		for {
			// (the loader may not have reached its open yet: poke until
			// it says it is done)
			if f, err := openWriter(path); err == nil {
				f.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(poke):
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Load runs load, which opens and reads the input file path, with path
// watched by UnblockOnCancel. When path is a FIFO and ctx was done
// meanwhile it returns an error naming flag and path that wraps ctx's
// error (load's result is then an empty FIFO's, of no use); anything else
// is load's own result.
func Load[T any](ctx context.Context, flag, path string, load func() (T, error)) (T, error) {
	if ctx == nil || !isFIFO(path) {
		return load()
	}
	stop := UnblockOnCancel(ctx, path)
	v, err := load()
	stop()
	if ctx.Err() != nil {
		var zero T
		return zero, fmt.Errorf("%s %s: interrupted while waiting for a writer: %w", flag, path, ctx.Err())
	}
	return v, err
}

func isFIFO(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&fs.ModeNamedPipe != 0
}
