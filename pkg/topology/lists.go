package topology

import (
	"bufio"
	"io"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ListKinds selects the node types of a list (-l, -H, -S, -R).
type ListKinds uint8

// List kinds; ListAll is -l.
const (
	ListCAs ListKinds = 1 << iota
	ListSwitches
	ListRouters
	ListAll = ListCAs | ListSwitches | ListRouters
)

// WriteList writes ibnetdiscover's node list: CAs, then switches, then
// routers (each in reverse discovery order), the kinds selected, one line
// each: `Ca\t : 0x<guid> ports <n> devid 0x<x> vendid 0x<x> "<name>"`.
func WriteList(w io.Writer, f *model.Fabric, kinds ListKinds, name Namer) error {
	if name == nil {
		name = DescName
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 256)
	for _, k := range []struct {
		kind ListKinds
		t    uint8
		text string
	}{{ListCAs, smp.NodeCA, "Ca"}, {ListSwitches, smp.NodeSwitch, "Switch"}, {ListRouters, smp.NodeRouter, "Router"}} {
		if kinds&k.kind == 0 {
			continue
		}
		for i := len(f.Nodes) - 1; i >= 0; i-- {
			n := f.Nodes[i]
			if n.Type() != k.t {
				continue
			}
			b = append(b[:0], k.text...)
			b = append(b, "\t : 0x"...)
			b = smp.AppendHex16(b, n.GUID())
			b = append(b, " ports "...)
			b = strconv.AppendInt(b, int64(n.NumPorts()), 10)
			b = append(b, " devid 0x"...)
			b = appendHex(b, uint64(n.Info.DeviceID))
			b = append(b, " vendid 0x"...)
			b = appendHex(b, uint64(n.Info.VendorID))
			b = append(b, " \""...)
			b = append(b, name(n)...)
			b = append(b, "\"\n"...)
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// WritePorts writes ibnetdiscover's ports report (-p): every port of every
// node (all nodes in reverse discovery order, types mixed; ports from the
// highest number down), with its neighbour when it has one.
func WritePorts(w io.Writer, f *model.Fabric, name Namer) error {
	if name == nil {
		name = DescName
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 256)
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		for p := n.NumPorts(); p > 0; p-- {
			pp := n.Port(p)
			if pp == nil {
				continue
			}
			b = appendPortsLine(b[:0], pp, name)
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendPadded appends s right-aligned in a field of width w (%*s).
func appendPadded(b []byte, s string, w int) []byte {
	for i := len(s); i < w; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

func appendPaddedInt(b []byte, v int64, w int) []byte {
	var tmp [20]byte
	return appendPadded(b, string(strconv.AppendInt(tmp[:0], v, 10)), w)
}

// portsLID is the LID the ports report shows: the switch's port 0 LID
// for switch ports, the port's base LID otherwise.
func portsLID(pp *model.PhysPort) uint16 {
	if pp.Node.IsSwitch() {
		return pp.Node.SMALID()
	}
	return pp.Info.LID
}

func appendPortsLine(b []byte, pp *model.PhysPort, name Namer) []byte {
	n := pp.Node
	b = appendPadded(b, smp.PortsTypeToken(n.Type()), 2)
	b = append(b, ' ')
	b = appendPaddedInt(b, int64(portsLID(pp)), 5)
	b = append(b, ' ')
	b = appendPaddedInt(b, int64(pp.Num), 2)
	b = append(b, " 0x"...)
	b = smp.AppendHex16(b, pp.GUID)
	b = append(b, ' ')
	caps := pp.CapInfo()
	if caps == nil && pp.Node.IsSwitch() {
		// No port 0 record: ibnetdiscover zeroes width and speed.
		b = append(b, "?? ???"...)
	} else {
		b = append(b, smp.WidthToken(pp.Info.LinkWidthActive)...)
		b = append(b, ' ')
		b = append(b, smp.PortSpeedToken(&pp.Info, caps, pp.FDR10())...)
	}
	if r := pp.Remote; r != nil {
		b = append(b, " - "...)
		b = appendPadded(b, smp.PortsTypeToken(r.Node.Type()), 2)
		b = append(b, ' ')
		b = appendPaddedInt(b, int64(portsLID(r)), 5)
		b = append(b, ' ')
		b = appendPaddedInt(b, int64(r.Num), 2)
		b = append(b, " 0x"...)
		b = smp.AppendHex16(b, r.GUID)
		b = append(b, " ( '"...)
		b = append(b, name(n)...)
		b = append(b, "' - '"...)
		b = append(b, name(r.Node)...)
		b = append(b, "' )\n"...)
		return b
	}
	b = appendPadded(b, "", 36)
	b = append(b, '\'')
	b = append(b, name(n)...)
	return append(b, "'\n"...)
}
