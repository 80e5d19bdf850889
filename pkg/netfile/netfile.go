// Package netfile reads and writes ibsim net files: the fabric descriptions
// that the ibsim simulator loads, of which ibnetdiscover's topology output is
// a valid subset.
//
// Parse accepts what ibsim 0.10 accepts, with ibsim's quirks: header lines
// "Switch|Hca|Ca|Rt <n> "<id>" [# "<desc>" [enhanced|base] port 0 lid L lmc M]",
// port lines "[p] "<remote>"[rp]" with the ibnetdiscover annotations
// ("(guid)", "# lid N lmc M "desc" lid RL 4xEDR"), the w=/s=/e= enable masks,
// the setting lines (vendid=, devid=, sysimgguid=, switchguid=, caguid=,
// hcaguids=, rtguid=, width=, speed=, extspeed=, module=), include "file"
// (nested at most 9 deep, resolved relative to the including file; ibsim
// itself resolves it against its working directory), "@[p]" port aliases
// and "do <console command>" lines, which are kept as Commands for the
// simulator to run. Lines longer than 255 bytes are split into 255-byte
// pieces, as ibsim's reader does, and a line is cut at a NUL byte.
//
// GUIDs are allocated as ibsim allocates them: switches from 0x200000 (one
// GUID per switch), CAs from 0x100000 and routers from 0 (node GUID = base,
// port n = base+n, the base advancing by NumPorts+1), unless a
// switchguid=/caguid=/rtguid= line sets the next one ('=' absolute, '+'
// relative to the last absolute value).
//
// Extension: a port line may carry "mtu=<1..5>" (MTUCap code) and
// "vl=<1..5>" (VLCap code). ibsim ignores these tokens (its option parser
// only knows w=, s= and e=), so such files still load into ibsim, but only
// the embedded simulator (package sim) honours them.
//
// Both ends of every link must name each other and their enable masks must
// intersect, otherwise parsing fails with a *ParseError naming the file and
// line, like ibsim's startup check.
package netfile

import (
	"fmt"
)

// NodeType is the NodeInfo node type.
type NodeType uint8

// Node types.
const (
	CA     NodeType = 1
	Switch NodeType = 2
	Router NodeType = 3
)

// String returns the net-file keyword of the type: Ca, Switch or Rt.
func (t NodeType) String() string {
	switch t {
	case CA:
		return "Ca"
	case Switch:
		return "Switch"
	case Router:
		return "Rt"
	}
	return fmt.Sprintf("NodeType(%d)", uint8(t))
}

// Link width enable-mask bits and link speed enable-mask bits as ibsim and
// PortInfo use them.
const (
	Width1x  uint8 = 1
	Width4x  uint8 = 2
	Width8x  uint8 = 4
	Width12x uint8 = 8
	Width2x  uint8 = 16

	SpeedSDR uint8 = 1
	SpeedDDR uint8 = 2
	SpeedQDR uint8 = 4

	ExtSpeedFDR uint8 = 1
	ExtSpeedEDR uint8 = 2
	ExtSpeedHDR uint8 = 4
)

// Defaults of ibsim for port enable masks.
const (
	DefaultWidth    = Width4x
	DefaultSpeed    = SpeedSDR
	DefaultExtSpeed = 0
)

// Fabric is a parsed net file: nodes in file order (the first one is
// ibsim's default attach point) and the "do" commands in file order.
type Fabric struct {
	Nodes    []Node
	Commands []Command

	index map[string]int32
}

// Node is one Switch, Ca/Hca or Rt record.
type Node struct {
	Type         NodeType
	ID           string // quoted id from the header, with the module prefix
	Desc         string // NodeDescription; ibsim uses ID when empty
	NumPorts     int
	GUID         uint64 // node GUID; CA port n has GUID+n
	SysImageGUID uint64 // NodeInfo SystemImageGUID (defaults to GUID)
	VendorID     uint32
	DeviceID     uint16
	// EnhancedPort0 is +1 for "enhanced port 0", -1 for "base port 0" and
	// 0 when the header says neither (SwitchInfo then reports base).
	EnhancedPort0 int8
	// Ports is indexed by port number and has NumPorts+1 entries; entry 0
	// is a switch's management port 0 and unused on CAs and routers.
	Ports []Port
	Pos   Pos
}

// Port is one port of a node.
type Port struct {
	Remote     int32 // index of the linked node in Fabric.Nodes, -1 if none
	RemotePort uint8
	LID        uint16
	LMC        uint8
	// Enable masks: LinkWidthEnabled, LinkSpeedEnabled, LinkSpeedExtEnabled
	// and the Mellanox FDR10 enable bit.
	WidthEnabled    uint8
	SpeedEnabled    uint8
	ExtSpeedEnabled uint8
	FDR10           bool
	// Extensions of ours (0 = ibsim's default).
	MTUCap uint8
	VLCap  uint8
	Alias  string // set on "@[p]" alias lines
}

// Linked reports whether the port has a peer.
func (p *Port) Linked() bool { return p.Remote >= 0 }

// Pos is a position in a net file.
type Pos struct {
	File string
	Line int
}

// String formats p as file:line.
func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// ParseError is a problem in a net file.
type ParseError struct {
	File string
	Line int
	Msg  string
	// Err is the cause, if there is one beyond Msg: the limit exceeded
	// (ErrTooLarge, ErrTooManyNodes) or the error that kept a file from
	// being read (errors.Is(err, fs.ErrNotExist) for a missing file).
	Err error
}

// Unwrap returns the cause, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// Error formats e as "file:line: message".
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Lookup returns the index of the node with the given id.
func (f *Fabric) Lookup(id string) (int, bool) {
	if f.index == nil {
		f.reindex()
	}
	i, ok := f.index[id]
	return int(i), ok
}

func (f *Fabric) reindex() {
	f.index = make(map[string]int32, len(f.Nodes))
	for i := range f.Nodes {
		f.index[f.Nodes[i].ID] = int32(i)
	}
}

// PortGUID returns the GUID of port p of node n as ibsim reports it: the
// node GUID on a switch, node GUID + p on a CA or router.
func (n *Node) PortGUID(p int) uint64 {
	if n.Type == Switch {
		return n.GUID
	}
	return n.GUID + uint64(p)
}

// Description returns the NodeDescription ibsim reports: Desc, or ID when
// Desc is empty, at most 63 bytes.
func (n *Node) Description() string {
	d := n.Desc
	if d == "" {
		d = n.ID
	}
	if len(d) > 63 {
		d = d[:63]
	}
	return d
}

// Counts returns the -N, -S and -P limits ibsim needs to load f: nodes,
// switches and ports (switch ports including port 0).
func (f *Fabric) Counts() (nodes, switches, ports int) {
	for i := range f.Nodes {
		n := &f.Nodes[i]
		nodes++
		ports += n.NumPorts
		if n.Type == Switch {
			switches++
			ports++
		}
	}
	return
}
