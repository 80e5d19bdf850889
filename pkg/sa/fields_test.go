package sa

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// The helpers here print our decoded records with saquery's field names
// and formats (infiniband-diags 44), so that a record can be compared
// field by field with saquery's dump of the same record.

var saField = regexp.MustCompile(`^\s*([A-Za-z_0-9]+?):?\.{2,}:?(.*?)\s*$`)

// parseSaquery returns saquery's "name......value" lines as a map (a
// name seen twice keeps its first value).
func parseSaquery(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		if f := saField.FindStringSubmatch(l); f != nil {
			if _, ok := m[f[1]]; !ok {
				m[f[1]] = f[2]
			}
		}
	}
	return m
}

func gidString(g GID) string { return netip.AddrFrom16(g).String() }

// pathFields is a PathRecord as saquery -p prints it.
func pathFields(p *PathRecord) map[string]string {
	hfr := p.FlowLabel<<8 | uint32(p.HopLimit)
	if p.RawTraffic {
		hfr |= 1 << 31
	}
	np := p.NumbPath
	if p.Reversible {
		np |= 0x80
	}
	return map[string]string{
		"service_id":      fmt.Sprintf("0x%016x", p.ServiceID),
		"dgid":            gidString(p.DGID),
		"sgid":            gidString(p.SGID),
		"dlid":            fmt.Sprint(p.DLID),
		"slid":            fmt.Sprint(p.SLID),
		"hop_flow_raw":    fmt.Sprintf("0x%x", hfr),
		"tclass":          fmt.Sprintf("0x%x", p.TClass),
		"num_path_revers": fmt.Sprintf("0x%x", np),
		"pkey":            fmt.Sprintf("0x%04X", p.PKey),
		"qos_class":       fmt.Sprintf("0x%x", p.QoSClass),
		"sl":              fmt.Sprintf("0x%x", p.SL),
		"mtu":             fmt.Sprintf("0x%x", p.MTUSelector<<6|p.MTU),
		"rate":            fmt.Sprintf("0x%x", p.RateSelector<<6|p.Rate),
		"pkt_life":        fmt.Sprintf("0x%x", p.PacketLifeSelector<<6|p.PacketLife),
		"preference":      fmt.Sprintf("0x%x", p.Preference),
	}
}

var nodeTypes = map[uint8]string{smp.NodeCA: "Channel Adapter", smp.NodeSwitch: "Switch", smp.NodeRouter: "Router"}

// nodeFields is a NodeRecord as saquery NR prints it.
func nodeFields(n *NodeRecord) map[string]string {
	ni := &n.NodeInfo
	return map[string]string{
		"lid":             fmt.Sprint(n.LID),
		"base_version":    fmt.Sprintf("0x%x", ni.BaseVersion),
		"class_version":   fmt.Sprintf("0x%x", ni.ClassVersion),
		"node_type":       nodeTypes[ni.NodeType],
		"num_ports":       fmt.Sprint(ni.NumPorts),
		"sys_guid":        fmt.Sprintf("0x%016x", ni.SystemImageGUID),
		"node_guid":       fmt.Sprintf("0x%016x", ni.NodeGUID),
		"port_guid":       fmt.Sprintf("0x%016x", ni.PortGUID),
		"partition_cap":   fmt.Sprintf("0x%x", ni.PartitionCap),
		"device_id":       fmt.Sprintf("0x%X", ni.DeviceID),
		"revision":        fmt.Sprintf("0x%X", ni.Revision),
		"port_num":        fmt.Sprint(ni.LocalPortNum),
		"vendor_id":       fmt.Sprintf("0x%X", ni.VendorID),
		"NodeDescription": strings.TrimRight(string(n.NodeDescription[:]), "\x00"),
	}
}

var portStates = map[uint8]string{1: "Down", 2: "Initialize", 3: "Armed", 4: "Active"}

func mtuBytes(c uint8) string {
	if c >= 1 && c <= 5 {
		return fmt.Sprint(128 << c)
	}
	return fmt.Sprintf("?(%d)", c)
}

// portInfoFields is a PortInfoRecord as saquery PIR prints it (the
// numeric fields and the port state).
func portInfoFields(r *PortInfoRecord) map[string]string {
	p := &r.PortInfo
	return map[string]string{
		"EndPortLid":      fmt.Sprint(r.LID),
		"PortNum":         fmt.Sprint(r.PortNum),
		"Options":         fmt.Sprintf("0x%x", r.Options),
		"GidPrefix":       fmt.Sprintf("0x%016x", p.GIDPrefix),
		"Lid":             fmt.Sprint(p.LID),
		"SMLid":           fmt.Sprint(p.MasterSMLID),
		"CapMask":         fmt.Sprintf("0x%x", p.CapabilityMask),
		"DiagCode":        fmt.Sprintf("0x%04x", p.DiagCode),
		"MkeyLeasePeriod": fmt.Sprint(p.MKeyLeasePeriod),
		"LocalPort":       fmt.Sprint(p.LocalPortNum),
		"LinkState":       portStates[p.PortState],
		"LMC":             fmt.Sprint(p.LMC),
		"NeighborMTU":     mtuBytes(p.NeighborMTU),
		"SMSL":            fmt.Sprint(p.MasterSMSL),
		"MtuCap":          mtuBytes(p.MTUCap),
		"VLStallCount":    fmt.Sprint(p.VLStallCount),
		"HoqLife":         fmt.Sprint(p.HOQLife),
		"GuidCap":         fmt.Sprint(p.GUIDCap),
		"SubnetTimeout":   fmt.Sprint(p.SubnetTimeOut),
		"CapabilityMask2": fmt.Sprintf("0x%x", p.CapabilityMask2),
		"VLArbHighCap":    fmt.Sprint(p.VLArbitrationHighCap),
		"VLArbLowCap":     fmt.Sprint(p.VLArbitrationLowCap),
	}
}

// mcFields is an MCMemberRecord as saquery -g prints a group.
func mcFields(m *MCMemberRecord) map[string]string {
	return map[string]string{
		"MGID": gidString(m.MGID),
		"Mlid": fmt.Sprintf("0x%X", m.MLID),
		"Mtu":  fmt.Sprintf("0x%x", m.MTUSelector<<6|m.MTU),
		"pkey": fmt.Sprintf("0x%04X", m.PKey),
		"Rate": fmt.Sprintf("0x%x", m.RateSelector<<6|m.Rate),
		"SL":   fmt.Sprintf("0x%x", m.SL),
	}
}

// diffFields lists the fields of ours that saquery printed differently
// (or not at all).
func diffFields(ours, theirs map[string]string) []string {
	var d []string
	for k, v := range ours {
		if tv, ok := theirs[k]; !ok || tv != v {
			d = append(d, fmt.Sprintf("%s: ours %q, saquery %q", k, v, tv))
		}
	}
	return d
}
