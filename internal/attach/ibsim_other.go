//go:build !linux

package attach

import (
	"context"
	"errors"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

// ErrIBSimLinuxOnly: ibsim, and so --ibsim, runs on Linux only.
var ErrIBSimLinuxOnly = errors.New("--ibsim: ibsim and its client run on Linux only; use --sim FILE (the embedded simulator reads the same net files) or --load-cache FILE")

func dialIBSim(context.Context, ibsim.Config) (ibsimConn, error) {
	return nil, ErrIBSimLinuxOnly
}
