package smp

import (
	"strconv"
	"strings"
)

// This file holds the texts the real tools print for SMP field values:
// ibnetdiscover's compact tokens, libibmad's smpquery texts, iblinkinfo's
// speed texts and ibtracert's node types. Every function is total: codes
// the tools do not know get the tools' own "unknown" spelling.

// WidthToken is ibnetdiscover's width token for LinkWidthActive:
// "1x", "4x", "8x", "12x", "2x", or "??".
func WidthToken(w uint8) string {
	switch w {
	case Width1x:
		return "1x"
	case Width4x:
		return "4x"
	case Width8x:
		return "8x"
	case Width12x:
		return "12x"
	case Width2x:
		return "2x"
	}
	return "??"
}

// SpeedToken is ibnetdiscover's speed token ("SDR" .. "XDR", "???") for a
// port with LinkSpeedActive ispeed, aggregated extended speed espeed (see
// AggregatedExtSpeed) and the Mellanox FDR10 flag.
func SpeedToken(ispeed, espeed uint8, fdr10 bool) string {
	if ispeed != SpeedQDR && espeed == ExtSpeedNone {
		return legacySpeedToken(ispeed)
	}
	switch espeed {
	case ExtSpeedNone:
		if fdr10 {
			return "FDR10"
		}
		return legacySpeedToken(ispeed)
	case ExtSpeedFDR:
		return "FDR"
	case ExtSpeedEDR:
		return "EDR"
	case ExtSpeedHDR:
		return "HDR"
	case ExtSpeedNDR:
		return "NDR"
	case ExtSpeedXDR:
		return "XDR"
	}
	return "???"
}

func legacySpeedToken(ispeed uint8) string {
	switch ispeed {
	case SpeedSDR:
		return "SDR"
	case SpeedDDR:
		return "DDR"
	case SpeedQDR:
		return "QDR"
	}
	return "???"
}

// AggregatedExtSpeed is the extended speed of port as libibnetdisc (v49+)
// computes it. caps is the PortInfo that supplies the capability masks:
// the switch's port 0 for switch ports, the port itself otherwise; nil
// (no port 0 record) gives 0. The result is LinkSpeedExtActive (1, 2, 4,
// 8), ExtSpeedXDR (LinkSpeedExtActive2 << 5) or 0.
func AggregatedExtSpeed(port, caps *PortInfo) uint8 {
	if port == nil || caps == nil || caps.CapabilityMask&CapIsExtendedSpeedsSupp == 0 {
		return ExtSpeedNone
	}
	if caps.CapabilityMask&CapIsCapabilityMask2Supp != 0 &&
		caps.CapabilityMask2&Cap2IsExtendedSpeeds2Supp != 0 &&
		port.LinkSpeedExtActive2 != 0 {
		return port.LinkSpeedExtActive2 << 5
	}
	return port.LinkSpeedExtActive
}

// LinkToken is ibnetdiscover's "<W><S>" token of a port (e.g. "4xEDR"),
// with caps and fdr10 as for AggregatedExtSpeed and SpeedToken. A nil caps
// (switch without a port 0 record) gives the speed "???".
func LinkToken(port, caps *PortInfo, fdr10 bool) string {
	if port == nil {
		return "?????"
	}
	return WidthToken(port.LinkWidthActive) + PortSpeedToken(port, caps, fdr10)
}

// PortSpeedToken is SpeedToken for a port's PortInfo (see LinkToken).
func PortSpeedToken(port, caps *PortInfo, fdr10 bool) string {
	if port == nil || caps == nil {
		return "???"
	}
	return SpeedToken(port.LinkSpeedActive, AggregatedExtSpeed(port, caps), fdr10)
}

// NodeIDPrefix is ibnetdiscover's node id prefix: "S-", "H-", "R-", "?-".
func NodeIDPrefix(nodeType uint8) string {
	switch nodeType {
	case NodeSwitch:
		return "S-"
	case NodeCA:
		return "H-"
	case NodeRouter:
		return "R-"
	}
	return "?-"
}

// NodeID is ibnetdiscover's node id without quotes, e.g. "S-7cfe900300a0b000".
func NodeID(nodeType uint8, guid uint64) string {
	return string(AppendNodeID(make([]byte, 0, 18), nodeType, guid))
}

// AppendNodeID appends NodeID's text to b.
func AppendNodeID(b []byte, nodeType uint8, guid uint64) []byte {
	b = append(b, NodeIDPrefix(nodeType)...)
	return AppendHex16(b, guid)
}

// AppendHex16 appends v as 16 lower-case hex digits, as GUIDs are
// printed (filled in a fixed array and appended at once: one capacity
// check, not sixteen).
func AppendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	var a [16]byte
	for i := 15; i >= 0; i-- {
		a[i] = digits[v&0xF]
		v >>= 4
	}
	return append(b, a[:]...)
}

// PortsTypeToken is the node type of ibnetdiscover -p: "SW", "CA", "RT", "??".
func PortsTypeToken(nodeType uint8) string {
	switch nodeType {
	case NodeSwitch:
		return "SW"
	case NodeCA:
		return "CA"
	case NodeRouter:
		return "RT"
	}
	return "??"
}

// NodeTypeText is libibmad's node type text: "Channel Adapter",
// "Switch", "Router", or "?(n)?".
func NodeTypeText(nodeType uint8) string {
	switch nodeType {
	case NodeCA:
		return "Channel Adapter"
	case NodeSwitch:
		return "Switch"
	case NodeRouter:
		return "Router"
	}
	return "?(" + strconv.Itoa(int(nodeType)) + ")?"
}

// NodeTypeLower is ibtracert's node type: "ca", "switch", "router",
// "iwarp rnic", or "???".
func NodeTypeLower(nodeType uint8) string {
	switch nodeType {
	case NodeCA:
		return "ca"
	case NodeSwitch:
		return "switch"
	case NodeRouter:
		return "router"
	case 4:
		return "iwarp rnic"
	}
	return "???"
}

func undefined(v uint8) string { return "undefined (" + strconv.Itoa(int(v)) + ")" }
func unknownQ(v uint8) string  { return "?(" + strconv.Itoa(int(v)) + ")" }

// LinkWidthText is libibmad's text for LinkWidthActive: "1X", "4X", "8X",
// "12X", "2X", or "undefined (n)".
func LinkWidthText(w uint8) string {
	switch w {
	case Width1x:
		return "1X"
	case Width4x:
		return "4X"
	case Width8x:
		return "8X"
	case Width12x:
		return "12X"
	case Width2x:
		return "2X"
	}
	return undefined(w)
}

// LinkWidthMaskText is libibmad's text for a width mask
// (LinkWidthEnabled), e.g. "1X or 4X".
func LinkWidthMaskText(mask uint8) string {
	var parts []string
	for _, w := range [...]uint8{Width1x, Width4x, Width8x, Width12x, Width2x} {
		if mask&w != 0 {
			parts = append(parts, LinkWidthText(w))
		}
	}
	s := strings.Join(parts, " or ")
	if mask == 0 || mask>>5 != 0 {
		if s != "" {
			s += " or "
		}
		s += undefined(mask)
	}
	return s
}

// LinkWidthSupportedText is LinkWidthMaskText plus libibmad's
// " (IBA extension)" for masks that are not one of the standard sets.
func LinkWidthSupportedText(mask uint8) string {
	s := LinkWidthMaskText(mask)
	switch mask {
	case 1, 3, 7, 11, 15, 17, 19, 23, 27, 31:
	default:
		if mask>>5 == 0 {
			s += " (IBA extension)"
		}
	}
	return s
}

// LinkSpeedText is libibmad's text for LinkSpeedActive: "Extended speed"
// (0), "2.5 Gbps", "5.0 Gbps", "10.0 Gbps", or "undefined (n)".
func LinkSpeedText(s uint8) string {
	switch s {
	case 0:
		return "Extended speed"
	case SpeedSDR:
		return "2.5 Gbps"
	case SpeedDDR:
		return "5.0 Gbps"
	case SpeedQDR:
		return "10.0 Gbps"
	}
	return undefined(s)
}

// LinkSpeedMaskText is libibmad's text for LinkSpeedSupported and
// LinkSpeedEnabled, e.g. "2.5 Gbps or 5.0 Gbps or 10.0 Gbps".
func LinkSpeedMaskText(mask uint8) string {
	var parts []string
	for _, v := range [...]uint8{SpeedSDR, SpeedDDR, SpeedQDR} {
		if mask&v != 0 {
			parts = append(parts, LinkSpeedText(v))
		}
	}
	s := strings.Join(parts, " or ")
	if mask == 0 || mask>>3 != 0 {
		if s != "" {
			s += " or "
		}
		s += undefined(mask)
	}
	switch mask {
	case 1, 3, 5, 7:
	default:
		if mask>>3 == 0 {
			s += " (IBA extension)"
		}
	}
	return s
}

// LinkSpeedExtText is libibmad's text for LinkSpeedExtActive:
// "No Extended Speed", "14.0625 Gbps", "25.78125 Gbps", "53.125 Gbps",
// "106.25 Gbps", or "undefined (n)".
func LinkSpeedExtText(s uint8) string {
	switch s {
	case ExtSpeedNone:
		return "No Extended Speed"
	case ExtSpeedFDR:
		return "14.0625 Gbps"
	case ExtSpeedEDR:
		return "25.78125 Gbps"
	case ExtSpeedHDR:
		return "53.125 Gbps"
	case ExtSpeedNDR:
		return "106.25 Gbps"
	}
	return undefined(s)
}

// LinkSpeedExtMaskText is libibmad's text for LinkSpeedExtSupported and
// LinkSpeedExtEnabled masks: "0" for none, else e.g.
// "14.0625 Gbps or 25.78125 Gbps".
func LinkSpeedExtMaskText(mask uint8) string {
	if mask == 0 {
		return "0"
	}
	var parts []string
	for _, v := range [...]uint8{ExtSpeedFDR, ExtSpeedEDR, ExtSpeedHDR, ExtSpeedNDR} {
		if mask&v != 0 {
			parts = append(parts, LinkSpeedExtText(v))
		}
	}
	if mask>>4 != 0 {
		parts = append(parts, undefined(mask))
	}
	return strings.Join(parts, " or ")
}

// LinkSpeedExtEnabledText is LinkSpeedExtMaskText except that 30 reads
// "Extended link speeds disabled".
func LinkSpeedExtEnabledText(mask uint8) string {
	if mask == 30 {
		return "Extended link speeds disabled"
	}
	return LinkSpeedExtMaskText(mask)
}

// LinkSpeedDisplay is iblinkinfo's speed text for a port: the aggregated
// extended speed if any ("14.0625 Gbps" .. "212.5 Gbps"), else
// "10.0 Gbps (FDR10)" for FDR10 links, else LinkSpeedText(ispeed).
func LinkSpeedDisplay(ispeed, espeed uint8, fdr10 bool) string {
	if espeed != ExtSpeedNone {
		switch espeed {
		case ExtSpeedXDR:
			return "212.5 Gbps"
		default:
			return LinkSpeedExtText(espeed)
		}
	}
	if fdr10 {
		return "10.0 Gbps (FDR10)"
	}
	return LinkSpeedText(ispeed)
}

// PortStateText is libibmad's text for PortState: "NoChange", "Down",
// "Initialize", "Armed", "Active", or "?(n)".
func PortStateText(s uint8) string {
	switch s {
	case 0:
		return "NoChange"
	case PortStateDown:
		return "Down"
	case PortStateInit:
		return "Initialize"
	case PortStateArmed:
		return "Armed"
	case PortStateActive:
		return "Active"
	}
	return unknownQ(s)
}

// PhysStateText is libibmad's text for PortPhysicalState: "NoChange",
// "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
// "LinkErrorRecovery", "PhyTest", or "?(n)".
func PhysStateText(s uint8) string {
	switch s {
	case 0:
		return "NoChange"
	case PhysSleep:
		return "Sleep"
	case PhysPolling:
		return "Polling"
	case PhysDisabled:
		return "Disabled"
	case PhysTraining:
		return "PortConfigurationTraining"
	case PhysLinkUp:
		return "LinkUp"
	case PhysErrRecov:
		return "LinkErrorRecovery"
	case PhysPhyTest:
		return "PhyTest"
	}
	return unknownQ(s)
}

// LinkDownDefaultStateText is libibmad's text for LinkDownDefaultState:
// "NoChange", "Sleep", "Polling", or "?(n)".
func LinkDownDefaultStateText(s uint8) string {
	switch s {
	case 0:
		return "NoChange"
	case PhysSleep:
		return "Sleep"
	case PhysPolling:
		return "Polling"
	}
	return unknownQ(s)
}

// MTUBytes is the size in bytes of an MTU code (1..5), 0 if unknown.
func MTUBytes(code uint8) int {
	if code < MTU256 || code > MTU4096 {
		return 0
	}
	return 128 << code
}

// MTUCode is the MTU code of a size in bytes (256..4096), 0 if the size
// is not an IB MTU.
func MTUCode(bytes int) uint8 {
	for c := MTU256; c <= MTU4096; c++ {
		if MTUBytes(c) == bytes {
			return c
		}
	}
	return 0
}

// MTUText is libibmad's text for an MTU code: "256" .. "4096", or "?(n)".
func MTUText(code uint8) string {
	if n := MTUBytes(code); n != 0 {
		return strconv.Itoa(n)
	}
	return unknownQ(code)
}

// VLCapText is libibmad's text for VLCap: "VL0", "VL0-1", "VL0-3",
// "VL0-7", "VL0-14", or "?(n)".
func VLCapText(code uint8) string {
	switch code {
	case 1:
		return "VL0"
	case 2:
		return "VL0-1"
	case 3:
		return "VL0-3"
	case 4:
		return "VL0-7"
	case 5:
		return "VL0-14"
	}
	return unknownQ(code)
}

// OperVLsText is libibmad's text for OperationalVLs: VLCapText, with 0
// reading "No change".
func OperVLsText(code uint8) string {
	if code == 0 {
		return "No change"
	}
	return VLCapText(code)
}

// DataVLs is the number of data VLs of a VLCap/OperationalVLs code
// (1, 2, 4, 8, 15), 0 if unknown.
func DataVLs(code uint8) int {
	switch code {
	case 1, 2, 3, 4:
		return 1 << (code - 1)
	case 5:
		return 15
	}
	return 0
}
