package pma

import (
	"encoding/binary"
	"strconv"
)

// ClassPortInfo capability mask bits (CapabilityMask, host order).
const (
	CapAllPortSelect           uint16 = 1 << 8  // PortSelect 0xFF sums a switch's ports
	CapExtWidth                uint16 = 1 << 9  // PortCountersExtended with all fields
	CapExtWidthNoIETF          uint16 = 1 << 10 // PortCountersExtended without unicast/multicast
	CapSamplesOnly             uint16 = 1 << 11
	CapXmitWait                uint16 = 1 << 12 // PortCounters:PortXmitWait is counted
	CapInhibitLimitedPKeyMcast uint16 = 1 << 13
	CapRSFECCounters           uint16 = 1 << 14
	CapQP1Dropped              uint16 = 1 << 15
)

// CapabilityMask2 bits.
const (
	// Cap2AddlPortCountersExt: PortCountersExtended also carries the
	// 64-bit error counters.
	Cap2AddlPortCountersExt uint32 = 1 << 1
)

// ClassPortInfoSize is the encoded size of ClassPortInfo.
const ClassPortInfoSize = 72

// ClassPortInfo is the PerfMgt ClassPortInfo attribute (0x0001).
type ClassPortInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	CapabilityMask  uint16
	CapabilityMask2 uint32 // 27 bits
	RespTimeValue   uint8  // 5 bits
	RedirectGID     [16]byte
	RedirectTC      uint8
	RedirectSL      uint8  // 4 bits
	RedirectFL      uint32 // 20 bits
	RedirectLID     uint16
	RedirectPKey    uint16
	RedirectQP      uint32 // 24 bits
	RedirectQKey    uint32
	TrapGID         [16]byte
	TrapTC          uint8
	TrapSL          uint8  // 4 bits
	TrapFL          uint32 // 20 bits
	TrapLID         uint16
	TrapPKey        uint16
	TrapHL          uint8
	TrapQP          uint32 // 24 bits
	TrapQKey        uint32
}

// Has reports whether the capability mask has every bit of c.
func (c *ClassPortInfo) Has(bits uint16) bool { return c.CapabilityMask&bits == bits }

// UnmarshalBinary decodes ClassPortInfo from a PerfMgt data area.
func (c *ClassPortInfo) UnmarshalBinary(b []byte) error {
	if len(b) < ClassPortInfoSize {
		return ErrShort
	}
	be := binary.BigEndian
	c.BaseVersion = b[0]
	c.ClassVersion = b[1]
	c.CapabilityMask = be.Uint16(b[2:])
	w := be.Uint32(b[4:])
	c.CapabilityMask2 = w >> 5
	c.RespTimeValue = uint8(w & 0x1f)
	copy(c.RedirectGID[:], b[8:24])
	w = be.Uint32(b[24:])
	c.RedirectTC = uint8(w >> 24)
	c.RedirectSL = uint8(w>>20) & 0xf
	c.RedirectFL = w & 0xfffff
	c.RedirectLID = be.Uint16(b[28:])
	c.RedirectPKey = be.Uint16(b[30:])
	c.RedirectQP = be.Uint32(b[32:]) & 0xffffff
	c.RedirectQKey = be.Uint32(b[36:])
	copy(c.TrapGID[:], b[40:56])
	w = be.Uint32(b[56:])
	c.TrapTC = uint8(w >> 24)
	c.TrapSL = uint8(w>>20) & 0xf
	c.TrapFL = w & 0xfffff
	c.TrapLID = be.Uint16(b[60:])
	c.TrapPKey = be.Uint16(b[62:])
	w = be.Uint32(b[64:])
	c.TrapHL = uint8(w >> 24)
	c.TrapQP = w & 0xffffff
	c.TrapQKey = be.Uint32(b[68:])
	return nil
}

// MarshalTo encodes c into b (at least ClassPortInfoSize bytes); fields
// wider than their wire width are truncated.
func (c *ClassPortInfo) MarshalTo(b []byte) error {
	if len(b) < ClassPortInfoSize {
		return ErrShort
	}
	be := binary.BigEndian
	clear(b[:ClassPortInfoSize])
	b[0] = c.BaseVersion
	b[1] = c.ClassVersion
	be.PutUint16(b[2:], c.CapabilityMask)
	be.PutUint32(b[4:], c.CapabilityMask2<<5|uint32(c.RespTimeValue&0x1f))
	copy(b[8:24], c.RedirectGID[:])
	be.PutUint32(b[24:], uint32(c.RedirectTC)<<24|uint32(c.RedirectSL&0xf)<<20|c.RedirectFL&0xfffff)
	be.PutUint16(b[28:], c.RedirectLID)
	be.PutUint16(b[30:], c.RedirectPKey)
	be.PutUint32(b[32:], c.RedirectQP&0xffffff)
	be.PutUint32(b[36:], c.RedirectQKey)
	copy(b[40:56], c.TrapGID[:])
	be.PutUint32(b[56:], uint32(c.TrapTC)<<24|uint32(c.TrapSL&0xf)<<20|c.TrapFL&0xfffff)
	be.PutUint16(b[60:], c.TrapLID)
	be.PutUint16(b[62:], c.TrapPKey)
	be.PutUint32(b[64:], uint32(c.TrapHL)<<24|c.TrapQP&0xffffff)
	be.PutUint32(b[68:], c.TrapQKey)
	return nil
}

// Error counters in the order ibqueryerrors checks and prints them.
const (
	SymbolErrorCounter = iota
	LinkErrorRecoveryCounter
	LinkDownedCounter
	PortRcvErrors
	PortRcvRemotePhysicalErrors
	PortRcvSwitchRelayErrors
	PortXmitDiscards
	PortXmitConstraintErrors
	PortRcvConstraintErrors
	LocalLinkIntegrityErrors
	ExcessiveBufferOverrunErrors
	VL15Dropped
	PortXmitWait
	NumErrors // number of error counters
)

// ErrorNames are the error counters' names as perfquery and ibqueryerrors
// print them (and as threshold files spell them), indexed as above.
var ErrorNames = [NumErrors]string{
	"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
	"PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors",
	"PortXmitDiscards", "PortXmitConstraintErrors", "PortRcvConstraintErrors",
	"LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
	"PortXmitWait",
}

// ErrorIndex returns the index of the error counter called name, or -1.
func ErrorIndex(name string) int {
	for i, n := range ErrorNames {
		if n == name {
			return i
		}
	}
	return -1
}

// Errors holds one value per error counter, indexed as ErrorNames.
type Errors [NumErrors]uint64

// Any reports whether any counter is non-zero.
func (e *Errors) Any() bool {
	for _, v := range e {
		if v != 0 {
			return true
		}
	}
	return false
}

// PortCountersSize is the encoded size of PortCounters.
const PortCountersSize = 44

// CounterSelect bits of PortCounters (bits 16.. are CounterSelect2).
const (
	SelectSymbolErrors      uint32 = 1 << 0
	SelectLinkErrorRecovery uint32 = 1 << 1
	SelectLinkDowned        uint32 = 1 << 2
	SelectRcvErrors         uint32 = 1 << 3
	SelectRcvRemotePhys     uint32 = 1 << 4
	SelectRcvSwitchRelay    uint32 = 1 << 5
	SelectXmitDiscards      uint32 = 1 << 6
	SelectXmitConstraint    uint32 = 1 << 7
	SelectRcvConstraint     uint32 = 1 << 8
	SelectLocalLinkInteg    uint32 = 1 << 9
	SelectExcessiveBufOvr   uint32 = 1 << 10
	SelectVL15Dropped       uint32 = 1 << 11
	SelectXmitData          uint32 = 1 << 12
	SelectRcvData           uint32 = 1 << 13
	SelectXmitPkts          uint32 = 1 << 14
	SelectRcvPkts           uint32 = 1 << 15
	SelectXmitWait          uint32 = 1 << 16 // CounterSelect2 bit 0
	// SelectAllErrors selects every error counter (ibqueryerrors -k
	// without PortXmitWait).
	SelectAllErrors uint32 = 0x0FFF
	// SelectAllData selects the four data counters (ibqueryerrors -K).
	SelectAllData uint32 = 0xF000
)

// PortCounters is the PerfMgt PortCounters attribute (0x0012).
type PortCounters struct {
	PortSelect                   uint8
	CounterSelect                uint16
	SymbolErrorCounter           uint16
	LinkErrorRecoveryCounter     uint8
	LinkDownedCounter            uint8
	PortRcvErrors                uint16
	PortRcvRemotePhysicalErrors  uint16
	PortRcvSwitchRelayErrors     uint16
	PortXmitDiscards             uint16
	PortXmitConstraintErrors     uint8
	PortRcvConstraintErrors      uint8
	CounterSelect2               uint8
	LocalLinkIntegrityErrors     uint8 // 4 bits
	ExcessiveBufferOverrunErrors uint8 // 4 bits
	QP1Dropped                   uint16
	VL15Dropped                  uint16
	PortXmitData                 uint32 // in units of 4 bytes
	PortRcvData                  uint32 // in units of 4 bytes
	PortXmitPkts                 uint32
	PortRcvPkts                  uint32
	PortXmitWait                 uint32
}

// UnmarshalBinary decodes PortCounters from a PerfMgt data area.
func (c *PortCounters) UnmarshalBinary(b []byte) error {
	if len(b) < PortCountersSize {
		return ErrShort
	}
	be := binary.BigEndian
	c.PortSelect = b[1]
	c.CounterSelect = be.Uint16(b[2:])
	c.SymbolErrorCounter = be.Uint16(b[4:])
	c.LinkErrorRecoveryCounter = b[6]
	c.LinkDownedCounter = b[7]
	c.PortRcvErrors = be.Uint16(b[8:])
	c.PortRcvRemotePhysicalErrors = be.Uint16(b[10:])
	c.PortRcvSwitchRelayErrors = be.Uint16(b[12:])
	c.PortXmitDiscards = be.Uint16(b[14:])
	c.PortXmitConstraintErrors = b[16]
	c.PortRcvConstraintErrors = b[17]
	c.CounterSelect2 = b[18]
	c.LocalLinkIntegrityErrors = b[19] >> 4
	c.ExcessiveBufferOverrunErrors = b[19] & 0xf
	c.QP1Dropped = be.Uint16(b[20:])
	c.VL15Dropped = be.Uint16(b[22:])
	c.PortXmitData = be.Uint32(b[24:])
	c.PortRcvData = be.Uint32(b[28:])
	c.PortXmitPkts = be.Uint32(b[32:])
	c.PortRcvPkts = be.Uint32(b[36:])
	c.PortXmitWait = be.Uint32(b[40:])
	return nil
}

// MarshalTo encodes c into b (at least PortCountersSize bytes).
func (c *PortCounters) MarshalTo(b []byte) error {
	if len(b) < PortCountersSize {
		return ErrShort
	}
	be := binary.BigEndian
	b[0] = 0
	b[1] = c.PortSelect
	be.PutUint16(b[2:], c.CounterSelect)
	be.PutUint16(b[4:], c.SymbolErrorCounter)
	b[6] = c.LinkErrorRecoveryCounter
	b[7] = c.LinkDownedCounter
	be.PutUint16(b[8:], c.PortRcvErrors)
	be.PutUint16(b[10:], c.PortRcvRemotePhysicalErrors)
	be.PutUint16(b[12:], c.PortRcvSwitchRelayErrors)
	be.PutUint16(b[14:], c.PortXmitDiscards)
	b[16] = c.PortXmitConstraintErrors
	b[17] = c.PortRcvConstraintErrors
	b[18] = c.CounterSelect2
	b[19] = c.LocalLinkIntegrityErrors<<4 | c.ExcessiveBufferOverrunErrors&0xf
	be.PutUint16(b[20:], c.QP1Dropped)
	be.PutUint16(b[22:], c.VL15Dropped)
	be.PutUint32(b[24:], c.PortXmitData)
	be.PutUint32(b[28:], c.PortRcvData)
	be.PutUint32(b[32:], c.PortXmitPkts)
	be.PutUint32(b[36:], c.PortRcvPkts)
	be.PutUint32(b[40:], c.PortXmitWait)
	return nil
}

// Errors returns the error counters (PortXmitWait included).
func (c *PortCounters) Errors() Errors {
	return Errors{
		uint64(c.SymbolErrorCounter), uint64(c.LinkErrorRecoveryCounter), uint64(c.LinkDownedCounter),
		uint64(c.PortRcvErrors), uint64(c.PortRcvRemotePhysicalErrors), uint64(c.PortRcvSwitchRelayErrors),
		uint64(c.PortXmitDiscards), uint64(c.PortXmitConstraintErrors), uint64(c.PortRcvConstraintErrors),
		uint64(c.LocalLinkIntegrityErrors), uint64(c.ExcessiveBufferOverrunErrors), uint64(c.VL15Dropped),
		uint64(c.PortXmitWait),
	}
}

// PortCountersExtendedSize is the encoded size of PortCountersExtended
// with the additional 64-bit error counters.
const PortCountersExtendedSize = 184

// PortCountersExtended is the PerfMgt PortCountersExtended attribute
// (0x001D): 64-bit data counters and, where ClassPortInfo has
// Cap2AddlPortCountersExt, 64-bit error counters.
type PortCountersExtended struct {
	PortSelect            uint8
	CounterSelect         uint16
	CounterSelect2        uint32
	PortXmitData          uint64 // in units of 4 bytes
	PortRcvData           uint64
	PortXmitPkts          uint64
	PortRcvPkts           uint64
	PortUnicastXmitPkts   uint64
	PortUnicastRcvPkts    uint64
	PortMulticastXmitPkts uint64
	PortMulticastRcvPkts  uint64
	// ErrorCounters are the additional error counters, in ErrorNames
	// order (SymbolErrorCounter .. PortXmitWait).
	ErrorCounters Errors
	QP1Dropped    uint64
}

// UnmarshalBinary decodes PortCountersExtended from a PerfMgt data area.
func (c *PortCountersExtended) UnmarshalBinary(b []byte) error {
	if len(b) < PortCountersExtendedSize {
		return ErrShort
	}
	be := binary.BigEndian
	c.PortSelect = b[1]
	c.CounterSelect = be.Uint16(b[2:])
	c.CounterSelect2 = be.Uint32(b[4:])
	c.PortXmitData = be.Uint64(b[8:])
	c.PortRcvData = be.Uint64(b[16:])
	c.PortXmitPkts = be.Uint64(b[24:])
	c.PortRcvPkts = be.Uint64(b[32:])
	c.PortUnicastXmitPkts = be.Uint64(b[40:])
	c.PortUnicastRcvPkts = be.Uint64(b[48:])
	c.PortMulticastXmitPkts = be.Uint64(b[56:])
	c.PortMulticastRcvPkts = be.Uint64(b[64:])
	for i := range c.ErrorCounters {
		c.ErrorCounters[i] = be.Uint64(b[72+8*i:])
	}
	c.QP1Dropped = be.Uint64(b[176:])
	return nil
}

// MarshalTo encodes c into b (at least PortCountersExtendedSize bytes).
func (c *PortCountersExtended) MarshalTo(b []byte) error {
	if len(b) < PortCountersExtendedSize {
		return ErrShort
	}
	be := binary.BigEndian
	b[0] = 0
	b[1] = c.PortSelect
	be.PutUint16(b[2:], c.CounterSelect)
	be.PutUint32(b[4:], c.CounterSelect2)
	be.PutUint64(b[8:], c.PortXmitData)
	be.PutUint64(b[16:], c.PortRcvData)
	be.PutUint64(b[24:], c.PortXmitPkts)
	be.PutUint64(b[32:], c.PortRcvPkts)
	be.PutUint64(b[40:], c.PortUnicastXmitPkts)
	be.PutUint64(b[48:], c.PortUnicastRcvPkts)
	be.PutUint64(b[56:], c.PortMulticastXmitPkts)
	be.PutUint64(b[64:], c.PortMulticastRcvPkts)
	for i, v := range c.ErrorCounters {
		be.PutUint64(b[72+8*i:], v)
	}
	be.PutUint64(b[176:], c.QP1Dropped)
	return nil
}

// appendField appends one perfquery line: the name, a colon, dots up to
// column 33, the value and a newline.
func appendField(b []byte, name string, val string) []byte {
	b = append(b, name...)
	b = append(b, ':')
	for n := len(name) + 1; n < 33; n++ {
		b = append(b, '.')
	}
	b = append(b, val...)
	return append(b, '\n')
}

func appendUint(b []byte, name string, v uint64) []byte {
	var tmp [20]byte
	return appendField(b, name, string(strconv.AppendUint(tmp[:0], v, 10)))
}

func appendHex(b []byte, name string, v uint64, digits int) []byte {
	var tmp [24]byte
	h := strconv.AppendUint(tmp[:0], v, 16)
	s := make([]byte, 0, 2+digits+len(h))
	s = append(s, "0x"...)
	for i := len(h); i < digits; i++ {
		s = append(s, '0')
	}
	s = append(s, h...)
	return appendField(b, name, string(s))
}

// AppendText appends the fields as perfquery prints them (without its
// "# Port counters" header line).
func (c *PortCounters) AppendText(b []byte) []byte {
	b = appendUint(b, "PortSelect", uint64(c.PortSelect))
	b = appendHex(b, "CounterSelect", uint64(c.CounterSelect), 4)
	e := c.Errors()
	for i := SymbolErrorCounter; i <= PortRcvConstraintErrors; i++ {
		b = appendUint(b, ErrorNames[i], e[i])
	}
	b = appendHex(b, "CounterSelect2", uint64(c.CounterSelect2), 2)
	b = appendUint(b, "LocalLinkIntegrityErrors", e[LocalLinkIntegrityErrors])
	b = appendUint(b, "ExcessiveBufferOverrunErrors", e[ExcessiveBufferOverrunErrors])
	b = appendUint(b, "QP1Dropped", uint64(c.QP1Dropped))
	b = appendUint(b, "VL15Dropped", e[VL15Dropped])
	b = appendUint(b, "PortXmitData", uint64(c.PortXmitData))
	b = appendUint(b, "PortRcvData", uint64(c.PortRcvData))
	b = appendUint(b, "PortXmitPkts", uint64(c.PortXmitPkts))
	b = appendUint(b, "PortRcvPkts", uint64(c.PortRcvPkts))
	return appendUint(b, "PortXmitWait", uint64(c.PortXmitWait))
}

// AppendText appends the fields as perfquery -x prints them (without its
// header line); the error counters only when withErrors (the port's
// ClassPortInfo has Cap2AddlPortCountersExt).
func (c *PortCountersExtended) AppendText(b []byte, withErrors bool) []byte {
	b = appendUint(b, "PortSelect", uint64(c.PortSelect))
	b = appendHex(b, "CounterSelect", uint64(c.CounterSelect), 4)
	if withErrors {
		b = appendHex(b, "CounterSelect2", uint64(c.CounterSelect2), 8)
	}
	b = appendUint(b, "PortXmitData", c.PortXmitData)
	b = appendUint(b, "PortRcvData", c.PortRcvData)
	b = appendUint(b, "PortXmitPkts", c.PortXmitPkts)
	b = appendUint(b, "PortRcvPkts", c.PortRcvPkts)
	b = appendUint(b, "PortUnicastXmitPkts", c.PortUnicastXmitPkts)
	b = appendUint(b, "PortUnicastRcvPkts", c.PortUnicastRcvPkts)
	b = appendUint(b, "PortMulticastXmitPkts", c.PortMulticastXmitPkts)
	b = appendUint(b, "PortMulticastRcvPkts", c.PortMulticastRcvPkts)
	if withErrors {
		for i, v := range c.ErrorCounters {
			b = appendUint(b, ErrorNames[i], v)
		}
		b = appendUint(b, "QP1Dropped", c.QP1Dropped)
	}
	return b
}

// AppendPerfquery appends the fields exactly as perfquery 44 prints them.
// It differs from AppendText in one line: libibmad decodes QP1Dropped
// from bytes 22-23 of the data area (VL15Dropped's bytes) instead of
// 20-21, so perfquery shows VL15Dropped's value there.
func (c *PortCounters) AppendPerfquery(b []byte) []byte {
	q := *c
	q.QP1Dropped = c.VL15Dropped
	return q.AppendText(b)
}
