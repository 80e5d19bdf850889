// Package linkinfo renders a discovered fabric as iblinkinfo
// (infiniband-diags 44) prints it: one block per node, one line per
// physical port with its width, speed, state and peer, and the "Could be"
// hints of links running below what both ends support. The text is
// byte-identical with iblinkinfo's for its options default, -l, -p, -d,
// -S/-G, -D, --switches-only, --cas-only, --node-name-map and
// --load-cache (the last two are the caller's: a name map and a fabric
// loaded from a cache). (iblinkinfo 44 lists -R in its source but rejects
// it as an invalid option, exit status 2.)
package linkinfo

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/chassis"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ErrPortNotFound: the port selected by GUID or directed route is not in
// the fabric (or not of the type Only keeps). iblinkinfo prints "Failed to
// find port: ARG" on stderr and nothing on stdout, and exits 0.
var ErrPortNotFound = errors.New("Failed to find port") //nolint:staticcheck // iblinkinfo's words

// Only restricts the nodes printed to one type.
type Only int

// The node types Only selects.
const (
	AllNodes     Only = iota
	SwitchesOnly      // --switches-only
	CAsOnly           // --cas-only
)

// Options mirror iblinkinfo's flags.
type Options struct {
	// Line is -l: every link on one line, with both ends' GUIDs and the
	// node name, no node headers.
	Line bool
	// Additional is -p: " (HOQ:n VL_Stall:n)" after the state of every
	// port that is not Down.
	Additional bool
	// Down is -d: only ports whose PortState is Down.
	Down bool
	// Only is --switches-only or --cas-only.
	Only Only
	// ByGUID is -S/-G: print only the node owning port GUID.
	ByGUID bool
	GUID   uint64
	// ByPath is -D: print only the node at the directed route Path from
	// the fabric's start node (f.From).
	ByPath bool
	Path   smp.DRPath
	// Names is --node-name-map (nil: node descriptions).
	Names *nodenamemap.Map
}

// Render writes f as iblinkinfo prints it with opts. It fails with
// ErrPortNotFound (having written nothing) when ByGUID or ByPath selects
// no node, and with w's error.
func Render(w io.Writer, f *model.Fabric, opts Options) error {
	r := renderer{o: &opts}
	if chassis.HasExtPorts(f) {
		r.g = chassis.Group(f)
	}
	if opts.ByGUID || opts.ByPath {
		n, err := Select(f, opts)
		if err != nil {
			return err
		}
		if opts.ByPath && !opts.ByGUID {
			if n.IsSwitch() && r.g != nil {
				n, r.g = partialSwitchScan(f, n, opts.Path)
			} else {
				n = asPartialScan(f, n, opts.Path)
			}
		}
		r.node(n)
		_, err = w.Write(r.b)
		return err
	}
	// libibnetdisc's node lists are newest first: reverse discovery order
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		if !opts.keeps(n) {
			continue
		}
		r.node(n)
		if len(r.b) >= 32<<10 {
			if _, err := w.Write(r.b); err != nil {
				return err
			}
			r.b = r.b[:0]
		}
	}
	if len(r.b) > 0 {
		_, err := w.Write(r.b)
		return err
	}
	return nil
}

// Select returns the node ByGUID or ByPath selects (ByGUID when both are
// set, as iblinkinfo), or ErrPortNotFound.
func Select(f *model.Fabric, opts Options) (*model.Node, error) {
	var n *model.Node
	var arg string
	switch {
	case opts.ByGUID:
		arg = "0x" + strconv.FormatUint(opts.GUID, 16)
		if p := f.PortByGUID(opts.GUID); p != nil {
			n = p.Node
		} else {
			n = nodeOfPortGUID(f, opts.GUID)
		}
	case opts.ByPath:
		arg = opts.Path.String()
		n = walk(f, opts.Path)
	default:
		return nil, fmt.Errorf("%w: neither a GUID nor a directed route given", ErrPortNotFound)
	}
	if n == nil || !opts.keeps(n) {
		return nil, fmt.Errorf("%w: %s", ErrPortNotFound, arg)
	}
	return n, nil
}

// nodeOfPortGUID finds the node with a physical port of GUID guid (ports
// that were never registered as logical ports, e.g. without PortInfo).
func nodeOfPortGUID(f *model.Fabric, guid uint64) *model.Node {
	for _, n := range f.Nodes {
		for _, p := range n.Ports {
			if p != nil && p.GUID == guid {
				return n
			}
		}
	}
	return nil
}

// asPartialScan returns n as iblinkinfo -D shows it: libibnetdisc's
// partial scan starts at n with a hop budget of one, which a switch
// survives whole but a CA does not (libibnetdisc reads a CA's ports only
// as the scan reaches them):
//   - the local CA (route "0") shows only its local port;
//   - a CA one hop away shows only the port the route enters it by,
//     unlinked ("Port not available": the scan cannot step back to the
//     local node);
//   - farther away, that port is linked to the switch one hop back at the
//     port the route enters that switch by (the port facing the
//     initiator, not the one facing n), and n's other ports show only
//     when linked to that switch or to one of its neighbours, which the
//     scan reaches before it runs out of hops.
func asPartialScan(f *model.Fabric, n *model.Node, path smp.DRPath) *model.Node {
	if n.IsSwitch() {
		return n
	}
	c := *n
	c.Ports = make([]*model.PhysPort, len(n.Ports))
	keep := func(p *model.PhysPort, remote *model.PhysPort) {
		q := *p
		q.Node = &c
		q.Remote = remote
		c.Ports[q.Num] = &q
	}
	if path.Len() == 0 {
		if p := n.Port(int(f.FromPort)); p != nil {
			keep(p, p.Remote)
		}
		return &c
	}
	prev := walk(f, path.Retract())
	entry := prev.Port(int(path.Last())).Remote // n's port on the route
	if path.Len() == 1 {
		keep(entry, nil)
		return &c
	}
	back := walk(f, path.Retract().Retract())
	keep(entry, back.Port(int(path.Port(int(path.Len())-1))).Remote)
	near := map[*model.Node]bool{prev: true}
	for _, p := range prev.Ports {
		if p != nil && p.Remote != nil {
			near[p.Remote.Node] = true
		}
	}
	for _, p := range n.Ports {
		if p != nil && p != entry && p.Remote != nil && near[p.Remote.Node] {
			keep(p, p.Remote)
		}
	}
	return &c
}

// partialSwitchScan returns switch t as iblinkinfo -D finds it, and the
// chassis grouped on what that scan finds. libibnetdisc's scan from t with
// max_hops 1 knows t and the nodes on its links, and one node more:
// extend_dpath checks the hop count before it raises it, so the first
// route a neighbour extends still goes out, and every later one is
// refused. Its requests queue in order (t's ports, then its neighbours'
// NodeInfo in t's port order, then their ports), so that route leaves the
// first switch on t's ports (past the one t was entered by) through its
// lowest LinkUp port other than the one facing t. The chassis are grouped
// from these alone: a neighbour whose chassis mates lie further away is in
// no chassis and shows no external port number.
func partialSwitchScan(f *model.Fabric, t *model.Node, path smp.DRPath) (*model.Node, *chassis.Grouping) {
	sub := &model.Fabric{}
	copies := make(map[*model.Node]*model.Node)
	cp := func(n *model.Node) *model.Node {
		if c, ok := copies[n]; ok {
			return c
		}
		c := *n
		c.Ports = make([]*model.PhysPort, len(n.Ports))
		for i, p := range n.Ports {
			if p != nil {
				q := *p
				q.Node, q.Remote = &c, nil
				c.Ports[i] = &q
			}
		}
		copies[n] = &c
		sub.Nodes = append(sub.Nodes, &c)
		return &c
	}
	link := func(p *model.PhysPort) {
		a, b := copies[p.Node].Port(int(p.Num)), cp(p.Remote.Node).Port(int(p.Remote.Num))
		if a != nil && b != nil {
			a.Remote, b.Remote = b, a
		}
	}
	ct := cp(t)
	for _, p := range t.Ports {
		if p != nil && p.Remote != nil {
			link(p)
		}
	}
	entry := -1
	if path.Len() > 0 {
		if prev := walk(f, path.Retract()); prev != nil {
			if pp := prev.Port(int(path.Last())); pp != nil && pp.Remote != nil {
				entry = int(pp.Remote.Num)
			}
		}
	}
	up := func(p *model.PhysPort) bool {
		return p != nil && p.Remote != nil && p.Info.PortPhysicalState == smp.PhysLinkUp
	}
	reached := make(map[*model.Node]bool)
	for i := 1; i < len(t.Ports); i++ {
		p := t.Ports[i]
		if i == entry || !up(p) || reached[p.Remote.Node] {
			continue
		}
		n1, facing := p.Remote.Node, int(p.Remote.Num)
		reached[n1] = true
		if !n1.IsSwitch() {
			continue
		}
		extended := false
		for j := 1; j < len(n1.Ports) && !extended; j++ {
			if q := n1.Ports[j]; j != facing && up(q) {
				link(q)
				extended = true
			}
		}
		if extended {
			break
		}
	}
	return ct, chassis.Group(sub)
}

// walk follows path from f.From over the links found, nil where it
// leaves them.
func walk(f *model.Fabric, path smp.DRPath) *model.Node {
	n := f.From
	for i := 1; n != nil && i <= int(path.Len()); i++ {
		p := n.Port(int(path.Port(i)))
		if p == nil || p.Remote == nil {
			return nil
		}
		n = p.Remote.Node
	}
	return n
}

func (o *Options) keeps(n *model.Node) bool {
	switch o.Only {
	case SwitchesOnly:
		return n.Type() == smp.NodeSwitch
	case CAsOnly:
		return n.Type() == smp.NodeCA
	}
	return true
}

type renderer struct {
	o *Options
	g *chassis.Grouping
	b []byte
}

// name is remap_node_name: the mapped name, else the description as
// received (up to its first NUL; iblinkinfo does not clean it).
func (r *renderer) name(n *model.Node) string {
	if s, ok := r.o.Names.Lookup(n.GUID()); ok {
		return s
	}
	d := &n.Desc
	k := 0
	for k < len(d) && d[k] != 0 {
		k++
	}
	return string(d[:k])
}

func (r *renderer) node(n *model.Node) {
	header := false
	for i := 1; i <= n.NumPorts() && i < len(n.Ports); i++ {
		p := n.Ports[i]
		if p == nil {
			continue
		}
		if r.o.Down && p.Info.PortState != smp.PortStateDown {
			continue
		}
		if !header && !r.o.Line {
			r.header(n)
		}
		header = true
		r.port(n, p)
	}
}

func nodeTypeStr(t uint8) string {
	switch t {
	case smp.NodeSwitch:
		return "Switch"
	case smp.NodeCA:
		return "CA"
	case smp.NodeRouter:
		return "Router"
	}
	return "??"
}

func (r *renderer) header(n *model.Node) {
	r.b = append(r.b, nodeTypeStr(n.Type())...)
	r.b = append(r.b, ": "...)
	if n.IsSwitch() {
		guid := n.Info.PortGUID
		if p0 := n.Port(0); p0 != nil {
			guid = p0.GUID
		}
		r.b = appendGUID(r.b, guid)
		r.b = append(r.b, ' ')
	}
	r.b = append(r.b, r.name(n)...)
	r.b = append(r.b, ":\n"...)
}

func appendGUID(b []byte, g uint64) []byte {
	return fmt.Appendf(b, "0x%016x", g)
}

// padLeft right-justifies s in w bytes, as C's %Ns (bytes, not runes).
func padLeft(b []byte, s string, w int) []byte {
	for i := len(s); i < w; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// capInfo is the PortInfo libibnetdisc takes capabilities from: switch
// port 0's for a switch port (nil without port 0), the port's own else.
func capInfo(p *model.PhysPort) *smp.PortInfo {
	if p.Node.IsSwitch() {
		if z := p.Node.Port(0); z != nil {
			return &z.Info
		}
		return nil
	}
	return &p.Info
}

func capMask(p *model.PhysPort) uint32 {
	if c := capInfo(p); c != nil {
		return c.CapabilityMask
	}
	return 0
}

// mlnxExt returns byte off of the Mellanox ExtendedPortInfo (0 unread).
func mlnxExt(p *model.PhysPort, off int) uint8 {
	if !p.HasExtInfo || p.ExtInfo == nil {
		return 0
	}
	return p.ExtInfo[off]
}

// Offsets of the speed fields in the Mellanox ExtendedPortInfo.
const (
	mlnxSpeedSupported = 7
	mlnxSpeedActive    = 15
)

// linkText is the "( 4X   10.0 Gbps Active/  LinkUp)" part of a port line.
func (r *renderer) linkText(p *model.PhysPort) string {
	pi := &p.Info
	iwidth, ispeed := pi.LinkWidthActive, pi.LinkSpeedActive
	var espeed uint8
	if ci := capInfo(p); ci != nil {
		if ci.CapabilityMask&smp.CapIsExtendedSpeedsSupp != 0 {
			espeed = pi.LinkSpeedExtActive
		}
	} else {
		iwidth, ispeed = 0, 0
	}
	state, phys := smp.PortStateText(pi.PortState), smp.PhysStateText(pi.PortPhysicalState)
	if pi.PortState == smp.PortStateDown {
		return fmt.Sprintf("(              %6s/%8s)", state, phys)
	}
	var speed string
	switch {
	case espeed != 0:
		speed = smp.LinkSpeedExtText(espeed)
	case mlnxExt(p, mlnxSpeedActive)&smp.MlnxSpeedFDR10 != 0:
		speed = "10.0 Gbps (FDR10)"
	default:
		speed = smp.LinkSpeedText(ispeed)
	}
	s := fmt.Sprintf("(%3s %18s %6s/%8s)", smp.LinkWidthText(iwidth), speed, state, phys)
	if r.o.Additional {
		s += fmt.Sprintf(" (HOQ:%d VL_Stall:%d)", pi.HOQLife, pi.VLStallCount)
	}
	return s
}

func (r *renderer) ext(p *model.PhysPort) string {
	if e := r.g.ExtPort(p); e != 0 {
		return strconv.Itoa(e)
	}
	return ""
}

// remoteLID is the LID iblinkinfo shows for a peer: its base LID (a
// switch's port-0 LID), for a CA 0 when it has none.
func remoteLID(p *model.PhysPort) uint16 {
	return p.BaseLID()
}

// remoteMax is the size of iblinkinfo's buffer for the peer's part of the
// line: longer text is cut there, newline included.
const remoteMax = 256 - 1

func (r *renderer) port(n *model.Node, p *model.PhysPort) {
	link := r.linkText(p)
	var remote []byte
	if q := p.Remote; q != nil {
		width, speed := Hints(p, q)
		if r.o.Line {
			remote = appendGUID(remote, q.GUID)
			remote = append(remote, ' ')
		}
		remote = fmt.Appendf(remote, "%6d %4d[%2s] \"%s\" (%s %s)\n", remoteLID(q), q.Num, r.ext(q), r.name(q.Node), width, speed)
		if len(remote) > remoteMax {
			remote = remote[:remoteMax]
		}
	} else if p.Info.PortState == smp.PortStateDown {
		remote = append(remote, "           [  ] \"\" ( )\n"...)
	} else {
		remote = append(remote, "    \"Port not available\"\n"...)
	}
	if r.o.Line {
		r.b = appendGUID(r.b, p.GUID)
		r.b = append(r.b, " \""...)
		r.b = padLeft(r.b, r.name(n), 30)
		r.b = append(r.b, "\" "...)
	} else {
		r.b = append(r.b, "      "...)
	}
	lid := n.SMALID()
	if !n.IsSwitch() {
		if !r.o.Line {
			r.b = appendGUID(r.b, p.GUID)
			r.b = append(r.b, ' ')
		}
		lid = p.Info.LID
	}
	r.b = fmt.Appendf(r.b, "%6d %4d[%2s] ==%s==>  ", lid, p.Num, r.ext(p), link)
	r.b = append(r.b, remote...)
}

// Hints returns iblinkinfo's "Could be" messages for the link from p to
// its peer q (get_max_msg): the widest width both support when p runs
// another, and the fastest speed both support when p runs slower (the
// extended speeds when both advertise them, FDR10 when both support it).
// Either is "" when the link runs at the best both ends support.
func Hints(p, q *model.PhysPort) (width, speed string) {
	maxWidth := maxWidthOf(p.Info.LinkWidthSupported & q.Info.LinkWidthSupported)
	if maxWidth&p.Info.LinkWidthActive == 0 {
		width = "Could be " + smp.LinkWidthText(maxWidth)
	}
	if capMask(p)&smp.CapIsExtendedSpeedsSupp != 0 && capMask(q)&smp.CapIsExtendedSpeedsSupp != 0 &&
		p.Info.LinkSpeedExtSupported != 0 && q.Info.LinkSpeedExtSupported != 0 {
		m := highestBit(p.Info.LinkSpeedExtSupported & q.Info.LinkSpeedExtSupported)
		if m&p.Info.LinkSpeedExtActive == 0 {
			speed = "Could be " + smp.LinkSpeedExtText(m)
		}
		return width, speed
	}
	if mlnxExt(p, mlnxSpeedSupported)&smp.MlnxSpeedFDR10 != 0 && mlnxExt(q, mlnxSpeedSupported)&smp.MlnxSpeedFDR10 != 0 {
		if mlnxExt(p, mlnxSpeedActive)&smp.MlnxSpeedFDR10 == 0 {
			if p.Info.LinkSpeedActive == smp.SpeedQDR {
				speed = "Could be FDR10 (Found link at QDR but expected speed is FDR10)"
			} else {
				speed = "Could be FDR10"
			}
		}
		return width, speed
	}
	m := highestBit(p.Info.LinkSpeedSupported & q.Info.LinkSpeedSupported)
	if m&p.Info.LinkSpeedActive == 0 {
		speed = "Could be " + smp.LinkSpeedText(m)
	}
	return width, speed
}

// maxWidthOf is get_max_width: the widest width in a LinkWidthSupported
// mask (12X, 8X, 4X, 2X, else 1X).
func maxWidthOf(m uint8) uint8 {
	switch {
	case m&smp.Width12x != 0:
		return smp.Width12x
	case m&smp.Width8x != 0:
		return smp.Width8x
	case m&smp.Width4x != 0:
		return smp.Width4x
	case m&smp.Width2x != 0:
		return smp.Width2x
	}
	return smp.Width1x
}

// highestBit is get_max: the highest bit set in m, 1 for none.
func highestBit(m uint8) uint8 {
	r := uint8(1)
	for m >>= 1; m != 0; m >>= 1 {
		r <<= 1
	}
	return r
}
