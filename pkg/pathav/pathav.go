// Package pathav computes what a consumer of the fabric would use to reach
// a destination: the address vector (DLID, SLID, SL, path MTU, static
// rate, hop count) of the route the switches' forwarding tables give, with
// the MTU and rate folded as OpenSM folds them for a PathRecord
// (osm_sa_path_record pr_rcv_get_path_parms), and the link checks OpenSM
// makes when it sets NeighborMTU and OperationalVLs
// (osm_physp_calc_link_mtu, osm_physp_calc_link_op_vls).
//
// Everything works on a discovered model.Fabric and forwarding tables
// read by package routing; nothing here sends SMPs.
package pathav

import (
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Errors of Resolve.
var (
	// ErrNoLID: the source or destination port has no LID (no SM ran).
	ErrNoLID = errors.New("port has no LID")
	// ErrNilPort: a nil source or destination.
	ErrNilPort = errors.New("nil port")
	// ErrLIDRange: a LID that is not one of the port's (base .. base+2^LMC-1).
	ErrLIDRange = errors.New("not in the port's LID range")
)

// Role says why a port is on a path.
type Role uint8

// Roles of the ports of a path, in path order.
const (
	// Source is the source port (a switch source: its port 0).
	Source Role = iota + 1
	// Ingress is the port a switch on the way receives the packet on.
	Ingress
	// Egress is the port a switch on the way forwards it through.
	Egress
	// Destination is the destination port (a switch destination: the port
	// the route arrives at).
	Destination
)

func (r Role) String() string {
	switch r {
	case Source:
		return "source"
	case Ingress:
		return "ingress"
	case Egress:
		return "egress"
	case Destination:
		return "destination"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// PathPort is one port OpenSM folds into a PathRecord, with its values.
type PathPort struct {
	Port *model.PhysPort
	Role Role
	// Hop is the index of the link the port belongs to (0 = the first
	// link after the source); the source port of a switch has -1.
	Hop    int
	MTUCap uint8 // PortInfo.MTUCap
	Rate   uint8 // PathRecord rate code of the port's link (model.PortRate)
	// SetsMTU and SetsRate mark the port that sets the path's limit (the
	// first one on the path with the lowest value).
	SetsMTU, SetsRate bool
}

// Path is a resolved route and its address vector.
type Path struct {
	Src, Dst *model.Port
	// Hops are the links the route crosses (routing.Trace); DstPhys is
	// the physical port it arrives at.
	Hops    []routing.Hop
	DstPhys *model.PhysPort
	// Ports are the ports folded for MTU and rate, in path order.
	Ports []PathPort
	// Limits are the path MTU and rate and the ports that set them.
	Limits model.PathLimits
	// AV is the address vector (SL 0; HopCount = links crossed).
	AV model.AV
}

// PortName names a physical port for people: "<description>[<port>]".
func PortName(p *model.PhysPort) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprintf("%s[%d]", p.Node.Description(), p.Num)
}

// Resolve follows the forwarding tables from src to dst's base LID and
// computes the address vector with src's base LID as SLID. It fails with
// a *routing.RouteError when the route breaks, with a
// *routing.PortStateError (routing.ErrNotActive) when a port it uses is
// not Active, and with ErrNoLID when either end has no LID.
func Resolve(f *model.Fabric, t *routing.Tables, src, dst *model.Port) (*Path, error) {
	if src == nil || dst == nil || src.Phys == nil || dst.Phys == nil {
		return nil, ErrNilPort
	}
	return ResolveLIDs(f, t, src, src.BaseLID(), dst, dst.BaseLID())
}

// ResolveLIDs is Resolve with the exact LIDs to use: slid, one of src's
// LIDs, is the AV's SLID; dlid, one of dst's LIDs, is its DLID and the
// LID whose route is followed (under an LMC > 0 each LID of a port may
// take another route, and so another MTU and rate, as OpenSM's
// PathRecord for that SLID:DLID pair). A LID outside the port's LMC range
// fails with ErrLIDRange.
func ResolveLIDs(f *model.Fabric, t *routing.Tables, src *model.Port, slid uint16, dst *model.Port, dlid uint16) (*Path, error) {
	if src == nil || dst == nil || src.Phys == nil || dst.Phys == nil {
		return nil, ErrNilPort
	}
	if src.BaseLID() == 0 {
		return nil, fmt.Errorf("source %s: %w", PortName(src.Phys), ErrNoLID)
	}
	if dst.BaseLID() == 0 {
		return nil, fmt.Errorf("destination %s: %w", PortName(dst.Phys), ErrNoLID)
	}
	if lo, hi := src.LIDRange(); slid < lo || slid > hi {
		return nil, fmt.Errorf("source %s: SLID %d: %w %d-%d", PortName(src.Phys), slid, ErrLIDRange, lo, hi)
	}
	if lo, hi := dst.LIDRange(); dlid < lo || dlid > hi {
		return nil, fmt.Errorf("destination %s: DLID %d: %w %d-%d", PortName(dst.Phys), dlid, ErrLIDRange, lo, hi)
	}
	hops, arrived, err := routing.Trace(f, t, src.Phys, dlid)
	if err != nil {
		return nil, err
	}
	// The port-state rule: a route through a port that is not Active
	// carries no data (see routing.CheckActive).
	if err := routing.CheckActive(src.Phys, hops, arrived); err != nil {
		return nil, err
	}
	p := &Path{Src: src, Dst: dst, Hops: hops, DstPhys: arrived}
	p.Ports = foldPorts(src.Phys, hops, dst.Phys)
	phys := make([]*model.PhysPort, len(p.Ports))
	for i := range p.Ports {
		phys[i] = p.Ports[i].Port
	}
	lim, err := model.PathParams(phys)
	if err != nil {
		return nil, err
	}
	p.Limits = lim
	for i := range p.Ports {
		pp := &p.Ports[i]
		pp.MTUCap, pp.Rate = pp.Port.Info.MTUCap, model.PortRate(pp.Port)
		pp.SetsMTU = pp.Port == lim.MTUPort
		pp.SetsRate = pp.Port == lim.RatePort
	}
	p.AV = model.AV{
		DLID: dlid, SLID: slid, SL: 0,
		MTU: lim.MTU, Rate: lim.Rate,
		HopCount:  uint8(min(len(hops), 255)),
		MTULimit:  PortName(lim.MTUPort),
		RateLimit: PortName(lim.RatePort),
	}
	return p, nil
}

// foldPorts lists the ports OpenSM's PathRecord walk looks at: the source
// port (a switch source: port 0, whose egress port the walk leaves
// without folding), then for each switch crossed its ingress and egress
// ports, then the destination port. A switch destination is reached
// through an ingress port and then its port 0 (the LFT's egress for the
// switch's own LID), which is the destination port. dst is the logical
// destination's physical port (port 0 for a switch).
func foldPorts(src *model.PhysPort, hops []routing.Hop, dst *model.PhysPort) []PathPort {
	out := make([]PathPort, 0, 2*len(hops)+1)
	if len(hops) == 0 {
		// Loopback: the port itself.
		return append(out, PathPort{Port: src, Role: Source, Hop: -1})
	}
	if src.Node.IsSwitch() {
		out = append(out, PathPort{Port: src, Role: Source, Hop: -1})
	} else {
		out = append(out, PathPort{Port: hops[0].Out, Role: Source, Hop: 0})
	}
	for i, h := range hops {
		if i > 0 {
			out = append(out, PathPort{Port: h.Out, Role: Egress, Hop: i})
		}
		role := Ingress
		if i == len(hops)-1 && h.In != nil && !h.In.Node.IsSwitch() {
			role = Destination
		}
		out = append(out, PathPort{Port: h.In, Role: role, Hop: i})
	}
	if last := hops[len(hops)-1].In; last != nil && last.Node.IsSwitch() {
		z := dst
		if z == nil || z.Node != last.Node {
			z = last.Node.Port(0)
		}
		if z != nil {
			out = append(out, PathPort{Port: z, Role: Destination, Hop: len(hops) - 1})
		}
	}
	return out
}

// RateText is a rate code as "<code> (<Gb/s> Gb/s)", e.g. "16 (100 Gb/s)".
func RateText(code uint8) string {
	return fmt.Sprintf("%d (%s Gb/s)", code, GbpsText(code))
}

// GbpsText is a rate code's nominal data rate, e.g. "2.5", "100", "?".
func GbpsText(code uint8) string {
	g := smp.RateGbps(code)
	if g == 0 {
		return "?"
	}
	return fmt.Sprintf("%g", g)
}

// MTUText is an MTU code in bytes ("2048"), or "?(n)".
func MTUText(code uint8) string { return smp.MTUText(code) }
