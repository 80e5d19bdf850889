package netfile

import (
	"strconv"
	"strings"
)

// The counters ibsim's PerformanceSet command can set, by attribute, with
// ibsim's spelling (matched without regard to case, as ibsim does).
var perfFields = map[string][]string{
	"PortCounters": {
		"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
		"PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors",
		"PortXmitDiscards", "PortXmitConstraintErrors", "PortRcvConstraintErrors",
		"LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
		"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait",
	},
	"PortCountersExtended": {
		"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts",
		"PortUnicastXmitPkts", "PortUnicastRcvPkts", "PortMultiCastXmitPkts", "PortMultiCastRcvPkts",
	},
}

// PerfCounter returns the canonical attribute and field names of a
// PerformanceSet counter (PortCounters or PortCountersExtended; ibsim's
// other PerfMgt attributes are not simulated), or ok=false.
func PerfCounter(attr, field string) (a, fld string, ok bool) {
	for name, fields := range perfFields {
		if !strings.EqualFold(name, attr) {
			continue
		}
		for _, f := range fields {
			if strings.EqualFold(f, field) {
				return name, f, true
			}
		}
		return name, field, false
	}
	return attr, field, false
}

// parsePerfSet parses the part of `PerformanceSet "id"[p] Attr.Field=value`
// after the target into c.Args = [Attr, Field, value], as ibsim splits it:
// the attribute ends at the first '.', the field at the '=' (trailing
// blanks trimmed), and the value is the rest (an integer in C syntax,
// leading blanks allowed).
func parsePerfSet(c *Command, rest string) error {
	rest = strings.TrimLeft(rest, " \t\r\n\v\f")
	attr, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return ErrCommand
	}
	field, val, ok := strings.Cut(rest, "=")
	if !ok {
		return ErrCommand
	}
	// strtoull skips leading blanks; nothing may follow the number.
	c.Args = []string{attr, strings.TrimRight(field, " \t\r\n\v\f"), strings.TrimLeft(strings.TrimRight(val, "\r\n"), " \t\v\f")}
	return nil
}

// PerfSet is the checked argument list of a PerformanceSet command.
type PerfSet struct {
	Attr, Field string // canonical names
	Value       uint64
}

// PerfSet returns the arguments of a PerformanceSet command.
func (c *Command) PerfSet() (PerfSet, error) {
	if c.Verb != "PerformanceSet" || len(c.Args) != 3 {
		return PerfSet{}, ErrCommand
	}
	a, f, ok := PerfCounter(c.Args[0], c.Args[1])
	if !ok {
		return PerfSet{}, ErrCommand
	}
	v, err := strconv.ParseUint(c.Args[2], 0, 64)
	if err != nil {
		return PerfSet{}, ErrCommand
	}
	return PerfSet{Attr: a, Field: f, Value: v}, nil
}
