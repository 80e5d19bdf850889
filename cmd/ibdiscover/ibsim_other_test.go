//go:build !linux

package main

import (
	"context"
	"errors"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// dialIBSim: ibsim runs on Linux only (the tests that call this skip
// before, in ibsimtest.Require).
func dialIBSim(context.Context, ibsim.Config) (transport.Transport, error) {
	return nil, errors.New("ibsim runs on Linux only")
}
