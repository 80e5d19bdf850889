//go:build !linux

package umad

import (
	"fmt"

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
