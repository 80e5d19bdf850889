package main

import (
	"context"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

func dialIBSim(ctx context.Context, cfg ibsim.Config) (transport.Transport, error) {
	return ibsim.Dial(ctx, cfg)
}
