// Package health checks a discovered fabric for everything that is
// wrong with it (links, identifiers, MTU and VLs, error counters, routes,
// credit loops, changes against a baseline) and returns the findings,
// ranked by severity, with where each one is and what shows it. It never
// prints: cmd/ibcheck renders the report.
package health

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// Check names.
const (
	CheckLinks       = "links"
	CheckIDs         = "ids"
	CheckMTUVL       = "mtu-vl"
	CheckSM          = "sm"
	CheckCounters    = "counters"
	CheckRoutes      = "routes"
	CheckCreditLoops = "credit-loops"
	CheckBaseline    = "baseline"
)

// Checks lists every check, in the order they run.
var Checks = []string{CheckLinks, CheckIDs, CheckMTUVL, CheckSM, CheckCounters, CheckRoutes, CheckCreditLoops, CheckBaseline}

// ErrUnknownCheck: a check name that is not in Checks.
var ErrUnknownCheck = errors.New("unknown check")

// Severity ranks a finding; the higher, the worse.
type Severity int

// Severities. Info findings are listed but are not problems.
const (
	Info Severity = iota
	Warning
	Error
	Critical
)

var severityNames = [...]string{"info", "warning", "error", "critical"}

func (s Severity) String() string {
	if s >= 0 && int(s) < len(severityNames) {
		return severityNames[s]
	}
	return "?"
}

// Place is where a finding is: a node, and a port of it when the finding
// is about one (Port < 0: the node as a whole).
type Place struct {
	Node     string // the node's name (node name map) or NodeDescription
	Type     string // "switch", "ca", "router"
	NodeGUID uint64
	PortGUID uint64
	Port     int
	LID      uint16
	DRPath   string // the directed route the node was reached by
}

func (p Place) String() string {
	s := fmt.Sprintf("%s %q (0x%016x)", p.Type, p.Node, p.NodeGUID)
	if p.Port >= 0 {
		s += fmt.Sprintf(" port %d", p.Port)
	}
	if p.LID != 0 {
		s += fmt.Sprintf(" LID %d", p.LID)
	}
	if p.DRPath != "" {
		s += " DR " + p.DRPath
	}
	return s
}

// Finding is one thing wrong, found by one check.
type Finding struct {
	Check    string
	Kind     string // what kind of problem, within the check
	Severity Severity
	Place    Place
	// Peer is the other end of the link, for a finding about a link.
	Peer *Place
	// Message says what is wrong; Evidence lists the values that show it.
	Message  string
	Evidence []string
}

// Status is what became of one check.
type Status string

// Check statuses. Only Passed is clean: a check that could not run, or
// ran on part of the fabric only, is never reported as passed.
const (
	Passed     Status = "passed"
	Failed     Status = "failed"     // it found problems
	Incomplete Status = "incomplete" // it ran, but part of the fabric could not be checked (Where says which)
	NotRun     Status = "not-run"    // it could not run at all (Reason says why)
	Nothing    Status = "nothing-to-check"
)

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name   string
	Status Status
	// Reason says why a check did not run or had nothing to check.
	Reason string
	// Where lists the parts the check could not look at (Incomplete).
	Where []string
	// Findings counts the check's findings, Problems those that are not Info.
	Findings, Problems int
}

// Report is a whole health check.
type Report struct {
	// Checks in the order they ran (the order of Checks).
	Checks []CheckResult
	// Findings, the worst first (then by check, then by place).
	Findings []Finding
	// Partial: discovery missed part of the fabric, or a check could not
	// run or could not look at part of the fabric.
	Partial bool
	// SMPs and MADs sent by the checks (discovery not included).
	SMPs, MADs int64
	// Counters are the PerfMgt counters as the counters check read them
	// (every port's with Input.Counters.PerPort, unless OverOnly; nil
	// when it did not run or could not read them).
	Counters *portcounters.Report
}

// Problems counts the findings that are not Info.
func (r *Report) Problems() int {
	n := 0
	for i := range r.Findings {
		if r.Findings[i].Severity > Info {
			n++
		}
	}
	return n
}

// NothingChecked reports whether no check had anything to check.
func (r *Report) NothingChecked() bool {
	for _, c := range r.Checks {
		if c.Status != Nothing && c.Status != NotRun {
			return false
		}
	}
	return true
}

// Input is what the checks work on.
type Input struct {
	// Result is the discovery (or a loaded cache: then Querier is nil).
	Result *discover.Result
	// Querier reads what the checks need beyond discovery (forwarding
	// tables, PerfMgt counters); nil when the fabric is not live, and
	// then the checks that need it do not run.
	Querier *discover.Querier
	// Counters configures the counter read (Thresholds included; the
	// check sets its Querier). Without PerPort a switch whose PMA sums
	// its ports (AllPortSelect) is read port by port only when the sum
	// is beyond a threshold, as ibqueryerrors and ibavtrack errors read
	// it; PerPort reads every port, as the Prometheus exporter needs
	// (Report.Counters then has them all, or, with OverOnly, the ones
	// the check reports, every sample going to Sampled).
	Counters portcounters.Config
	// Baseline is the known-good fabric the baseline check compares with
	// (nil: that check does not run); BaselineKeys what it compares.
	Baseline     *model.Fabric
	BaselineKeys topology.DiffKeys
	// MaxOpVLs is OpenSM's max_op_vls (0: model.DefaultMaxOpVLs).
	MaxOpVLs uint8
	// Engine is the routing engine whose hop counts routes are compared
	// with (default min-hop).
	Engine routing.Engine
	// Name names a node (nil: its NodeDescription).
	Name func(*model.Node) string
	// SA answers the PathRecords whose SLs the credit-loops check needs
	// to follow routes on their VLs (nil: every route is taken to use one
	// VL; SAWhy says why there is none).
	SA    *sa.Client
	SAWhy string
	// NewSA, when SA is nil, makes the SA client once the credit-loops
	// check needs one, for the master SM's LID of the local port's
	// PortInfo as discovery read it (nothing is read again).
	NewSA func(smLID uint16) (*sa.Client, error)
	// NoSMInfo, when set, says why no SM can answer SMInfo (the embedded
	// simulator's SM is not a subnet manager): the sm check then has
	// nothing to check.
	NoSMInfo string
	// Workers bounds the switches whose tables are read at once (default:
	// the Querier's window, or 8 without one).
	Workers int
}

// ParseChecks turns --checks and --skip values (comma-separated names)
// into the checks to run, in Checks order. An empty only means all.
func ParseChecks(only, skip string) ([]string, error) {
	split := func(s string) ([]string, error) {
		var out []string
		for _, w := range strings.Split(s, ",") {
			w = strings.TrimSpace(w)
			if w == "" {
				continue
			}
			if !slices.Contains(Checks, w) {
				return nil, fmt.Errorf("%q: %w (one of %s)", w, ErrUnknownCheck, strings.Join(Checks, ", "))
			}
			out = append(out, w)
		}
		return out, nil
	}
	o, err := split(only)
	if err != nil {
		return nil, err
	}
	s, err := split(skip)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range Checks {
		if (len(o) == 0 || slices.Contains(o, c)) && !slices.Contains(s, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// checker holds one run.
type checker struct {
	in   Input
	f    *model.Fabric
	rep  *Report
	tabs *routing.Tables
	// tabsWhy says why there are no tables (not live, nothing to check);
	// tabsWhere lists switches whose tables could not be read whole.
	tabsWhy     string
	tabsNothing bool
	tabsWhere   []string
	tabsRead    bool
	// marked are the links pathav's check marks, kept by the first of
	// the links and mtu-vl checks for the second (markedRan: computed).
	marked    []pathav.Link
	markedRan bool
}

// linkChecks is pathav.CheckLinks of the fabric: every link (all) or the
// marked ones only, which it keeps so that the links and mtu-vl checks
// compute it once between them.
func (c *checker) linkChecks(all bool) []pathav.Link {
	if c.markedRan && !all {
		return c.marked
	}
	ls := pathav.CheckLinks(c.f, c.in.MaxOpVLs)
	c.marked, c.markedRan = nil, true
	for _, l := range ls {
		if l.Mismatch() {
			c.marked = append(c.marked, l)
		}
	}
	if all {
		return ls
	}
	return c.marked
}

// Run runs the checks named (see ParseChecks) on in and returns the
// report. It returns an error only when ctx ends or the transport fails;
// what could not be read makes the report partial.
func Run(ctx context.Context, in Input, checks []string) (*Report, error) {
	if in.Result == nil || in.Result.Fabric == nil {
		return nil, errors.New("health: no fabric")
	}
	if in.Engine == "" {
		in.Engine = routing.MinHop
	}
	if in.Workers <= 0 {
		// as ibhops and ibavtrack read the tables: as many switches at
		// once as the Querier's window allows
		in.Workers = 8
		if in.Querier != nil && in.Querier.Window != nil && in.Querier.Window.Max() > 0 {
			in.Workers = in.Querier.Window.Max()
		}
	}
	c := &checker{in: in, f: in.Result.Fabric, rep: &Report{Partial: in.Result.Partial()}}
	// what discovery missed, no check looked at
	var missed []string
	for i, e := range in.Result.Errors {
		if i == 5 {
			missed = append(missed, fmt.Sprintf("... %d more SMPs failed in discovery", len(in.Result.Errors)-5))
			break
		}
		missed = append(missed, "not discovered: "+e.Error())
	}
	if in.Result.Err != nil {
		missed = append(missed, "discovery stopped early: "+in.Result.Err.Error())
	}
	for _, p := range in.Result.Problems {
		if p.Incomplete() {
			missed = append(missed, "not discovered: "+p.String())
		}
	}
	var smps0 int64
	if in.Querier != nil {
		smps0 = in.Querier.SMPs()
	}
	for _, name := range checks {
		if err := ctx.Err(); err != nil {
			return c.rep, err
		}
		cr := CheckResult{Name: name}
		var fs []Finding
		var err error
		switch name {
		case CheckLinks:
			fs = c.links()
		case CheckIDs:
			fs = c.ids()
		case CheckMTUVL:
			fs = c.mtuVL(&cr)
		case CheckSM:
			fs, err = c.sm(ctx, &cr)
		case CheckCounters:
			fs, err = c.counters(ctx, &cr)
		case CheckRoutes:
			fs, err = c.routes(ctx, &cr)
		case CheckCreditLoops:
			fs, err = c.creditLoops(ctx, &cr)
		case CheckBaseline:
			fs, err = c.baseline(&cr)
		default:
			return c.rep, fmt.Errorf("%q: %w", name, ErrUnknownCheck)
		}
		if err != nil {
			return c.rep, err
		}
		for i := range fs {
			fs[i].Check = name
			if fs[i].Severity > Info {
				cr.Problems++
			}
		}
		cr.Findings = len(fs)
		if cr.Status == "" || cr.Status == Incomplete {
			cr.Where = append(cr.Where, missed...)
		}
		if cr.Status == "" {
			switch {
			case cr.Problems > 0:
				cr.Status = Failed
			case len(cr.Where) > 0:
				cr.Status = Incomplete
			default:
				cr.Status = Passed
			}
		} else if cr.Status == Incomplete && cr.Problems > 0 {
			cr.Status = Failed // what it found stands; Where says what it missed
		}
		if cr.Status == NotRun || cr.Status == Incomplete || len(cr.Where) > 0 {
			c.rep.Partial = true
		}
		c.rep.Checks = append(c.rep.Checks, cr)
		c.rep.Findings = append(c.rep.Findings, fs...)
	}
	if in.Querier != nil {
		c.rep.SMPs = in.Querier.SMPs() - smps0
	}
	order := map[string]int{}
	for i, n := range Checks {
		order[n] = i
	}
	slices.SortStableFunc(c.rep.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(order[a.Check], order[b.Check]))
	})
	return c.rep, nil
}

// name is a node's name.
func (c *checker) name(n *model.Node) string {
	if c.in.Name != nil {
		return c.in.Name(n)
	}
	return n.Description()
}

func nodeType(n *model.Node) string {
	switch {
	case n.IsSwitch():
		return "switch"
	case n.Type() == 3:
		return "router"
	}
	return "ca"
}

// nodePlace is the place of a node as a whole.
func (c *checker) nodePlace(n *model.Node) Place {
	p := Place{Node: c.name(n), Type: nodeType(n), NodeGUID: n.GUID(), Port: -1, DRPath: n.Path.String()}
	if n.IsSwitch() {
		p.LID = n.SMALID()
		if z := n.Port(0); z != nil {
			p.PortGUID = z.GUID
		}
	}
	return p
}

// portPlace is the place of a physical port.
func (c *checker) portPlace(pp *model.PhysPort) Place {
	p := c.nodePlace(pp.Node)
	p.Port = int(pp.Num)
	p.PortGUID = pp.GUID
	p.LID = pp.BaseLID()
	return p
}

func (c *checker) peerPlace(pp *model.PhysPort) *Place {
	if pp == nil {
		return nil
	}
	p := c.portPlace(pp)
	return &p
}

// readTables reads every switch's forwarding table once, for the routes
// and credit-loops checks.
func (c *checker) readTables(ctx context.Context) error {
	if c.tabsRead {
		return nil
	}
	c.tabsRead = true
	if c.in.Querier == nil {
		c.tabsWhy = "the fabric is not live (a loaded cache has no forwarding tables)"
		return nil
	}
	if why := routing.NothingToCheck(c.f, true); why != "" {
		c.tabsWhy, c.tabsNothing = why, true
		return nil
	}
	before := len(c.in.Querier.Errors())
	tabs, err := routing.Read(ctx, c.in.Querier, c.f, c.in.Workers)
	if err != nil {
		return err
	}
	c.tabs = tabs
	seen := map[string]bool{}
	for _, e := range c.in.Querier.Errors()[before:] {
		w := "forwarding table not read whole at DR path " + e.Path.String()
		if !seen[w] {
			seen[w] = true
			c.tabsWhere = append(c.tabsWhere, w)
		}
	}
	for _, sw := range c.f.Switches() {
		if !sw.HasSwitchInfo {
			c.tabsWhere = append(c.tabsWhere, fmt.Sprintf("switch %q (0x%016x): no SwitchInfo, its forwarding table was not read", c.name(sw), sw.GUID()))
		}
	}
	return nil
}

// tablesStatus sets cr's status when the tables are missing; it reports
// whether the check can go on.
func (c *checker) tablesStatus(cr *CheckResult) bool {
	if c.tabs != nil {
		cr.Where = append(cr.Where, c.tabsWhere...)
		return true
	}
	cr.Status, cr.Reason = NotRun, c.tabsWhy
	if c.tabsNothing {
		cr.Status = Nothing
	}
	return false
}
