package avwatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// RouteTables reads the forwarding tables a sweep of f needs to resolve
// every destination watched from src, as ibtracert reads them: following
// each route from src, from every switch it reaches the block holding
// the destination's LID, each block once. Every entry of those blocks is
// what routing.Read would give (NoRoute past a switch's LinearFDBTop, and
// for a block that fails, recorded by q); the other blocks read as
// NoRoute. It is the tables of a sweep after an incremental rediscovery
// (discover.Rediscover), where reading every switch's table would cost
// as much as the full sweep it replaces. It then reads the PortInfo of
// every port on each route (as the light sweep's probes do): one that
// differs from f's, or fails, is an error wrapping discover.ErrUntrusted
// (a route moved over a port whose change no light sweep saw: a full
// sweep must say). Its other errors are a fatal transport error or
// ctx's.
func (w *Watcher) RouteTables(ctx context.Context, q *discover.Querier, f *model.Fabric, src *model.Port) (*routing.Tables, error) {
	type swBlock struct {
		sw  *model.Node
		blk int
	}
	blocks := make(map[swBlock][]byte) // nil: NoRoute throughout
	out := routing.NewTables()
	if src == nil || src.Phys == nil {
		return out, nil
	}
	// table is sw's table as routing.Read sizes it, holding the blocks read.
	table := func(sw *model.Node, tt *routing.Tables) []byte {
		tab := tt.Table(sw)
		if tab == nil {
			tab = make([]byte, (int(sw.SwitchInfo.LinearFDBTop)/64+1)*64)
			for i := range tab {
				tab[i] = routing.NoRoute
			}
			tt.Set(sw, tab)
		}
		return tab
	}
	put := func(tt *routing.Tables, k swBlock, b []byte) {
		tab := table(k.sw, tt)
		if b == nil || len(tab) < (k.blk+1)*64 {
			return
		}
		copy(tab[k.blk*64:], b)
		for i := int(k.sw.SwitchInfo.LinearFDBTop) + 1; i < len(tab); i++ {
			tab[i] = routing.NoRoute
		}
	}
	for _, t := range w.targets {
		_, dlid, err := f.ResolveLID(t.spec, nil)
		if err != nil {
			continue
		}
		tt := routing.NewTables()
		for {
			_, _, err := routing.Trace(f, tt, src.Phys, dlid)
			var re *routing.RouteError
			if !errors.As(err, &re) || !errors.Is(re.Err, routing.ErrNoTable) || tt.Table(re.At) != nil || !re.At.HasSwitchInfo {
				break
			}
			k := swBlock{re.At, int(dlid) / 64}
			b, read := blocks[k]
			if !read {
				if dlid <= k.sw.SwitchInfo.LinearFDBTop {
					var buf [smp.DataSize]byte
					if err := q.Get(ctx, k.sw.Path, smp.AttrLinearForwardingTable, uint32(k.blk), buf[:]); err == nil {
						b = buf[:]
					} else if discover.IsStop(err) {
						return out, err
					}
				}
				blocks[k] = b
			}
			put(tt, k, b)
		}
	}
	for k, b := range blocks {
		put(out, k, b)
	}
	// A route that moved may cross ports the rediscovery took as they
	// were: read them.
	seen := make(map[*model.PhysPort]bool)
	for _, t := range w.targets {
		_, dlid, err := f.ResolveLID(t.spec, nil)
		if err != nil {
			continue
		}
		hops, dst, err := routing.Trace(f, out, src.Phys, dlid)
		ports := []*model.PhysPort{src.Phys, dst}
		for _, h := range hops {
			ports = append(ports, h.Out, h.In)
		}
		var re *routing.RouteError
		if errors.As(err, &re) && re.At != nil && re.At.IsSwitch() {
			// (where the route ends: the port the table sends it to)
			if p := out.Port(re.At, dlid); p != routing.NoRoute && int(p) <= re.At.NumPorts() {
				ports = append(ports, re.At.Port(int(p)))
			}
		}
		for _, pp := range ports {
			if pp == nil || !pp.HasInfo || seen[pp] {
				continue
			}
			seen[pp] = true
			p := discover.PortInfoProbe(pp)
			var buf [smp.DataSize]byte
			if err := q.Get(ctx, p.Path, p.Attr, p.Mod, buf[:]); err != nil {
				if discover.IsStop(err) {
					return out, err
				}
				return out, fmt.Errorf("%w: %s: %v", discover.ErrUntrusted, p.What, err)
			}
			if !p.Same(buf[:]) {
				return out, fmt.Errorf("%w: %s, on the route to %s, changed", discover.ErrUntrusted, p.What, t.spec)
			}
		}
	}
	return out, nil
}
