package portcounters

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// Lookup returns the sample read from port num of n, or nil when that
// port was not read on its own.
func (r *Report) Lookup(n *model.Node, num int) *Sample {
	if r.byNode == nil {
		r.byNode = make(map[*model.Node]*NodeReport, len(r.Nodes))
		for i := range r.Nodes {
			r.byNode[r.Nodes[i].Node] = &r.Nodes[i]
		}
	}
	nr := r.byNode[n]
	if nr == nil {
		return nil
	}
	for i := range nr.Ports {
		if nr.Ports[i].Port == num {
			return &nr.Ports[i]
		}
	}
	return nil
}

// ErrorTotal is the sum of a sample's error counters, PortXmitWait (a
// congestion count, not an error) left out.
func ErrorTotal(s *Sample) uint64 {
	var t uint64
	for i, v := range s.Errors {
		if i != pma.PortXmitWait {
			t += v
		}
	}
	return t
}

// CellText is a port's error total for a table cell: "?" when it was not
// read.
func CellText(s *Sample) string {
	if s == nil || s.Err != nil {
		return "?"
	}
	return strconv.FormatUint(ErrorTotal(s), 10)
}

// PortKey names a port across sweeps: node GUID and port number.
type PortKey struct {
	NodeGUID uint64
	Port     int
}

// Snapshot is the error counters of every port read on its own, with the
// time they were read.
type Snapshot struct {
	At     time.Time
	Errors map[PortKey]pma.Errors
}

// Snapshot returns r's per-port error counters, taken at at.
func (r *Report) Snapshot(at time.Time) Snapshot {
	s := Snapshot{At: at, Errors: make(map[PortKey]pma.Errors)}
	for i := range r.Nodes {
		nr := &r.Nodes[i]
		for j := range nr.Ports {
			if p := &nr.Ports[j]; p.Err == nil {
				s.Errors[PortKey{nr.Node.GUID(), p.Port}] = p.Errors
			}
		}
	}
	return s
}

// Increase is how much one port's error counters grew between two
// snapshots (a counter that went down was reset: all of its new value is
// counted).
type Increase struct {
	Port  *model.PhysPort
	Delta pma.Errors
}

func increase(prev, cur Snapshot, p *model.PhysPort) (Increase, bool) {
	k := PortKey{p.Node.GUID(), int(p.Num)}
	a, okA := prev.Errors[k]
	b, okB := cur.Errors[k]
	if !okA || !okB {
		return Increase{}, false
	}
	inc := Increase{Port: p}
	for i := range b {
		switch {
		case b[i] > a[i]:
			inc.Delta[i] = b[i] - a[i]
		case b[i] < a[i]:
			inc.Delta[i] = b[i]
		}
	}
	return inc, inc.Delta.Any()
}

// LinkIncrease is a link one of whose ends counted errors between two
// snapshots.
type LinkIncrease struct {
	A, B     *model.PhysPort
	Ends     []Increase // the ends that counted (one or two)
	Interval time.Duration
}

// LinkIncreases lists, in f.Links order, the links of f whose error
// counters (PortXmitWait included) grew from prev to cur. A link with an
// end that is not Active (routing.PortActive) is left out: such a port
// discards whatever is routed to it, the reader's own queries included.
func LinkIncreases(f *model.Fabric, prev, cur Snapshot) []LinkIncrease {
	var out []LinkIncrease
	f.Links(func(a, b *model.PhysPort) {
		if !routing.PortActive(a) || !routing.PortActive(b) {
			return
		}
		l := LinkIncrease{A: a, B: b, Interval: cur.At.Sub(prev.At)}
		for _, p := range []*model.PhysPort{a, b} {
			if inc, ok := increase(prev, cur, p); ok {
				l.Ends = append(l.Ends, inc)
			}
		}
		if len(l.Ends) > 0 {
			out = append(out, l)
		}
	})
	return out
}

func portName(p *model.PhysPort) string { return fmt.Sprintf("%q[%d]", p.Node.Description(), p.Num) }

// Text is one line (without newline) naming the link and, per end that
// counted, each counter's increase and its rate per second over the
// interval between the reads.
func (l *LinkIncrease) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "link %s - %s: error counters up in %s:", portName(l.A), portName(l.B), l.Interval.Round(time.Millisecond))
	secs := l.Interval.Seconds()
	for _, e := range l.Ends {
		fmt.Fprintf(&b, " %s", portName(e.Port))
		for i, d := range e.Delta {
			if d == 0 {
				continue
			}
			fmt.Fprintf(&b, " %s +%d", pma.ErrorNames[i], d)
			if secs > 0 {
				fmt.Fprintf(&b, " (%.3g/s)", float64(d)/secs)
			}
		}
		b.WriteByte(';')
	}
	return strings.TrimSuffix(b.String(), ";")
}
