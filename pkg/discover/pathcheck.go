package discover

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// PathError is a directed route that leads nowhere: the hop whose output
// port cannot be taken, and why.
type PathError struct {
	Path smp.DRPath
	Hop  int    // 1..Path.Len(): the hop whose port is at fault
	Msg  string // e.g. `switch "spine01" has 40 ports, no port 99`
}

func (e *PathError) Error() string { return "hop " + strconv.Itoa(e.Hop) + ": " + e.Msg }

// CheckPath walks path from the local node, hop by hop, and returns a
// *PathError for the first hop that cannot be taken: a port the node
// does not have, a node past the first that is not a switch (only
// switches forward directed-route SMPs), or a port whose link is down.
// It returns nil when the path is valid as far as the nodes on it tell,
// and the error of a read that failed (the route then fails for another
// reason than its ports). It sends only Gets: NodeInfo, and
// NodeDescription and PortInfo of the nodes on the path.
func CheckPath(ctx context.Context, q *Querier, path smp.DRPath) error {
	var at smp.DRPath // the route to the node whose output port is checked
	var buf [smp.DataSize]byte
	for hop := 1; hop <= int(path.Len()); hop++ {
		if err := q.Get(ctx, at, smp.AttrNodeInfo, 0, buf[:]); err != nil {
			return err
		}
		var ni smp.NodeInfo
		if err := ni.UnmarshalBinary(buf[:]); err != nil {
			return err
		}
		port := path.Port(hop)
		name := func() string {
			var d smp.NodeDescription
			typ := smp.NodeTypeLower(ni.NodeType)
			if typ == "ca" {
				typ = "CA"
			}
			if q.Get(ctx, at, smp.AttrNodeDescription, 0, buf[:]) == nil && d.UnmarshalBinary(buf[:]) == nil {
				return fmt.Sprintf("%s %q", typ, d.String())
			}
			return fmt.Sprintf("%s 0x%016x", typ, ni.NodeGUID)
		}
		fail := func(format string, a ...any) error {
			return &PathError{Path: path, Hop: hop, Msg: fmt.Sprintf(format, a...)}
		}
		switch {
		case hop > 1 && ni.NodeType != smp.NodeSwitch:
			return fail("%s does not forward: a route ends at a CA or router", name())
		case port == 0 || port > ni.NumPorts:
			return fail("%s has %d ports, no port %d", name(), ni.NumPorts, port)
		}
		if err := q.Get(ctx, at, smp.AttrPortInfo, uint32(port), buf[:]); err != nil {
			return err
		}
		var pi smp.PortInfo
		if err := pi.UnmarshalBinary(buf[:]); err != nil {
			return err
		}
		if pi.PortState == smp.PortStateDown {
			return fail("port %d of %s is down (no link)", port, name())
		}
		next, err := at.Extend(port)
		if err != nil {
			return err
		}
		at = next
	}
	return nil
}
