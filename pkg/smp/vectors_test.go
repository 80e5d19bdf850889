package smp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/madtest"
)

// vector is one captured response MAD from testdata/*.hex (written by
// testdata/capture.sh): the 256 bytes and the text the real tool printed.
type vector = madtest.Vector

func loadVectors(t testing.TB) []vector { return madtest.LoadAll(t) }

func mustVector(t testing.TB, name string) vector { return madtest.Must(t, name) }

// fields parses libibmad's "Name:.....value" lines.
func fields(v vector) map[string]string {
	m := make(map[string]string)
	for _, l := range v.Out {
		i := strings.IndexByte(l, ':')
		if i <= 0 || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "\t") {
			continue
		}
		m[l[:i]] = strings.TrimLeft(l[i+1:], ".")
	}
	return m
}

func decodeMAD(t testing.TB, v vector) MAD {
	t.Helper()
	var m MAD
	if err := m.UnmarshalBinary(v.MAD); err != nil {
		t.Fatalf("%s: %v", v.Name, err)
	}
	return m
}

// Every captured MAD is a good DR GetResp that re-encodes byte for byte.
func TestVectorsMADRoundTrip(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			m := decodeMAD(t, v)
			if !m.IsDirectRoute() || !m.IsResponse() || !m.Returning() || m.Method != MethodGetResp {
				t.Errorf("class 0x%02x method 0x%02x status 0x%04x: not a DR GetResp", m.Class, m.Method, m.Status)
			}
			if m.StatusCode() != 0 {
				t.Errorf("status %#x", m.StatusCode())
			}
			if m.DrSLID != PermissiveLID || m.DrDLID != PermissiveLID {
				t.Errorf("DrSLID/DrDLID = %#x/%#x", m.DrSLID, m.DrDLID)
			}
			out := make([]byte, MADSize)
			if err := m.MarshalTo(out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, v.MAD) {
				t.Errorf("re-encoded MAD differs\n got %x\nwant %x", out, v.MAD)
			}
			// The request path printed by the tool is the decoded path.
			if len(v.Out) > 0 && strings.Contains(v.Out[0], "DR path") {
				want := v.Out[0][strings.LastIndex(v.Out[0], "; ")+2:]
				want, _, _ = strings.Cut(want, " ")
				if got := m.Path().String(); got != want {
					t.Errorf("path %q, tool printed %q", got, want)
				}
			}
		})
	}
}

// attrCodec is what every attribute value type implements.
type attrCodec = madtest.Codec

// Attribute data of every vector decodes and re-encodes to the same
// bytes over the part the attribute uses.
func TestVectorsAttrRoundTrip(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			m := decodeMAD(t, v)
			var a attrCodec
			used := DataSize
			switch m.AttrID {
			case AttrNodeInfo:
				a, used = new(NodeInfo), NodeInfoSize
			case AttrNodeDescription:
				a = new(NodeDescription)
			case AttrSwitchInfo:
				a, used = new(SwitchInfo), SwitchInfoSize
			case AttrPortInfo:
				a = new(PortInfo)
			case AttrPKeyTable:
				a = new(PKeyTable)
			case AttrSLtoVLMappingTable:
				a, used = new(SLtoVLMappingTable), SLtoVLSize
			case AttrVLArbitrationTable:
				a = new(VLArbitrationTable)
			case AttrLinearForwardingTable:
				a = new(LinearForwardingTable)
			case AttrMulticastFwdTable:
				a = new(MulticastForwardingTable)
			case AttrGUIDInfo:
				a = new(GUIDInfo)
			case AttrMlnxExtPortInfo:
				a, used = new(MlnxExtPortInfo), MlnxExtPortInfoSize
			default:
				t.Fatalf("unexpected attribute %#x", m.AttrID)
			}
			if err := a.UnmarshalBinary(m.Data[:]); err != nil {
				t.Fatal(err)
			}
			var out [DataSize]byte
			if err := a.MarshalTo(out[:]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[:used], m.Data[:used]) {
				t.Errorf("re-encoded data differs\n got %x\nwant %x", out[:used], m.Data[:used])
			}
		})
	}
}

func checkFields(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, g := range got {
		w, ok := want[k]
		if !ok {
			t.Errorf("tool printed no %q", k)
			continue
		}
		if g != w {
			t.Errorf("%s = %q, tool printed %q", k, g, w)
		}
	}
}

// The decoded NodeInfo, SwitchInfo, PortInfo, NodeDescription and
// Mellanox ExtendedPortInfo equal what smpquery printed for the same MAD.
func TestVectorsMatchSmpquery(t *testing.T) {
	for _, v := range loadVectors(t) {
		m := decodeMAD(t, v)
		if tableAttrs[m.AttrID] {
			continue // compared with smpquery in tables_test.go
		}
		want := fields(v)
		t.Run(v.Name, func(t *testing.T) {
			switch m.AttrID {
			case AttrNodeInfo:
				if !strings.Contains(v.Name, "nodeinfo") {
					t.Skip("NodeInfo read by the tool for its own use")
				}
				var n NodeInfo
				if err := n.UnmarshalBinary(m.Data[:]); err != nil {
					t.Fatal(err)
				}
				checkFields(t, nodeInfoFields(&n), want)
			case AttrSwitchInfo:
				var s SwitchInfo
				if err := s.UnmarshalBinary(m.Data[:]); err != nil {
					t.Fatal(err)
				}
				checkFields(t, switchInfoFields(&s), want)
			case AttrPortInfo:
				if !strings.Contains(v.Name, "portinfo") {
					t.Skip("PortInfo read by the tool for its own use")
				}
				var p PortInfo
				if err := p.UnmarshalBinary(m.Data[:]); err != nil {
					t.Fatal(err)
				}
				checkFields(t, portInfoFields(&p), want)
			case AttrNodeDescription:
				var d NodeDescription
				if err := d.UnmarshalBinary(m.Data[:]); err != nil {
					t.Fatal(err)
				}
				checkFields(t, map[string]string{"Node Description": d.String()}, want)
			case AttrMlnxExtPortInfo:
				var e MlnxExtPortInfo
				if err := e.UnmarshalBinary(m.Data[:]); err != nil {
					t.Fatal(err)
				}
				checkFields(t, map[string]string{
					"StateChangeEnable":  fmt.Sprintf("0x%02x", e.StateChangeEnable),
					"LinkSpeedSupported": fmt.Sprintf("0x%02x", e.LinkSpeedSupported),
					"LinkSpeedEnabled":   fmt.Sprintf("0x%02x", e.LinkSpeedEnabled),
					"LinkSpeedActive":    fmt.Sprintf("0x%02x", e.LinkSpeedActive),
				}, want)
			default:
				t.Errorf("attribute %#04x: no comparison with smpquery", m.AttrID)
			}
		})
	}
}

// tableAttrs are the attributes whose vectors tables_test.go compares
// with smpquery (TestVectorsPKeyTable, TestVectorsGUIDInfo,
// TestVectorsSLtoVL, TestVectorsVLArb, TestVectorsLFT, TestVectorsMFT).
var tableAttrs = map[uint16]bool{
	AttrPKeyTable: true, AttrGUIDInfo: true, AttrSLtoVLMappingTable: true,
	AttrVLArbitrationTable: true, AttrLinearForwardingTable: true, AttrMulticastFwdTable: true,
}

func nodeInfoFields(n *NodeInfo) map[string]string {
	return map[string]string{
		"BaseVers":   fmt.Sprint(n.BaseVersion),
		"ClassVers":  fmt.Sprint(n.ClassVersion),
		"NodeType":   NodeTypeText(n.NodeType),
		"NumPorts":   fmt.Sprint(n.NumPorts),
		"SystemGuid": fmt.Sprintf("0x%016x", n.SystemImageGUID),
		"Guid":       fmt.Sprintf("0x%016x", n.NodeGUID),
		"PortGuid":   fmt.Sprintf("0x%016x", n.PortGUID),
		"PartCap":    fmt.Sprint(n.PartitionCap),
		"DevId":      fmt.Sprintf("0x%04x", n.DeviceID),
		"Revision":   fmt.Sprintf("0x%08x", n.Revision),
		"LocalPort":  fmt.Sprint(n.LocalPortNum),
		"VendorId":   fmt.Sprintf("0x%06x", n.VendorID),
	}
}

func b01(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

func switchInfoFields(s *SwitchInfo) map[string]string {
	return map[string]string{
		"LinearFdbCap":        fmt.Sprint(s.LinearFDBCap),
		"RandomFdbCap":        fmt.Sprint(s.RandomFDBCap),
		"McastFdbCap":         fmt.Sprint(s.MulticastFDBCap),
		"LinearFdbTop":        fmt.Sprint(s.LinearFDBTop),
		"DefPort":             fmt.Sprint(s.DefaultPort),
		"DefMcastPrimPort":    fmt.Sprint(s.DefaultMcastPrimaryPort),
		"DefMcastNotPrimPort": fmt.Sprint(s.DefaultMcastNotPrimaryPort),
		"LifeTime":            fmt.Sprint(s.LifeTimeValue),
		"StateChange":         b01(s.PortStateChange),
		"OptSLtoVLMapping":    fmt.Sprint(s.OptimizedSLtoVLMapping),
		"LidsPerPort":         fmt.Sprint(s.LIDsPerPort),
		"PartEnforceCap":      fmt.Sprint(s.PartitionEnforcementCap),
		"InboundPartEnf":      b01(s.InboundEnforcementCap),
		"OutboundPartEnf":     b01(s.OutboundEnforcementCap),
		"FilterRawInbound":    b01(s.FilterRawInboundCap),
		"FilterRawOutbound":   b01(s.FilterRawOutboundCap),
		"EnhancedPort0":       b01(s.EnhancedPort0),
		"MulticastFDBTop":     fmt.Sprintf("0x%04x", s.MulticastFDBTop),
	}
}

func portInfoFields(p *PortInfo) map[string]string {
	return map[string]string{
		"Mkey":                            "<not displayed>",
		"GidPrefix":                       fmt.Sprintf("0x%016x", p.GIDPrefix),
		"Lid":                             fmt.Sprint(p.LID),
		"SMLid":                           fmt.Sprint(p.MasterSMLID),
		"CapMask":                         fmt.Sprintf("0x%x", p.CapabilityMask),
		"DiagCode":                        fmt.Sprintf("0x%04x", p.DiagCode),
		"MkeyLeasePeriod":                 fmt.Sprint(p.MKeyLeasePeriod),
		"LocalPort":                       fmt.Sprint(p.LocalPortNum),
		"LinkWidthEnabled":                LinkWidthMaskText(p.LinkWidthEnabled),
		"LinkWidthSupported":              LinkWidthSupportedText(p.LinkWidthSupported),
		"LinkWidthActive":                 LinkWidthText(p.LinkWidthActive),
		"LinkSpeedSupported":              LinkSpeedMaskText(p.LinkSpeedSupported),
		"LinkState":                       PortStateText(p.PortState),
		"PhysLinkState":                   PhysStateText(p.PortPhysicalState),
		"LinkDownDefState":                LinkDownDefaultStateText(p.LinkDownDefaultState),
		"ProtectBits":                     fmt.Sprint(p.MKeyProtectBits),
		"LMC":                             fmt.Sprint(p.LMC),
		"LinkSpeedActive":                 LinkSpeedText(p.LinkSpeedActive),
		"LinkSpeedEnabled":                LinkSpeedMaskText(p.LinkSpeedEnabled),
		"NeighborMTU":                     MTUText(p.NeighborMTU),
		"SMSL":                            fmt.Sprint(p.MasterSMSL),
		"VLCap":                           VLCapText(p.VLCap),
		"InitType":                        fmt.Sprintf("0x%02x", p.InitType),
		"VLHighLimit":                     fmt.Sprint(p.VLHighLimit),
		"VLArbHighCap":                    fmt.Sprint(p.VLArbitrationHighCap),
		"VLArbLowCap":                     fmt.Sprint(p.VLArbitrationLowCap),
		"InitReply":                       fmt.Sprintf("0x%02x", p.InitTypeReply),
		"MtuCap":                          MTUText(p.MTUCap),
		"VLStallCount":                    fmt.Sprint(p.VLStallCount),
		"HoqLife":                         fmt.Sprint(p.HOQLife),
		"OperVLs":                         OperVLsText(p.OperationalVLs),
		"PartEnforceInb":                  b01(p.PartEnforceInbound),
		"PartEnforceOutb":                 b01(p.PartEnforceOutbound),
		"FilterRawInb":                    b01(p.FilterRawInbound),
		"FilterRawOutb":                   b01(p.FilterRawOutbound),
		"MkeyViolations":                  fmt.Sprint(p.MKeyViolations),
		"PkeyViolations":                  fmt.Sprint(p.PKeyViolations),
		"QkeyViolations":                  fmt.Sprint(p.QKeyViolations),
		"GuidCap":                         fmt.Sprint(p.GUIDCap),
		"ClientReregister":                b01(p.ClientReregister),
		"McastPkeyTrapSuppressionEnabled": fmt.Sprint(p.McastPKeyTrapSuppress),
		"SubnetTimeout":                   fmt.Sprint(p.SubnetTimeOut),
		"RespTimeVal":                     fmt.Sprint(p.RespTimeValue),
		"LocalPhysErr":                    fmt.Sprint(p.LocalPhyErrors),
		"OverrunErr":                      fmt.Sprint(p.OverrunErrors),
		"MaxCreditHint":                   fmt.Sprint(p.MaxCreditHint),
		"RoundTrip":                       fmt.Sprint(p.LinkRoundTripLatency),
		"CapabilityMask2":                 fmt.Sprintf("0x%x", p.CapabilityMask2),
		"LinkSpeedExtActive":              LinkSpeedExtText(p.LinkSpeedExtActive),
		"LinkSpeedExtSupported":           LinkSpeedExtMaskText(p.LinkSpeedExtSupported),
		"LinkSpeedExtEnabled":             LinkSpeedExtEnabledText(p.LinkSpeedExtEnabled),
	}
}

func TestAttrName(t *testing.T) {
	for id, want := range map[uint16]string{AttrNodeInfo: "NodeInfo", AttrPortInfo: "PortInfo", AttrMlnxExtPortInfo: "MlnxExtendedPortInfo", 0x1234: "0x1234"} {
		if got := AttrName(id); got != want {
			t.Errorf("AttrName(0x%x) = %q, want %q", id, got, want)
		}
	}
}
