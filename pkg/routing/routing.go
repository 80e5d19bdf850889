// Package routing reads the switches' linear forwarding tables and follows
// unicast routes through them, hop by hop, over a discovered fabric.
package routing

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// NoRoute is the LFT entry meaning "no route".
const NoRoute = 0xFF

// MaxHops is the longest route followed before it is called a loop.
const MaxHops = 64

// Tables holds the linear forwarding tables of a fabric's switches.
type Tables struct {
	lft map[*model.Node][]byte // index = LID, value = egress port
}

// NewTables returns empty tables (tests and simulators fill them with Set).
func NewTables() *Tables { return &Tables{lft: make(map[*model.Node][]byte)} }

// Set stores sw's table (index LID → egress port).
func (t *Tables) Set(sw *model.Node, lft []byte) { t.lft[sw] = lft }

// Table returns sw's table, or nil when it was not read.
func (t *Tables) Table(sw *model.Node) []byte { return t.lft[sw] }

// Port returns sw's egress port for lid (NoRoute when unknown).
func (t *Tables) Port(sw *model.Node, lid uint16) uint8 {
	tab := t.lft[sw]
	if int(lid) >= len(tab) {
		return NoRoute
	}
	return tab[lid]
}

// Read reads every switch's LinearForwardingTable by directed route:
// blocks 0..LinearFDBTop/64, each switch by one worker, workers switches
// at once. Failed blocks read as NoRoute and are recorded by q.
func Read(ctx context.Context, q *discover.Querier, f *model.Fabric, workers int) (*Tables, error) {
	sws := f.Switches()
	tabs := make([][]byte, len(sws))
	err := discover.Parallel(ctx, workers, len(sws), func(ctx context.Context, i int) error {
		sw := sws[i]
		if !sw.HasSwitchInfo {
			return nil
		}
		top := int(sw.SwitchInfo.LinearFDBTop)
		tab := make([]byte, (top/64+1)*64)
		for j := range tab {
			tab[j] = NoRoute
		}
		var buf [smp.DataSize]byte
		for blk := 0; blk <= top/64; blk++ {
			if err := q.Get(ctx, sw.Path, smp.AttrLinearForwardingTable, uint32(blk), buf[:]); err != nil {
				if discover.IsStop(err) {
					return err
				}
				continue
			}
			copy(tab[blk*64:], buf[:])
		}
		if top+1 < len(tab) {
			for j := top + 1; j < len(tab); j++ {
				tab[j] = NoRoute
			}
		}
		tabs[i] = tab
		return nil
	})
	t := NewTables()
	for i, sw := range sws {
		if tabs[i] != nil {
			t.lft[sw] = tabs[i]
		}
	}
	return t, err
}

// Hop is one step of a route: leaving Out (a port of a node) towards In,
// the port it arrives at.
type Hop struct {
	Out *model.PhysPort
	In  *model.PhysPort
}

// Route errors.
var (
	// ErrBlackHole: a switch has no route (0xFF) for the destination.
	ErrBlackHole = errors.New("no route (black hole)")
	// ErrDownPort: a switch routes to a port with no link.
	ErrDownPort = errors.New("routed to a port with no link")
	// ErrLoop: the route visits a switch twice.
	ErrLoop = errors.New("forwarding loop")
	// ErrNoTable: a switch on the route has no forwarding table read.
	ErrNoTable = errors.New("switch forwarding table not read")
	// ErrTransitCA: a route reaches a CA or router that is not the destination.
	ErrTransitCA = errors.New("route reaches a non-switch node that is not the destination")
)

// RouteError says where a route broke.
type RouteError struct {
	At   *model.Node // the node where it broke
	DLID uint16
	Err  error
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("to LID %d at %s (0x%016x): %v", e.DLID, e.At.Description(), e.At.GUID(), e.Err)
}

// Unwrap returns the kind of failure.
func (e *RouteError) Unwrap() error { return e.Err }

// Trace follows the route from src to dlid through the forwarding
// tables. It returns the hops taken (also when it fails: up to the break)
// and the destination port (nil on failure). A route from a port to
// itself has no hops.
func Trace(f *model.Fabric, t *Tables, src *model.PhysPort, dlid uint16) ([]Hop, *model.PhysPort, error) {
	var hops []Hop
	at := src
	if owns(at, dlid) {
		return nil, at, nil
	}
	if !at.Node.IsSwitch() {
		if at.Remote == nil {
			return nil, nil, &RouteError{At: at.Node, DLID: dlid, Err: ErrDownPort}
		}
		hops = append(hops, Hop{Out: at, In: at.Remote})
		at = at.Remote
	}
	seen := make(map[*model.Node]bool)
	for len(hops) <= MaxHops {
		n := at.Node
		if owns(at, dlid) {
			return hops, at, nil
		}
		if !n.IsSwitch() {
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrTransitCA}
		}
		if seen[n] {
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrLoop}
		}
		seen[n] = true
		tab := t.Table(n)
		if tab == nil {
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrNoTable}
		}
		out := t.Port(n, dlid)
		if out == NoRoute || int(out) > n.NumPorts() {
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrBlackHole}
		}
		if out == 0 {
			// port 0 is the switch itself: only right if it owns dlid
			if z := n.Port(0); z != nil && owns(z, dlid) {
				return hops, z, nil
			}
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrBlackHole}
		}
		pp := n.Port(int(out))
		if pp == nil || pp.Remote == nil {
			return hops, nil, &RouteError{At: n, DLID: dlid, Err: ErrDownPort}
		}
		hops = append(hops, Hop{Out: pp, In: pp.Remote})
		at = pp.Remote
	}
	return hops, nil, &RouteError{At: at.Node, DLID: dlid, Err: ErrLoop}
}

// owns reports whether pp's logical port holds dlid (a switch: any of its
// ports, through port 0's LID range).
func owns(pp *model.PhysPort, dlid uint16) bool {
	base := pp.BaseLID()
	if base == 0 {
		return false
	}
	return dlid >= base && uint32(dlid) < uint32(base)+1<<pp.LMC()
}
