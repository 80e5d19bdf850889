// Package portcounters reads the PerfMgt port counters of a discovered
// fabric (one PMA at a time per node, many nodes at once) and judges them
// against error thresholds as ibqueryerrors does, with renderers for
// ibqueryerrors' default output and for JSON.
package portcounters

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ibfabric/ibdiag/pkg/pma"
)

// DefaultThresholdFile is where ibqueryerrors (infiniband-diags 44) reads
// its thresholds when none is named.
const DefaultThresholdFile = "/etc/infiniband-diags/error_thresholds"

// MaxThresholdFile bounds the size of a threshold file.
const MaxThresholdFile = 1 << 20

// Thresholds are the error counters' limits: a port is reported when a
// counter exceeds its limit (0 by default: any error counts).
type Thresholds struct {
	Limit pma.Errors
	// Set lists the assignments read, in file order (as ibqueryerrors
	// prints them in its summary); nil when no file was read.
	Set []Threshold
	// Loaded is false when no threshold file was read (ibqueryerrors then
	// prints "(null)" in its summary).
	Loaded bool
	// Suppressed counters are never judged (ibqueryerrors -s/-c);
	// SuppressedNames lists the names given, in order, as its summary
	// prints them.
	Suppressed      [pma.NumErrors]bool
	SuppressedNames []string
}

// suppressible are the PortCounters field names ibqueryerrors -s accepts.
var suppressible = []string{"PortSelect", "CounterSelect",
	"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
	"PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors",
	"PortXmitDiscards", "PortXmitConstraintErrors", "PortRcvConstraintErrors",
	"CounterSelect2", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors",
	"VL15Dropped", "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait"}

// Suppress stops judging the counter called name (any PortCounters field
// name ibqueryerrors accepts; only the error counters have an effect). It
// reports whether the name is known.
func (t *Thresholds) Suppress(name string) bool {
	for _, n := range suppressible {
		if n == name {
			t.SuppressedNames = append(t.SuppressedNames, name)
			if i := pma.ErrorIndex(name); i >= 0 {
				t.Suppressed[i] = true
			}
			return true
		}
	}
	return false
}

// Over reports whether value v of error counter i is judged and beyond
// its threshold.
func (t *Thresholds) Over(i int, v uint64) bool { return !t.Suppressed[i] && v > t.Limit[i] }

// Threshold is one assignment of a threshold file.
type Threshold struct {
	Name  string
	Value uint64
}

// ThresholdError is a bad line of a threshold file.
type ThresholdError struct {
	File string
	Line int
	Msg  string
	// Err is the error that kept the file from being read, if that is
	// the error (bufio.ErrTooLong for an overlong line), else nil.
	Err error
}

// Unwrap returns the error that kept the file from being read, if any.
func (e *ThresholdError) Unwrap() error { return e.Err }

func (e *ThresholdError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ParseThresholds reads a threshold file in ibqueryerrors' format: one
// `CounterName=value` per line (value decimal, 0x hex or 0 octal), blank
// lines and lines starting with '#' ignored, later lines overriding
// earlier ones. Counter names are the error counters perfquery prints
// (SymbolErrorCounter ... VL15Dropped, PortXmitWait). Names it does not
// know are skipped, as ibqueryerrors skips them, and returned as warnings.
func ParseThresholds(file string, data []byte) (Thresholds, []string, error) {
	th := Thresholds{Loaded: true, Set: []Threshold{}}
	if len(data) > MaxThresholdFile {
		return th, nil, &ThresholdError{File: file, Msg: fmt.Sprintf("larger than %d bytes", MaxThresholdFile)}
	}
	var warnings []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), MaxThresholdFile)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || val == "" {
			return th, warnings, &ThresholdError{File: file, Line: n, Msg: "want CounterName=value, got " + shown(line)}
		}
		v, err := strconv.ParseUint(val, 0, 64)
		if err != nil {
			return th, warnings, &ThresholdError{File: file, Line: n, Msg: fmt.Sprintf("%s: bad value %s", plain(name), shown(val))}
		}
		i := pma.ErrorIndex(name)
		if i < 0 {
			warnings = append(warnings, fmt.Sprintf("%s:%d: unknown counter %s ignored", file, n, shown(name)))
			continue
		}
		th.Limit[i] = v
		th.Set = append(th.Set, Threshold{name, v})
	}
	if err := sc.Err(); err != nil {
		return th, warnings, &ThresholdError{File: file, Line: n + 1, Msg: err.Error(), Err: err}
	}
	return th, warnings, nil
}

// Exceeds reports whether any counter of e is beyond its limit.
func (t *Thresholds) Exceeds(e *pma.Errors) bool {
	for i, v := range e {
		if t.Over(i, v) {
			return true
		}
	}
	return false
}

// String is the thresholds as ibqueryerrors' summary line shows them:
// "Thresholds: [Name = value]..." or "(null)" when no file was read.
func (t *Thresholds) String() string {
	if !t.Loaded {
		return "(null)"
	}
	var b strings.Builder
	b.WriteString("Thresholds: ")
	for _, s := range t.Set {
		fmt.Fprintf(&b, "[%s = %d]", s.Name, s.Value)
	}
	return b.String()
}

// shown is s for a message: quoted (control characters escaped) and, past
// maxShown bytes, cut at a character boundary with its length said.
func shown(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// maxShown bounds what a message shows of an input line.
const maxShown = 80

// plain is s as it is when it is short and printable, else shown(s).
func plain(s string) string {
	if len(s) > maxShown || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return shown(s)
	}
	return s
}
