package portcounters

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Schema names the JSON layout of JSON (docs/errors.schema.json).
const Schema = "ibdiag.errors/v1"

// JSONReport is the JSON form of a Report.
type JSONReport struct {
	Schema     string            `json:"schema"`
	Summary    JSONSummary       `json:"summary"`
	Thresholds map[string]uint64 `json:"thresholds"`
	Suppressed []string          `json:"suppressed"`
	Ports      []JSONSample      `json:"ports"`
	Failures   []JSONFailure     `json:"failures"`
}

// JSONSummary counts as ibqueryerrors' summary does.
type JSONSummary struct {
	NodesChecked     int  `json:"nodes_checked"`
	BadNodes         int  `json:"bad_nodes"`
	PortsChecked     int  `json:"ports_checked"`
	BadPorts         int  `json:"bad_ports"`
	PMAQueryFailures int  `json:"pma_query_failures"`
	Partial          bool `json:"partial"`
	Cleared          bool `json:"cleared"`
}

// JSONSample is one port read (or a switch's AllPortSelect sum).
type JSONSample struct {
	NodeGUID string `json:"node_guid"`
	NodeDesc string `json:"node_desc"`
	// NodeName is the node's name in the node name map, else NodeDesc.
	NodeName string `json:"node_name"`
	NodeType string `json:"node_type"`
	// Port is the port number; AllPorts marks a switch's sum over all its
	// ports (Port is then 255).
	Port     int    `json:"port"`
	AllPorts bool   `json:"all_ports"`
	PortGUID string `json:"port_guid"`
	LID      int    `json:"lid"`
	// Over is true when an error counter exceeds its threshold;
	// Exceeded lists those counters.
	Over     bool              `json:"over"`
	Exceeded []string          `json:"exceeded"`
	Errors   map[string]uint64 `json:"errors"`
	// Errors64 is true when Errors come from the 64-bit counters of
	// PortCountersExtended.
	Errors64 bool `json:"errors_64bit"`
	// Data are the data and packet counters (PortXmitData and PortRcvData
	// in 4-byte units), from PortCountersExtended where the PMA has it.
	Data map[string]uint64 `json:"data"`
}

// JSONFailure is a PerfMgt query that failed.
type JSONFailure struct {
	NodeGUID  string `json:"node_guid"`
	NodeDesc  string `json:"node_desc"`
	NodeName  string `json:"node_name"`
	LID       int    `json:"lid"`
	Port      int    `json:"port"`
	AllPorts  bool   `json:"all_ports"`
	Attribute string `json:"attribute"`
	Error     string `json:"error"`
}

func hex64(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// ErrorMap returns the error counters by name.
func ErrorMap(e *pma.Errors) map[string]uint64 {
	m := make(map[string]uint64, len(e))
	for i, v := range e {
		m[pma.ErrorNames[i]] = v
	}
	return m
}

// DataMap returns a sample's data and packet counters by name.
func DataMap(s *Sample) map[string]uint64 {
	if s.HasExt {
		return map[string]uint64{
			"PortXmitData": s.Ext.PortXmitData, "PortRcvData": s.Ext.PortRcvData,
			"PortXmitPkts": s.Ext.PortXmitPkts, "PortRcvPkts": s.Ext.PortRcvPkts,
		}
	}
	c := &s.Counters
	return map[string]uint64{
		"PortXmitData": uint64(c.PortXmitData), "PortRcvData": uint64(c.PortRcvData),
		"PortXmitPkts": uint64(c.PortXmitPkts), "PortRcvPkts": uint64(c.PortRcvPkts),
	}
}

func (r *Report) jsonSample(n *model.Node, s *Sample, th *Thresholds) JSONSample {
	j := JSONSample{
		NodeGUID: hex64(n.GUID()), NodeDesc: n.Description(), NodeName: r.nodeName(n), NodeType: smp.NodeTypeLower(n.Type()),
		Port: s.Port, AllPorts: s.Port == int(pma.AllPorts), PortGUID: hex64(s.GUID), LID: int(s.LID),
		Over: s.Over, Exceeded: []string{}, Errors: ErrorMap(&s.Errors), Errors64: s.Ext64, Data: DataMap(s),
	}
	for i, v := range s.Errors {
		if th.Over(i, v) {
			j.Exceeded = append(j.Exceeded, pma.ErrorNames[i])
		}
	}
	return j
}

// JSON returns the JSON form of r: every port read, every failure.
func (r *Report) JSON() JSONReport {
	nodes, bad, ports, badPorts := r.Summary()
	j := JSONReport{
		Schema: Schema,
		Summary: JSONSummary{NodesChecked: nodes, BadNodes: bad, PortsChecked: ports, BadPorts: badPorts,
			PMAQueryFailures: len(r.Failures), Partial: len(r.Failures) > 0},
		Thresholds: ErrorMap(&r.Thresholds.Limit),
		Suppressed: append([]string{}, r.Thresholds.SuppressedNames...),
		Ports:      []JSONSample{},
		Failures:   []JSONFailure{},
	}
	for i := range r.Nodes {
		nr := &r.Nodes[i]
		if nr.Cleared {
			j.Summary.Cleared = true
		}
		if nr.All != nil && nr.All.Err == nil {
			j.Ports = append(j.Ports, r.jsonSample(nr.Node, nr.All, &r.Thresholds))
		}
		for k := range nr.Ports {
			if nr.Ports[k].Err == nil {
				j.Ports = append(j.Ports, r.jsonSample(nr.Node, &nr.Ports[k], &r.Thresholds))
			}
		}
	}
	for _, f := range r.Failures {
		j.Failures = append(j.Failures, JSONFailure{
			NodeGUID: hex64(f.Node.GUID()), NodeDesc: f.Node.Description(), NodeName: r.nodeName(f.Node), LID: int(f.LID),
			Port: f.Port, AllPorts: f.Port == int(pma.AllPorts), Attribute: pma.AttrName(f.Attr), Error: f.Err.Error(),
		})
	}
	return j
}
