package routing

import (
	"context"
	"errors"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ReadBlock reads block blk (LIDs 64·blk..64·blk+63) of sw's
// LinearForwardingTable by directed route and returns it as a table
// covering LIDs 0..64·blk+63 in which every other entry is NoRoute.
func ReadBlock(ctx context.Context, q *discover.Querier, sw *model.Node, blk int) ([]byte, error) {
	tab := make([]byte, (blk+1)*64)
	for i := range tab {
		tab[i] = NoRoute
	}
	var buf [smp.DataSize]byte
	if err := q.Get(ctx, sw.Path, smp.AttrLinearForwardingTable, uint32(blk), buf[:]); err != nil {
		return nil, err
	}
	copy(tab[blk*64:], buf[:64])
	return tab, nil
}

// TraceLive follows the route from src to dlid as Trace does, reading
// the forwarding tables on the way as ibtracert does: from each switch
// the route reaches, only the block holding dlid. A switch whose
// SwitchInfo puts dlid beyond both its LinearFDBCap and its
// LinearFDBTop is not read and counts as a black hole. An SMP that fails
// ends the trace with that error (a *discover.SMPError or a
// *discover.FatalError, not a *RouteError) and the hops taken so far.
func TraceLive(ctx context.Context, q *discover.Querier, f *model.Fabric, src *model.PhysPort, dlid uint16) ([]Hop, *model.PhysPort, error) {
	t := NewTables()
	for {
		hops, dst, err := Trace(f, t, src, dlid)
		var re *RouteError
		if !errors.As(err, &re) || !errors.Is(re.Err, ErrNoTable) || t.Table(re.At) != nil {
			return hops, dst, err
		}
		sw := re.At
		if sw.HasSwitchInfo && uint32(dlid) >= uint32(sw.SwitchInfo.LinearFDBCap) && dlid > sw.SwitchInfo.LinearFDBTop {
			t.Set(sw, []byte{}) // read nothing: every entry NoRoute
			continue
		}
		tab, rerr := ReadBlock(ctx, q, sw, int(dlid)/64)
		if rerr != nil {
			return hops, nil, rerr
		}
		t.Set(sw, tab)
	}
}
