package model

import (
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// DefaultMaxOpVLs is OpenSM's default max_op_vls option (VL0-14).
const DefaultMaxOpVLs uint8 = 5

// ErrNoPortInfo: a port on a path has no PortInfo.
var ErrNoPortInfo = errors.New("port has no PortInfo")

// LinkCalc is the outcome of an OpenSM link MTU or operational-VL
// calculation for one port, with what the SM would have logged.
type LinkCalc struct {
	// Value is the code the SM writes (NeighborMTU or OperationalVLs).
	Value uint8
	// Local and Remote are the capabilities (MTUCap or VLCap) of the two
	// ends; Remote is meaningful only with HasRemote.
	Local, Remote uint8
	HasRemote     bool
	// Current is the port's present NeighborMTU or OperationalVLs.
	Current uint8
	// Mismatch: the two capabilities differ and Value differs from
	// Current (OpenSM logs "MTU mismatch" / "OP_VLS mismatch").
	Mismatch bool
	// Forced: the result was 0 and was corrected to 1.
	Forced bool
	// Capped: the result was lowered to the max_op_vls option (VLs only).
	Capped bool
}

func (c LinkCalc) String() string {
	s := fmt.Sprintf("value %d (current %d, local cap %d", c.Value, c.Current, c.Local)
	if c.HasRemote {
		s += fmt.Sprintf(", remote cap %d", c.Remote)
	}
	s += ")"
	if c.Mismatch {
		s += " mismatch"
	}
	if c.Forced {
		s += " forced"
	}
	if c.Capped {
		s += " capped"
	}
	return s
}

// remoteWithInfo is p's peer when it has PortInfo (osm_physp_is_valid).
func remoteWithInfo(p *PhysPort) *PhysPort {
	if r := p.Remote; r != nil && r.HasInfo {
		return r
	}
	return nil
}

// CheckLinkMTU computes the MTU OpenSM sets on port p
// (osm_physp_calc_link_mtu): the lower MTUCap of the two ends, or the
// current NeighborMTU when p has no peer with PortInfo; 0 becomes 1 (256).
func CheckLinkMTU(p *PhysPort) LinkCalc {
	c := LinkCalc{Local: p.Info.MTUCap, Current: p.Info.NeighborMTU}
	if r := remoteWithInfo(p); r != nil {
		c.HasRemote, c.Remote = true, r.Info.MTUCap
		c.Value = min(c.Local, c.Remote)
		c.Mismatch = c.Local != c.Remote && c.Value != c.Current
	} else {
		c.Value = c.Current
	}
	if c.Value == 0 {
		c.Value, c.Forced = smp.MTU256, true
	}
	return c
}

// CalcLinkMTU is CheckLinkMTU's value.
func CalcLinkMTU(p *PhysPort) uint8 { return CheckLinkMTU(p).Value }

// CheckLinkOpVLs computes the operational VLs OpenSM sets on port p
// (osm_physp_calc_link_op_vls): the lower VLCap of the two ends, or the
// current OperationalVLs when p has no peer with PortInfo; 0 becomes 1;
// then at most maxOpVLs (0 means DefaultMaxOpVLs).
func CheckLinkOpVLs(p *PhysPort, maxOpVLs uint8) LinkCalc {
	if maxOpVLs == 0 {
		maxOpVLs = DefaultMaxOpVLs
	}
	c := LinkCalc{Local: p.Info.VLCap, Current: p.Info.OperationalVLs}
	if r := remoteWithInfo(p); r != nil {
		c.HasRemote, c.Remote = true, r.Info.VLCap
		c.Value = min(c.Local, c.Remote)
		c.Mismatch = c.Local != c.Remote && c.Value != c.Current
	} else {
		c.Value = c.Current
	}
	if c.Value == 0 {
		c.Value, c.Forced = 1, true
	}
	if c.Value > maxOpVLs {
		c.Value, c.Capped = maxOpVLs, true
	}
	return c
}

// CalcLinkOpVLs is CheckLinkOpVLs's value.
func CalcLinkOpVLs(p *PhysPort, maxOpVLs uint8) uint8 { return CheckLinkOpVLs(p, maxOpVLs).Value }

// PortRate is the PathRecord rate code of p's link: LinkWidthActive ×
// speed, extended speeds counting only when the capability-mask PortInfo
// (switch port 0 for switch ports) has IsExtendedSpeedsSupported.
func PortRate(p *PhysPort) uint8 { return smp.PortRate(&p.Info, p.CapInfo()) }

// PathLimits are the MTU and rate of a path (osm_sa_path_record
// pr_rcv_get_path_parms) and the ports that set them.
type PathLimits struct {
	// MTU is the lowest MTUCap on the path; MTUPort the first port with it.
	MTU     uint8
	MTUPort *PhysPort
	// Rate is the lowest rate by OpenSM's ordered_rates rank (not by code
	// value); RatePort the first port with it.
	Rate     uint8
	RatePort *PhysPort
}

// PathParams folds the MTUCap and rate of every port of a path, in path
// order, as OpenSM does for a PathRecord: the source port, then for each
// switch on the way its ingress and egress ports, then the destination
// port. NeighborMTU is not used. It fails for an empty path or a nil port
// or one without PortInfo.
func PathParams(ports []*PhysPort) (PathLimits, error) {
	var l PathLimits
	if len(ports) == 0 {
		return l, errors.New("empty path")
	}
	for i, p := range ports {
		if p == nil {
			return PathLimits{}, fmt.Errorf("path port %d: nil", i)
		}
		if !p.HasInfo {
			return PathLimits{}, fmt.Errorf("path port %d (%v): %w", i, p, ErrNoPortInfo)
		}
		mtu, rate := p.Info.MTUCap, PortRate(p)
		if i == 0 || mtu < l.MTU {
			l.MTU, l.MTUPort = mtu, p
		}
		if i == 0 || smp.CompareRates(rate, l.Rate) < 0 {
			l.Rate, l.RatePort = rate, p
		}
	}
	return l, nil
}
