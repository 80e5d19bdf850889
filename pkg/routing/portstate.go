package routing

import (
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// The port-state rule every tool applies.
//
// A port passes data packets only in state Active. In Down it passes
// nothing; in Initialize and Armed (a link that came up with no subnet
// manager to activate it, or one the SM has not finished with) it passes
// SMPs only: a GMP (a PerfMgt query, an SA request) or any other packet
// routed through it is dropped, and the port sending it counts it in
// PortXmitDiscards. So:
//
//   - reachability: a destination is reachable only when every port its
//     route uses is Active (the source port, both ends of every link it
//     crosses, the destination port); otherwise it is unreachable, and
//     the error names the first port that is not (ErrNotActive);
//   - routes: the route check reports such a route as broken
//     (KindNotActive), once per port where it breaks;
//   - counters: a PMA query is sent only when the port it goes to is
//     Active; otherwise it fails at once with the port's state (a
//     failed query, as ibqueryerrors' times out), and a link with an
//     end that is not Active is not reported as an error counter
//     increase (its PortXmitDiscards count what is routed to it, our
//     own queries included).
//
// A switch's base port 0 is not a physical port and is always taken as
// Active; enhanced port 0 has a state of its own.

// ErrNotActive: a port on the route is not Active (see PortActive).
var ErrNotActive = errors.New("port is not Active")

// PortActive reports whether pp passes data packets: its PortState is
// Active (a switch's base port 0: always).
func PortActive(pp *model.PhysPort) bool {
	if pp == nil {
		return false
	}
	if pp.Num == 0 && pp.Node.IsSwitch() && !(pp.Node.HasSwitchInfo && pp.Node.SwitchInfo.EnhancedPort0) {
		return true
	}
	return pp.Info.PortState == smp.PortStateActive
}

// PortStateError names a port that is not Active.
type PortStateError struct {
	Port *model.PhysPort
}

func (e *PortStateError) Error() string {
	p := e.Port
	return fmt.Sprintf("port %d of %s %q is %s, not Active", p.Num, nodeKind(p.Node), p.Node.Description(), smp.PortStateText(p.Info.PortState))
}

// Unwrap returns ErrNotActive.
func (e *PortStateError) Unwrap() error { return ErrNotActive }

func nodeKind(n *model.Node) string {
	if n.IsSwitch() {
		return "switch"
	}
	if n.Type() == smp.NodeRouter {
		return "router"
	}
	return "CA"
}

// CheckActive applies the rule to a route: the source port, the ports
// of every hop (out, then in) and the destination port. It returns a
// *PortStateError for the first one that is not Active, else nil.
func CheckActive(src *model.PhysPort, hops []Hop, dst *model.PhysPort) error {
	check := func(pp *model.PhysPort) error {
		if pp != nil && !PortActive(pp) {
			return &PortStateError{Port: pp}
		}
		return nil
	}
	if err := check(src); err != nil {
		return err
	}
	for _, h := range hops {
		if err := check(h.Out); err != nil {
			return err
		}
		if err := check(h.In); err != nil {
			return err
		}
	}
	return check(dst)
}
