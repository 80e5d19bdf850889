//go:build !linux

package umad

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Open is only available on Linux; elsewhere it reports ErrNoDevice.
func Open(fs *FS, ca string, port int) (*Device, error) {
	return nil, fmt.Errorf("umad: kernel MAD devices need Linux: %w", transport.ErrNoDevice)
}

// OpenPath is only available on Linux; elsewhere it reports ErrNoDevice.
func OpenPath(path string) (*Device, error) {
	return nil, &transport.OpError{Op: "open", Source: path, Err: transport.ErrNoDevice}
}

// writeBounded writes b to w (no bound outside Linux, where Devices
// cannot be opened).
func writeBounded(_ context.Context, w io.Writer, b []byte, _ time.Time, _ <-chan struct{}) error {
	_, err := w.Write(b)
	return err
}
