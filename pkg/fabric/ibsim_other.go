//go:build !linux

package fabric

import (
	"context"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

func dialIBSim(context.Context, ibsim.Config) (ibsimConn, error) {
	return nil, ErrIBSimLinuxOnly
}
