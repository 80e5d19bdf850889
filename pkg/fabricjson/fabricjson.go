// Package fabricjson renders a fabric as JSON in one documented, versioned
// schema ("ibdiag.fabric/v1", docs/fabric.schema.json): the discovery
// summary, the nodes with their ports, and the links. Field names are
// lowercase snake_case and never change within a schema version; GUIDs
// are "0x%016x" strings; nodes are in discovery order, ports by number,
// links in the order of model.Fabric.Links, so equal fabrics give equal
// bytes.
package fabricjson

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Schema is the value of the document's "schema" field.
const Schema = "ibdiag.fabric/v1"

// GUID is a 64-bit GUID, encoded as a "0x%016x" string.
type GUID uint64

// MarshalJSON encodes the GUID as "0x%016x".
func (g GUID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 20)
	b = append(b, `"0x`...)
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[(uint64(g)>>uint(i))&0xF])
	}
	return append(b, '"'), nil
}

// Document is the whole JSON output.
type Document struct {
	Schema  string     `json:"schema"`
	Summary SummaryDoc `json:"summary"`
	Nodes   []Node     `json:"nodes"`
	Links   []Link     `json:"links"`
}

// SummaryDoc is the discovery summary.
type SummaryDoc struct {
	Source      string       `json:"source"`               // "discovery" or "cache"
	CacheFile   string       `json:"cache_file,omitempty"` // with source "cache"
	Complete    bool         `json:"complete"`
	Partial     bool         `json:"partial"`
	Interrupted bool         `json:"interrupted"`
	Start       *EndPoint    `json:"start"`
	NumNodes    int          `json:"nodes"`
	NumSwitches int          `json:"switches"`
	NumCAs      int          `json:"cas"`
	NumRouters  int          `json:"routers"`
	NumLinks    int          `json:"links"`
	SMPs        int64        `json:"smps_sent"`
	Retries     int64        `json:"retries"`
	MaxHops     int          `json:"max_hops"`
	Errors      []ErrorDoc   `json:"errors"`
	Problems    []ProblemDoc `json:"problems"`
	Fatal       string       `json:"fatal_error,omitempty"`
}

// ErrorDoc is one SMP that failed.
type ErrorDoc struct {
	DRPath      string `json:"dr_path"`
	AttributeID int    `json:"attribute_id"`
	Attribute   string `json:"attribute"`
	Modifier    uint32 `json:"modifier"`
	Error       string `json:"error"`
}

// ProblemDoc is one inconsistency found in the fabric.
type ProblemDoc struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	DRPaths []string `json:"dr_paths"`
}

// Node is one node.
type Node struct {
	GUID            GUID    `json:"guid"`
	Type            string  `json:"type"` // switch, ca, router, unknown
	TypeCode        int     `json:"type_code"`
	Description     string  `json:"description"`
	Name            string  `json:"name"` // node-name-map name, else description
	SystemImageGUID GUID    `json:"system_image_guid"`
	PortGUID        GUID    `json:"port_guid"`
	VendorID        int     `json:"vendor_id"`
	DeviceID        int     `json:"device_id"`
	Revision        int64   `json:"revision"`
	NumPorts        int     `json:"num_ports"`
	LIDs            []int   `json:"lids"`
	EnhancedPort0   bool    `json:"enhanced_port0"`
	DRPath          *string `json:"dr_path"` // null when loaded from a cache
	Ports           []Port  `json:"ports"`
}

// Port is one physical port.
type Port struct {
	Number             int       `json:"number"`
	GUID               GUID      `json:"guid"`
	PortInfo           bool      `json:"port_info"` // false: PortInfo was not read, the fields below are zero
	LID                int       `json:"lid"`
	LMC                int       `json:"lmc"`
	State              string    `json:"state"`
	PhysicalState      string    `json:"physical_state"`
	WidthActive        string    `json:"width_active"`
	SpeedActive        string    `json:"speed_active"`
	RateGbps           float64   `json:"rate_gbps"`
	WidthsSupported    []string  `json:"widths_supported"`
	SpeedsSupported    []string  `json:"speeds_supported"`
	MaxRateGbps        float64   `json:"max_rate_gbps"`
	MTUCap             int       `json:"mtu_cap"`
	NeighborMTU        int       `json:"neighbor_mtu"`
	VLCap              string    `json:"vl_cap"`
	VLCapDataVLs       int       `json:"vl_cap_data_vls"`
	OperationalVLs     string    `json:"operational_vls"`
	OperationalDataVLs int       `json:"operational_data_vls"`
	Remote             *EndPoint `json:"remote"`
}

// EndPoint names one end of a link (or the start port).
type EndPoint struct {
	NodeGUID GUID   `json:"node_guid"`
	Port     int    `json:"port"`
	PortGUID GUID   `json:"port_guid"`
	Name     string `json:"name"`
}

// Link is one link, each pair of ports once.
type Link struct {
	A        EndPoint `json:"a"`
	B        EndPoint `json:"b"`
	Width    string   `json:"width"`
	Speed    string   `json:"speed"`
	RateGbps float64  `json:"rate_gbps"`
}

// Summary is what the caller knows about how the fabric was obtained.
type Summary struct {
	Source      string // "discovery" (default) or "cache"
	CacheFile   string
	SMPs        int64
	Retries     int64
	MaxHops     int
	Interrupted bool
	Errors      []SMPError
	Problems    []Problem
	Fatal       string // the error that stopped discovery early
}

// SMPError is an SMP that failed.
type SMPError struct {
	Path smp.DRPath
	Attr uint16
	Mod  uint32
	Err  string
}

// Problem is an inconsistency found in the fabric.
type Problem struct {
	Kind  string
	Msg   string
	Paths []smp.DRPath
	// Incomplete marks a problem that leaves part of the fabric
	// undiscovered (the summary is then partial); the others are
	// inconsistencies in a complete result.
	Incomplete bool
}

// Options control the output.
type Options struct {
	// Name maps nodes to names (default: the NodeDescription).
	Name func(*model.Node) string
	// Summary is the discovery summary.
	Summary Summary
	// Compact leaves out indentation.
	Compact bool
}

// Write writes f as a JSON document followed by a newline.
func Write(w io.Writer, f *model.Fabric, o Options) error {
	d := Build(f, o)
	var b []byte
	var err error
	if o.Compact {
		b, err = json.Marshal(d)
	} else {
		b, err = json.MarshalIndent(d, "", "  ")
	}
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Build returns the document for f.
func Build(f *model.Fabric, o Options) *Document {
	name := o.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	s := o.Summary
	d := &Document{Schema: Schema, Nodes: []Node{}, Links: []Link{}}
	sd := &d.Summary
	sd.Source = s.Source
	if sd.Source == "" {
		sd.Source = "discovery"
	}
	sd.CacheFile = s.CacheFile
	sd.Partial = len(s.Errors) > 0 || s.Interrupted || s.Fatal != ""
	for _, p := range s.Problems {
		sd.Partial = sd.Partial || p.Incomplete
	}
	sd.Complete = !sd.Partial
	sd.Interrupted = s.Interrupted
	sd.SMPs, sd.Retries, sd.MaxHops, sd.Fatal = s.SMPs, s.Retries, s.MaxHops, s.Fatal
	sd.Errors = []ErrorDoc{}
	for _, e := range s.Errors {
		sd.Errors = append(sd.Errors, ErrorDoc{DRPath: e.Path.String(), AttributeID: int(e.Attr), Attribute: attrName(e.Attr), Modifier: e.Mod, Error: e.Err})
	}
	sd.Problems = []ProblemDoc{}
	for _, p := range s.Problems {
		pd := ProblemDoc{Kind: p.Kind, Message: p.Msg, DRPaths: []string{}}
		for _, q := range p.Paths {
			pd.DRPaths = append(pd.DRPaths, q.String())
		}
		sd.Problems = append(sd.Problems, pd)
	}
	if fn := f.From; fn != nil {
		sd.Start = &EndPoint{NodeGUID: GUID(fn.GUID()), Port: int(f.FromPort), PortGUID: GUID(fn.Info.PortGUID), Name: name(fn)}
	}
	for _, n := range f.Nodes {
		switch n.Type() {
		case smp.NodeSwitch:
			sd.NumSwitches++
		case smp.NodeCA:
			sd.NumCAs++
		case smp.NodeRouter:
			sd.NumRouters++
		}
		d.Nodes = append(d.Nodes, buildNode(n, name, sd.Source != "cache"))
	}
	sd.NumNodes = len(f.Nodes)
	f.Links(func(a, b *model.PhysPort) {
		d.Links = append(d.Links, Link{
			A: endPoint(a, name), B: endPoint(b, name),
			Width:    smp.WidthToken(a.Info.LinkWidthActive),
			Speed:    smp.PortSpeedToken(&a.Info, a.CapInfo(), a.FDR10()),
			RateGbps: activeRate(a),
		})
	})
	sd.NumLinks = len(d.Links)
	return d
}

func endPoint(p *model.PhysPort, name func(*model.Node) string) EndPoint {
	return EndPoint{NodeGUID: GUID(p.Node.GUID()), Port: int(p.Num), PortGUID: GUID(p.GUID), Name: name(p.Node)}
}

// TypeName is the node type as the schema spells it.
func TypeName(t uint8) string {
	switch t {
	case smp.NodeSwitch:
		return "switch"
	case smp.NodeCA:
		return "ca"
	case smp.NodeRouter:
		return "router"
	}
	return "unknown"
}

func attrName(a uint16) string {
	switch a {
	case smp.AttrNodeDescription:
		return "NodeDescription"
	case smp.AttrNodeInfo:
		return "NodeInfo"
	case smp.AttrSwitchInfo:
		return "SwitchInfo"
	case smp.AttrPortInfo:
		return "PortInfo"
	case smp.AttrMlnxExtPortInfo:
		return "MlnxExtPortInfo"
	case smp.AttrPortInfoExtended:
		return "PortInfoExtended"
	}
	return fmt.Sprintf("0x%04x", a)
}

func buildNode(n *model.Node, name func(*model.Node) string, paths bool) Node {
	nd := Node{
		GUID:            GUID(n.GUID()),
		Type:            TypeName(n.Type()),
		TypeCode:        int(n.Type()),
		Description:     n.Description(),
		Name:            name(n),
		SystemImageGUID: GUID(n.Info.SystemImageGUID),
		PortGUID:        GUID(n.Info.PortGUID),
		VendorID:        int(n.Info.VendorID),
		DeviceID:        int(n.Info.DeviceID),
		Revision:        int64(n.Info.Revision),
		NumPorts:        n.NumPorts(),
		LIDs:            []int{},
		EnhancedPort0:   n.IsSwitch() && n.SwitchInfo.EnhancedPort0,
		Ports:           []Port{},
	}
	if paths {
		s := n.Path.String()
		nd.DRPath = &s
	}
	seen := map[int]bool{}
	for _, p := range n.Ports {
		if p == nil {
			continue
		}
		nd.Ports = append(nd.Ports, buildPort(p, name))
		if p.HasInfo && (!n.IsSwitch() || p.Num == 0) && p.Info.LID != 0 && !seen[int(p.Info.LID)] {
			seen[int(p.Info.LID)] = true
			nd.LIDs = append(nd.LIDs, int(p.Info.LID))
		}
	}
	return nd
}

var laneGbps = map[string]float64{
	"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200,
}

var widthLanes = map[string]float64{"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}

func rate(width, speed string) float64 {
	return math.Round(widthLanes[width]*laneGbps[speed]*1000) / 1000
}

func activeRate(p *model.PhysPort) float64 {
	return rate(smp.WidthToken(p.Info.LinkWidthActive), smp.PortSpeedToken(&p.Info, p.CapInfo(), p.FDR10()))
}

func supportedWidths(mask uint8) []string {
	out := []string{}
	for _, w := range []uint8{smp.Width1x, smp.Width2x, smp.Width4x, smp.Width8x, smp.Width12x} {
		if mask&w != 0 {
			out = append(out, smp.WidthToken(w))
		}
	}
	return out
}

func supportedSpeeds(p *model.PhysPort) []string {
	out := []string{}
	i := &p.Info
	for _, s := range []struct {
		bit  uint8
		name string
	}{{smp.SpeedSDR, "SDR"}, {smp.SpeedDDR, "DDR"}, {smp.SpeedQDR, "QDR"}} {
		if i.LinkSpeedSupported&s.bit != 0 {
			out = append(out, s.name)
		}
	}
	caps := p.CapInfo()
	if caps == nil || caps.CapabilityMask&smp.CapIsExtendedSpeedsSupp == 0 {
		return out
	}
	for _, s := range []struct {
		bit  uint8
		name string
	}{{smp.ExtSpeedFDR, "FDR"}, {smp.ExtSpeedEDR, "EDR"}, {smp.ExtSpeedHDR, "HDR"}, {smp.ExtSpeedNDR, "NDR"}} {
		if i.LinkSpeedExtSupported&s.bit != 0 {
			out = append(out, s.name)
		}
	}
	if caps.CapabilityMask&smp.CapIsCapabilityMask2Supp != 0 &&
		caps.CapabilityMask2&smp.Cap2IsExtendedSpeeds2Supp != 0 && i.LinkSpeedExtSupported2&1 != 0 {
		out = append(out, "XDR")
	}
	return out
}

func buildPort(p *model.PhysPort, name func(*model.Node) string) Port {
	i := &p.Info
	pd := Port{
		Number:          int(p.Num),
		GUID:            GUID(p.GUID),
		PortInfo:        p.HasInfo,
		WidthsSupported: []string{},
		SpeedsSupported: []string{},
	}
	if r := p.Remote; r != nil {
		e := endPoint(r, name)
		pd.Remote = &e
	}
	if !p.HasInfo {
		return pd
	}
	pd.LID, pd.LMC = int(p.BaseLID()), int(p.LMC())
	pd.State = smp.PortStateText(i.PortState)
	pd.PhysicalState = smp.PhysStateText(i.PortPhysicalState)
	pd.WidthActive = smp.WidthToken(i.LinkWidthActive)
	pd.SpeedActive = smp.PortSpeedToken(i, p.CapInfo(), p.FDR10())
	pd.RateGbps = activeRate(p)
	pd.WidthsSupported = supportedWidths(i.LinkWidthSupported)
	pd.SpeedsSupported = supportedSpeeds(p)
	var maxW, maxS float64
	for _, w := range pd.WidthsSupported {
		maxW = math.Max(maxW, widthLanes[w])
	}
	for _, s := range pd.SpeedsSupported {
		maxS = math.Max(maxS, laneGbps[s])
	}
	pd.MaxRateGbps = math.Round(maxW*maxS*1000) / 1000
	pd.MTUCap = smp.MTUBytes(i.MTUCap)
	pd.NeighborMTU = smp.MTUBytes(i.NeighborMTU)
	pd.VLCap = smp.VLCapText(i.VLCap)
	pd.VLCapDataVLs = smp.DataVLs(i.VLCap)
	pd.OperationalVLs = smp.OperVLsText(i.OperationalVLs)
	pd.OperationalDataVLs = smp.DataVLs(i.OperationalVLs)
	return pd
}
