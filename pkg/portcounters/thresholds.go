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
}

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
}

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
			return th, warnings, &ThresholdError{File: file, Line: n, Msg: fmt.Sprintf("want CounterName=value, got %q", line)}
		}
		v, err := strconv.ParseUint(val, 0, 64)
		if err != nil {
			return th, warnings, &ThresholdError{File: file, Line: n, Msg: fmt.Sprintf("%s: bad value %q", name, val)}
		}
		i := pma.ErrorIndex(name)
		if i < 0 {
			warnings = append(warnings, fmt.Sprintf("%s:%d: unknown counter %q ignored", file, n, name))
			continue
		}
		th.Limit[i] = v
		th.Set = append(th.Set, Threshold{name, v})
	}
	if err := sc.Err(); err != nil {
		return th, warnings, &ThresholdError{File: file, Line: n + 1, Msg: err.Error()}
	}
	return th, warnings, nil
}

// Exceeds reports whether any counter of e is beyond its limit.
func (t *Thresholds) Exceeds(e *pma.Errors) bool {
	for i, v := range e {
		if v > t.Limit[i] {
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
