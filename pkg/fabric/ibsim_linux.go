package fabric

import (
	"context"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

func dialIBSim(ctx context.Context, cfg ibsim.Config) (ibsimConn, error) {
	return ibsim.Dial(ctx, cfg)
}
