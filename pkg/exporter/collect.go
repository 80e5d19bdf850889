package exporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ErrUnreachable wraps a sweep that found nothing of the fabric (its
// start node did not answer): the exporter keeps serving the last result.
var ErrUnreachable = errors.New("fabric unreachable")

// Config says how one collection sweeps the fabric.
type Config struct {
	Transport transport.Transport
	Discover  discover.Config
	// Input is the health checks' input; Collect sets its Result (and,
	// when nil, its Querier). Input.Counters says how the counters are
	// read (every port on its own, never cleared).
	Input health.Input
	// Prepare, when set, completes Input after discovery (an SA client).
	Prepare func(ctx context.Context, res *discover.Result, in *health.Input)
	// Checks are the health checks run (health.Checks' names).
	Checks []string
	// Name is a node's name for the labels (nil: NodeDescription).
	Name func(*model.Node) string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Collect sweeps the fabric once: discovery, every port's counters and
// the health checks, together. A fabric whose start node does not answer
// is an error wrapping ErrUnreachable; any other part that fails leaves
// the collection partial.
func Collect(ctx context.Context, cfg Config) (*Collection, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	res, err := discover.Discover(ctx, cfg.Transport, cfg.Discover)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if res.Interrupted {
		return nil, fmt.Errorf("interrupted during discovery: %w", ctx.Err())
	}
	in := cfg.Input
	in.Result = res
	// the metrics have every port's counters: a switch is read port by
	// port, not only through its AllPortSelect sum; each port's values
	// are packed as they arrive, and the report keeps only the samples
	// the counters check reports
	st := newPortStore()
	in.Counters.PerPort, in.Counters.OverOnly, in.Counters.Sampled = true, true, st.add
	if in.Querier == nil {
		in.Querier = &discover.Querier{Transport: cfg.Transport, Timeout: cfg.Discover.Timeout, Retries: cfg.Discover.Retries}
	}
	if cfg.Prepare != nil {
		cfg.Prepare(ctx, res, &in)
	}
	c := &Collection{At: start, Result: res, Name: cfg.Name, MaxOpVLs: in.MaxOpVLs, ports: st}
	if len(cfg.Checks) > 0 {
		rep, err := health.Run(ctx, in, cfg.Checks)
		if err != nil {
			return nil, fmt.Errorf("checks: %w", err)
		}
		c.Health = rep
		c.Counters = rep.Counters
	}
	if c.Counters == nil && !slices.Contains(cfg.Checks, health.CheckCounters) {
		cc := in.Counters
		cc.Querier, cc.PerPort = in.Querier, true
		cc.ClearErrors, cc.ClearCounts, cc.Details = false, false, false
		rep, err := portcounters.Read(ctx, cc, res.Fabric)
		c.Counters, c.CountersErr = rep, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	c.Duration = now().Sub(start)
	return c, nil
}
