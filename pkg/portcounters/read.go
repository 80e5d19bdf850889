package portcounters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ErrNoLID is the failure of a query to a port that has no LID: a GMP
// cannot be routed there (ibqueryerrors sends it to LID 0 and fails).
var ErrNoLID = errors.New("port has no LID")

// Config says how to read the counters.
type Config struct {
	// Querier sends the PerfMgt MADs by the rules discovery's SMPs
	// follow (Querier.Exchange: per-attempt timeout, retries, the full
	// timeout and a bounded window through a peer that queues, as ibsim
	// does). When nil, Read uses one over Transport with Timeout and
	// Retries and the window discovery would use for Outstanding.
	Querier   *discover.Querier
	Transport transport.Transport
	// Timeout per attempt (default discover.DefaultTimeout) and further
	// attempts after a timeout (used without a Querier).
	Timeout time.Duration
	Retries int
	// Outstanding bounds the nodes read at once (each node has at most
	// one MAD outstanding); the Querier's window bounds it further.
	Outstanding int
	// Thresholds decide which ports are reported (and, on switches with
	// AllPortSelect, whether the ports are read one by one at all).
	Thresholds Thresholds
	// PerPort reads every port on its own even where a switch could sum
	// them with AllPortSelect (what links and watch need).
	PerPort bool
	// OverOnly keeps in the report only the samples ibqueryerrors'
	// default output prints (with or without --data, -r, --details):
	// those beyond a threshold and those whose query failed. Every port
	// read is still counted (PortsChecked, Summary); JSON, Lookup and
	// --counters need every sample and must leave it off.
	OverOnly bool
	// Details reads, for a port whose PortRcvErrors or PortXmitDiscards
	// exceeds its threshold, PortRcvErrorDetails or PortXmitDiscardDetails
	// (ibqueryerrors --details).
	Details bool
	// ClearErrors and ClearCounts reset the error (PortXmitWait included
	// where counted) and data counters after reading, with PortCounters
	// (and PortCountersExtended) Sets as ibqueryerrors -k and -K do. Off,
	// no Set is ever sent. The Sets go through Transport, which must
	// allow them (see transport.ReadOnly).
	ClearErrors, ClearCounts bool
	// Types limits the nodes read to these node types (smp.NodeCA,
	// smp.NodeSwitch, smp.NodeRouter), as ibqueryerrors --ca, --switch,
	// --router; empty reads every node.
	Types []uint8
	// Node, when set, is the only node read (ibqueryerrors -G, -D);
	// Port, when not 0, the only port of a CA or router read (the port
	// libibnetdisc's one-hop discovery from it knows).
	Node *model.Node
	Port int
	// Sampled, when set, is given every sample as it is read (a
	// switch's AllPortSelect sum too, Port pma.AllPorts), whether or not
	// the report keeps it (OverOnly): a caller that needs every port's
	// values can keep them its own way. It is called from the goroutine
	// reading the node, for different nodes at once, and must not keep s.
	Sampled func(n *model.Node, s *Sample)
}

func (c *Config) wants(n *model.Node) bool {
	if c.Node != nil && n != c.Node {
		return false
	}
	if len(c.Types) == 0 {
		return true
	}
	for _, t := range c.Types {
		if n.Type() == t {
			return true
		}
	}
	return false
}

// QueryError is one PerfMgt query that failed.
type QueryError struct {
	Node *model.Node
	LID  uint16
	Port int // pma.AllPorts for a switch's sum
	Attr uint16
	Err  error
}

func (e *QueryError) Error() string {
	port := fmt.Sprint(e.Port)
	if e.Port == int(pma.AllPorts) {
		port = "ALL"
	}
	return fmt.Sprintf("%s query failed on %q, lid %d port %s: %v", pma.AttrName(e.Attr), e.Node.Description(), e.LID, port, e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

// Sample is what was read from one port, or from all ports of a switch
// (Port = pma.AllPorts).
type Sample struct {
	Port     int
	LID      uint16
	GUID     uint64 // port GUID
	Counters pma.PortCounters
	Ext      pma.PortCountersExtended
	HasExt   bool
	// Errors are the values judged: the 64-bit extended error counters
	// where the PMA has them, else PortCounters' (PortXmitWait 0 where
	// the PMA does not count it).
	Errors pma.Errors
	// Ext64 is true when Errors come from PortCountersExtended.
	Ext64 bool
	Err   *QueryError // nil when read
	// Over is true when an error counter exceeds its threshold.
	Over bool
	// RcvDetails and XmitDetails are the PortRcvErrorDetails and
	// PortXmitDiscardDetails data read with Config.Details (nil when not
	// read); DetailErrs the detail queries that failed.
	RcvDetails, XmitDetails *[pma.DataSize]byte
	DetailErrs              []*QueryError
}

// NodeReport is one node's counters, as ibqueryerrors walks them.
type NodeReport struct {
	Node   *model.Node
	Cap    Caps
	CapErr *QueryError
	// All is the AllPortSelect sum of a switch that supports it (nil
	// otherwise, or with Config.PerPort).
	All *Sample
	// Ports are the ports read one by one, by number.
	Ports []Sample
	// PortsChecked counts ports as ibqueryerrors does (a switch whose sum
	// is clean counts all its ports).
	PortsChecked int
	// Cleared is set when the counters were reset after reading; ClearErr
	// is the first reset that failed.
	Cleared  bool
	ClearErr *QueryError
}

// Caps is what the read keeps of a node's ClassPortInfo: its capability
// masks (the whole attribute is 88 bytes more in every NodeReport).
type Caps struct {
	CapabilityMask  uint16
	CapabilityMask2 uint32
}

// Has reports whether the capability mask has every bit of bits.
func (c Caps) Has(bits uint16) bool { return c.CapabilityMask&bits == bits }

// Bad reports whether a port of the node (or its sum) exceeds a threshold.
func (n *NodeReport) Bad() bool {
	if n.All != nil && n.All.Over {
		return true
	}
	for i := range n.Ports {
		if n.Ports[i].Over {
			return true
		}
	}
	return false
}

// Report is the counters of a fabric.
type Report struct {
	// Nodes in the order ibqueryerrors prints them (the reverse of
	// libibnetdisc's discovery order).
	Nodes      []NodeReport
	Thresholds Thresholds
	// Failures are the queries that failed, in node order.
	Failures []*QueryError
	MADs     int64
	// Names maps node GUIDs to the names printed (nil: descriptions).
	Names *nodenamemap.Map

	byNode map[*model.Node]*NodeReport // Lookup's index
}

// Summary counts as ibqueryerrors' summary does.
func (r *Report) Summary() (nodes, badNodes, ports, badPorts int) {
	for i := range r.Nodes {
		n := &r.Nodes[i]
		nodes++
		if n.Bad() {
			badNodes++
		}
		ports += n.PortsChecked
		for j := range n.Ports {
			if n.Ports[j].Over {
				badPorts++
			}
		}
	}
	return
}

// Read reads the counters of every node of f through cfg.Transport. It
// returns an error only when the transport fails or ctx ends; failed
// queries are in the report.
func Read(ctx context.Context, cfg Config, f *model.Fabric) (*Report, error) {
	r := &reader{cfg: cfg, q: cfg.Querier}
	if r.q == nil {
		r.q = &discover.Querier{Transport: cfg.Transport, Timeout: cfg.Timeout, Retries: cfg.Retries,
			Window: discover.WindowFor(cfg.Transport, max(1, cfg.Outstanding), false)}
	}
	workers := cfg.Outstanding
	if workers <= 0 {
		workers = discover.DefaultOutstanding
	}
	if r.q.Window != nil {
		// more would only wait for room in the window
		workers = min(workers, r.q.Window.Max())
	}
	mads := r.q.SMPs()
	// ibqueryerrors' order: the reverse of libibnetdisc's.
	nodes := make([]*model.Node, 0, len(f.Nodes))
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		if cfg.wants(f.Nodes[i]) {
			nodes = append(nodes, f.Nodes[i])
		}
	}
	rep := &Report{Thresholds: cfg.Thresholds, Nodes: make([]NodeReport, len(nodes))}
	err := discover.Parallel(ctx, workers, len(nodes), func(ctx context.Context, i int) error {
		return r.node(ctx, nodes[i], &rep.Nodes[i])
	})
	rep.MADs = r.q.SMPs() - mads
	for i := range rep.Nodes {
		nr := &rep.Nodes[i]
		if nr.CapErr != nil {
			rep.Failures = append(rep.Failures, nr.CapErr)
		}
		if nr.All != nil && nr.All.Err != nil {
			rep.Failures = append(rep.Failures, nr.All.Err)
		}
		if nr.All != nil {
			rep.Failures = append(rep.Failures, nr.All.DetailErrs...)
		}
		for j := range nr.Ports {
			if e := nr.Ports[j].Err; e != nil {
				rep.Failures = append(rep.Failures, e)
			}
			rep.Failures = append(rep.Failures, nr.Ports[j].DetailErrs...)
		}
	}
	return rep, err
}

type reader struct {
	cfg Config
	q   *discover.Querier
}

// get sends one PerfMgt request through the Querier and returns its data
// area. Timeouts are retried; a transport failure is a
// *discover.FatalError.
func (r *reader) get(ctx context.Context, n *model.Node, lid uint16, port int, m pma.MAD, out *[pma.DataSize]byte) *QueryError {
	qe := func(err error) *QueryError {
		return &QueryError{Node: n, LID: lid, Port: port, Attr: m.AttrID, Err: err}
	}
	if lid == 0 {
		return qe(ErrNoLID)
	}
	// The port-state rule (routing.PortActive): a GMP to a port that is
	// not Active is dropped on the way, and counted as a discard by the
	// port that sends it there. It is not sent: it fails at once, as
	// ibqueryerrors' query there fails by timing out.
	target := n.Port(port)
	if n.IsSwitch() {
		target = n.Port(0)
	}
	if target != nil && !routing.PortActive(target) {
		return qe(&routing.PortStateError{Port: target})
	}
	var req, resp [pma.MADSize]byte
	if err := m.MarshalTo(req[:]); err != nil {
		return qe(err)
	}
	if err := r.q.Exchange(ctx, lid, req[:], resp[:]); err != nil {
		if ctx.Err() != nil {
			return qe(ctx.Err())
		}
		return qe(err)
	}
	var rm pma.MAD
	if err := rm.UnmarshalBinary(resp[:]); err != nil {
		return qe(fmt.Errorf("bad response: %w", err))
	}
	if rm.AttrID != m.AttrID || !rm.IsResponse() {
		return qe(fmt.Errorf("response for attribute 0x%04x method 0x%02x", rm.AttrID, rm.Method))
	}
	if rm.Status != 0 {
		return qe(&pma.StatusError{Status: rm.Status})
	}
	*out = rm.Data
	return nil
}

// stop reports whether a query error must end the whole read.
func stop(e *QueryError) error {
	if e != nil && discover.IsStop(e.Err) {
		return e.Err
	}
	return nil
}

// portLID is the LID a GMP for port p of n goes to: a switch's port-0 LID,
// else the port's own.
func portLID(n *model.Node, p int) uint16 {
	if n.IsSwitch() {
		return n.SMALID()
	}
	if pp := n.Port(p); pp != nil {
		return pp.BaseLID()
	}
	return 0
}

func (r *reader) node(ctx context.Context, n *model.Node, nr *NodeReport) error {
	nr.Node = n
	// ClassPortInfo: a switch's port 0, a CA's first known port.
	cp := 0
	if !n.IsSwitch() {
		for p := 1; p <= n.NumPorts(); p++ {
			if n.Port(p) != nil && r.onlyPort(n, p) {
				cp = p
				break
			}
		}
	}
	var data [pma.DataSize]byte
	if e := r.get(ctx, n, portLID(n, cp), cp, pma.NewGet(pma.AttrClassPortInfo, uint8(cp)), &data); e != nil {
		nr.CapErr = e
		if err := stop(e); err != nil {
			return err
		}
	} else {
		var cpi pma.ClassPortInfo
		cpi.UnmarshalBinary(data[:])
		nr.Cap = Caps{CapabilityMask: cpi.CapabilityMask, CapabilityMask2: cpi.CapabilityMask2}
	}
	allPorts := nr.CapErr == nil && nr.Cap.Has(pma.CapAllPortSelect) && !r.cfg.PerPort
	start := 1
	if n.IsSwitch() && n.HasSwitchInfo && n.SwitchInfo.EnhancedPort0 {
		start = 0
	}
	if allPorts {
		s, err := r.sample(ctx, n, nr, int(pma.AllPorts))
		r.sampled(n, &s)
		if r.keep(&s) {
			all := s // (s itself stays on the stack)
			nr.All = &all
		}
		if err != nil {
			return err
		}
		if s.Err != nil || !s.Over {
			nr.PortsChecked += n.NumPorts()
			return r.clear(ctx, n, nr, int(pma.AllPorts))
		}
	}
	for p := start; p <= n.NumPorts(); p++ {
		if n.Port(p) == nil || !r.onlyPort(n, p) {
			continue
		}
		s, err := r.sample(ctx, n, nr, p)
		r.sampled(n, &s)
		if r.keep(&s) {
			nr.Ports = append(nr.Ports, s)
		}
		nr.PortsChecked++
		if err != nil {
			return err
		}
		if !allPorts {
			if err := r.clear(ctx, n, nr, p); err != nil {
				return err
			}
		}
	}
	if allPorts {
		return r.clear(ctx, n, nr, int(pma.AllPorts))
	}
	return nil
}

// sampled hands s to Config.Sampled.
func (r *reader) sampled(n *model.Node, s *Sample) {
	if r.cfg.Sampled != nil {
		r.cfg.Sampled(n, s)
	}
}

// keep reports whether s stays in the report (Config.OverOnly).
func (r *reader) keep(s *Sample) bool {
	return !r.cfg.OverOnly || s.Over || s.Err != nil
}

// onlyPort reports whether port p of n is read under Config.Port.
func (r *reader) onlyPort(n *model.Node, p int) bool {
	return r.cfg.Port == 0 || n.IsSwitch() || p == r.cfg.Port
}

// sample reads PortCounters (and PortCountersExtended where the PMA has
// them) of port p of n.
func (r *reader) sample(ctx context.Context, n *model.Node, nr *NodeReport, p int) (Sample, error) {
	lid := portLID(n, p)
	s := Sample{Port: p, LID: lid}
	if p == int(pma.AllPorts) {
		if pp := n.Port(0); pp != nil {
			s.GUID = pp.GUID
		}
	} else if pp := n.Port(p); pp != nil {
		s.GUID = pp.GUID
	}
	if s.GUID == 0 {
		s.GUID = n.Info.PortGUID
	}
	var data [pma.DataSize]byte
	if e := r.get(ctx, n, lid, p, pma.NewGet(pma.AttrPortCounters, uint8(p)), &data); e != nil {
		s.Err = e
		return s, stop(e)
	}
	s.Counters.UnmarshalBinary(data[:])
	cm := nr.Cap.CapabilityMask
	if cm&(pma.CapExtWidth|pma.CapExtWidthNoIETF) != 0 {
		if e := r.get(ctx, n, lid, p, pma.NewGet(pma.AttrPortCountersExtended, uint8(p)), &data); e != nil {
			s.Err = e
			return s, stop(e)
		}
		s.Ext.UnmarshalBinary(data[:])
		s.HasExt = true
	}
	if cm&pma.CapXmitWait == 0 {
		s.Counters.PortXmitWait = 0
	}
	if s.HasExt && nr.Cap.CapabilityMask2&pma.Cap2AddlPortCountersExt != 0 {
		s.Errors, s.Ext64 = s.Ext.ErrorCounters, true
	} else {
		s.Errors = s.Counters.Errors()
	}
	s.Over = r.cfg.Thresholds.Exceeds(&s.Errors)
	if r.cfg.Details && s.Over {
		for _, d := range []struct {
			counter string
			attr    uint16
			out     **[pma.DataSize]byte
		}{{"PortRcvErrors", pma.AttrPortRcvErrorDetails, &s.RcvDetails}, {"PortXmitDiscards", pma.AttrPortXmitDiscardDetails, &s.XmitDetails}} {
			if i := pma.ErrorIndex(d.counter); !r.cfg.Thresholds.Over(i, s.Errors[i]) {
				continue
			}
			var b [pma.DataSize]byte
			if e := r.get(ctx, n, lid, p, pma.NewGet(d.attr, uint8(p)), &b); e != nil {
				s.DetailErrs = append(s.DetailErrs, e)
				if err := stop(e); err != nil {
					return s, err
				}
				continue
			}
			*d.out = &b
		}
	}
	return s, nil
}

// clear resets the counters of port p of n after reading, as
// ibqueryerrors' clear_port does, when the config asks for it.
func (r *reader) clear(ctx context.Context, n *model.Node, nr *NodeReport, p int) error {
	if !r.cfg.ClearErrors && !r.cfg.ClearCounts {
		return nil
	}
	cm := nr.Cap.CapabilityMask
	var mask uint32
	if r.cfg.ClearErrors {
		mask |= pma.SelectAllErrors
		if cm&pma.CapXmitWait != 0 {
			mask |= pma.SelectXmitWait
		}
	}
	if r.cfg.ClearCounts {
		mask |= pma.SelectAllData
	}
	lid := portLID(n, p)
	var data [pma.DataSize]byte
	fail := func(e *QueryError) error {
		if nr.ClearErr == nil {
			nr.ClearErr = e
		}
		return stop(e)
	}
	if e := r.get(ctx, n, lid, p, pma.NewClear(uint8(p), mask), &data); e != nil {
		return fail(e)
	}
	if r.cfg.ClearErrors && r.cfg.Details {
		// ibqueryerrors -k --details also resets the detail counters (and
		// says nothing when that fails)
		for _, d := range []struct {
			attr uint16
			mask uint16
		}{{pma.AttrPortXmitDiscardDetails, 0xf}, {pma.AttrPortRcvErrorDetails, 0x3f}} {
			if err := stop(r.get(ctx, n, lid, p, pma.NewClearDetails(d.attr, uint8(p), d.mask), &data)); err != nil {
				return err
			}
		}
	}
	if cm&(pma.CapExtWidth|pma.CapExtWidthNoIETF) != 0 {
		mask = 0
		if r.cfg.ClearCounts {
			mask = 0x0F
			if cm&pma.CapExtWidth != 0 {
				mask = 0xFF
			}
		}
		if r.cfg.ClearErrors && nr.Cap.CapabilityMask2&pma.Cap2AddlPortCountersExt != 0 {
			mask |= 0xfff0000
			if cm&pma.CapXmitWait != 0 {
				mask |= 1 << 28
			}
		}
		if mask != 0 {
			if e := r.get(ctx, n, lid, p, pma.NewClearExtended(uint8(p), mask), &data); e != nil {
				return fail(e)
			}
		}
	}
	nr.Cleared = true
	return nil
}
