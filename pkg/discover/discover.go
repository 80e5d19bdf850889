// Package discover is the discovery engine: it walks a fabric by
// directed-route SMPs, breadth first from a start node, in parallel up to
// a limit of SMPs on the wire, and builds the model graph.
//
// Discovery runs level by level. Level 0 is the start node (the local
// port, or the node at the end of Config.From); level d+1 holds the nodes
// first reached from level d. Each level is probed in parallel and the
// answers are then taken in a fixed order (parent in discovery order, port
// number ascending), so the graph, the node order and every DR path are
// the same on every run whatever the timing. A hop limit is therefore
// exact: every node within MaxHops hops of the start node is found and
// none beyond.
//
// Each node is read by one worker at a time, so no node ever has more than
// one SMP of ours outstanding, except that several parents of one level
// may probe the same yet unknown node at once (their NodeInfo is what
// tells them it is the same node). A link known from one end is never
// probed from the other: one NodeInfo per link. Probes that leave sibling
// parents (reached from the same node, or by the same port number) by the
// same port number are not sent at once (sibling switches of a fat tree
// reach one node by the same port number), unless the level's answers
// show that such probes reach single-port nodes (see sharing). These
// rules are for real SMAs, which serve one SMP at a time with a VL15
// buffer of one packet. A transport whose peer queues every SMP
// (transport.Limits.Queues: ibsim) is sent a node's reads at once, as
// libibnetdisc sends them, and sibling probes together; the result is
// the same.
//
// Config.Outstanding workers send the SMPs, so never more are in flight;
// below that bound a Window adapts the number in flight to the fabric as
// TCP's congestion window does (grow while round trips stay flat, and
// past 64 while few SMPs are lost and round trips stay within 8 times the
// smallest; shrink on a loss in proportion to the
// share lost), and the first attempts of an SMP wait a timeout estimated
// from the round trips and the SMPs in flight, cut short once SMPs sent
// after it have come back, so a loss costs a few round trips.
//
// # The outcome of a discovery
//
// Discover reports its outcome three ways, each for one question:
//
//   - The returned error: was anything discovered at all? It is non-nil
//     only when nothing was: the start node did not answer (ErrStart,
//     wrapping the cause: transport.ErrTimeout, or context.Canceled when
//     ctx ended first) or the transport failed at once. There is no
//     fabric to print.
//   - Result.Partial: is the fabric that was found complete? When it is
//     not, print it and flag it partial. Partial is true when any of
//     Result.Err (a fatal error that stopped discovery early: a
//     transport failure, or ErrTooManyNodes), Result.Interrupted (ctx
//     ended), Result.Errors (SMPs that failed for good) or an incomplete
//     Problem says something is missing; read those to say what.
//   - Result.Inconsistent: did the fabric answer consistently? Duplicate
//     GUIDs, overlapping LIDs and contradicting answers are warnings on a
//     result that may be complete.
//
// A caller thus checks the error, uses Result.Fabric, and tests Partial
// (and Inconsistent, if it cares); Result.Err alone is not "the error" of
// a run that returned a fabric.
package discover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Defaults of Config. DefaultOutstanding bounds the adaptive window
// where the user gave no -o: past 64 the window doubles once per round
// while few SMPs are lost and round trips stay within 8 times the
// smallest (see Window), so it reaches this bound on a fabric with SMPs
// enough to fill it that neither drops nor queues them.
const (
	DefaultOutstanding = 1024
	DefaultTimeout     = time.Second
	DefaultRetries     = 3
	DefaultMaxNodes    = 1 << 20
)

// windowFor is the bound and fixedness of a window of at most max SMPs
// in flight over a transport of limits lim. -o is an upper bound over the
// transport's own useful window. A peer that queues loses nothing to a
// full window, and a queue building there costs no more than SMPs
// waiting here: the window need not adapt. Nor need it pass
// QueuedWindow: the queue then never runs dry, and more SMPs in flight
// only wait in it, each on a worker of ours.
func windowFor(lim transport.Limits, max int, fixed bool) (int, bool) {
	if lim.Window > 0 && lim.Window < max {
		max = lim.Window
	}
	if lim.Queues {
		max = min(max, QueuedWindow)
	}
	return max, fixed || lim.Queues
}

// WindowFor returns the window Discover would give SMPs sent over tr with
// at most max in flight (adaptive unless fixed): bounded by the
// transport's own window, and fixed at no more than QueuedWindow on a
// peer that queues. Its Max is the number of workers worth running.
func WindowFor(tr transport.Transport, max int, fixed bool) *Window {
	return NewWindow(windowFor(transport.LimitsOf(tr), max, fixed))
}

// QueuedWindow bounds the SMPs in flight to a peer that queues
// (transport.Limits.Queues): through ibsim, on the 2,144-node tree, 64
// and 104 in flight (all its socket holds) took the same time (105 and
// 109 ms, medians of 21 runs), and 104 cost 0.4 MB more peak RSS.
const QueuedWindow = 64

// Errors of Discover.
var (
	// ErrStart: the start node did not answer NodeInfo.
	ErrStart = errors.New("start node did not answer")
	// ErrTooManyNodes: the fabric grew past Config.MaxNodes.
	ErrTooManyNodes = errors.New("node limit reached")
)

// Config controls one discovery.
type Config struct {
	// From is the directed route to the start node; the zero DRPath is
	// the local port.
	From smp.DRPath
	// MaxHops limits discovery to nodes at most that many hops from the
	// start node; zero or a negative value means no limit, so the zero
	// Config discovers the whole fabric. StartOnly asks for a limit of 0.
	MaxHops int
	// StartOnly reads the start node alone (a hop limit of 0: its
	// NodeInfo, PortInfo of its ports, and for a switch SwitchInfo); MaxHops
	// is then ignored.
	StartOnly bool
	// Outstanding is the most SMPs on the wire at once (default 1024): a
	// hard upper bound. Below it the window adapts to the fabric (see
	// Window) unless FixedWindow is set or the transport's peer queues
	// (transport.Limits.Queues: nothing is lost there to adapt to).
	Outstanding int
	// FixedWindow keeps Outstanding SMPs on the wire whenever there is
	// work for them, as ibnetdiscover's -o does.
	FixedWindow bool
	// Timeout is the per-attempt SMP timeout (default 1 s). A first
	// attempt waits less unless FixedTimeout is set or the transport's
	// peer queues: see Querier.
	Timeout time.Duration
	// FixedTimeout makes every attempt wait the whole Timeout. It is
	// implied where the transport's peer queues (transport.Limits.Queues,
	// as ibsim): such a peer answers every SMP (a drop too, at once), so
	// an answer not yet come is one waiting behind others (a descheduled
	// ibsim), and a short attempt's resend would only queue behind it.
	FixedTimeout bool
	// Retries is the number of further attempts after a timeout (default 3;
	// a negative value means none).
	Retries int
	// NoMlnxEPI disables Mellanox ExtendedPortInfo queries (FDR10).
	NoMlnxEPI bool
	// LIDReads reads a new node's attributes after its first PortInfo
	// by LID-routed SMPs when that PortInfo gives it a LID: switches
	// forward those in hardware, where a directed-route SMP costs every
	// switch it crosses firmware time. It needs routes (a subnet manager
	// ran); the first LID-routed SMP that fails turns it off for the rest
	// of the run (that node is read by directed route). The result is the
	// same either way.
	LIDReads bool
	// MaxNodes stops discovery with ErrTooManyNodes in Result.Err when a
	// node beyond this many answers (default DefaultMaxNodes, 1<<20 =
	// 1,048,576 nodes, 16 times the largest fat tree the generator
	// builds). The graph then holds exactly MaxNodes nodes, read as usual,
	// and at most one chunk of 1024 NodeInfo probes is in memory past
	// them, so a broken or hostile fabric that keeps inventing GUIDs costs
	// at most about MaxNodes × (1 + 0.5 × ports) KB.
	MaxNodes int
	// MKey is placed in every SMP.
	MKey uint64
	// Progress, when set, is called for every NodeInfo answer taken into
	// the graph, in discovery order, from the discovering goroutine.
	Progress func(Progress)
	// IBNetDiscoverProgress, when set, receives ibnetdiscover -s's lines
	// once discovery ends: the replay of libibnetdisc's discovery over
	// what was found (see ReplayOptions.Progress).
	IBNetDiscoverProgress func(Progress)
	// Sent, when set, is called after every SMP sent (from any goroutine).
	Sent func()
	// Pool, when set, supplies the MAD buffers (its Outstanding count is
	// back to zero when Discover returns).
	Pool *model.MADPool
	// Memo, when set, keeps the discovery's answers node by node for a
	// later Rediscover (directed-route answers only).
	Memo *Memo
}

// Progress describes one NodeInfo answer, as ibnetdiscover -s prints it.
type Progress struct {
	Path  smp.DRPath
	New   bool
	Node  *model.Node
	Port  uint8 // 0 for switches, else the port reached
	Nodes int   // nodes found so far
	SMPs  int64 // SMPs sent so far
	// LID and LMC are the reached port's base LID and LMC as known when
	// the answer came (0 for a new node), HasDesc whether the node's
	// description was known then.
	LID     uint16
	LMC     uint8
	HasDesc bool
}

// SMPError is an SMP that failed after its retries.
type SMPError struct {
	Path smp.DRPath
	Attr uint16
	Mod  uint32
	Err  error
}

func (e *SMPError) Error() string {
	return fmt.Sprintf("DR path %s %s (Attr 0x%x:%d): %v", e.Path, smp.AttrName(e.Attr), e.Attr, e.Mod, e.Err)
}

// Unwrap returns the underlying error.
func (e *SMPError) Unwrap() error { return e.Err }

// Problem kinds.
const (
	ProblemDuplicateGUID = "duplicate-guid"
	ProblemContradiction = "contradiction"
	ProblemLoopback      = "loopback"
	ProblemPathTooLong   = "path-too-long"
)

// Problem is an inconsistency found in the fabric: never silently merged.
type Problem struct {
	Kind  string
	Msg   string
	Paths []smp.DRPath
}

// Incomplete reports whether the problem leaves part of the fabric
// undiscovered (a port beyond the 63-hop DR limit). The other kinds are
// inconsistencies in what was found: the result is complete but
// contradictory, which the tools report as warnings.
func (p Problem) Incomplete() bool { return p.Kind == ProblemPathTooLong }

func (p Problem) String() string {
	s := p.Kind + ": " + p.Msg
	for i, q := range p.Paths {
		if i == 0 {
			s += " (DR paths "
		} else {
			s += ", "
		}
		s += q.String()
	}
	if len(p.Paths) > 0 {
		s += ")"
	}
	return s
}

// Result is what a discovery found.
type Result struct {
	Fabric   *model.Fabric
	SMPs     int64 // SMPs sent, retries included
	Retries  int64 // retries after timeouts
	Errors   []*SMPError
	Problems []Problem
	// Levels is the number of levels reached (the largest hop count from
	// the start node); MaxHops is what ibnetdiscover reports as "max hops
	// discovered" on the same fabric.
	Levels  int
	MaxHops int
	// IBNetDiscover is what ibnetdiscover would report on this fabric.
	IBNetDiscover Replay
	// Interrupted is true when the context was cancelled before the end.
	Interrupted bool
	// Err is the fatal error that stopped discovery early, if any (the
	// fabric found until then is in Fabric, and Partial reports true).
	Err error
}

// Partial reports whether the result misses part of the fabric: failed
// SMPs, an interruption, a fatal error or an incomplete problem (see
// Problem.Incomplete).
func (r *Result) Partial() bool {
	return len(r.Errors) > 0 || r.Interrupted || r.Err != nil || r.IncompleteProblems() > 0
}

// IncompleteProblems counts the problems that leave part of the fabric
// unexplored (see Problem.Incomplete).
func (r *Result) IncompleteProblems() int {
	n := 0
	for _, p := range r.Problems {
		if p.Incomplete() {
			n++
		}
	}
	return n
}

// Inconsistent reports whether the fabric answered inconsistently
// (duplicate GUIDs, overlapping LIDs, contradictions, loopbacks).
func (r *Result) Inconsistent() bool {
	for _, p := range r.Problems {
		if !p.Incomplete() {
			return true
		}
	}
	return false
}

// Discover walks the fabric behind tr. It returns an error only when
// nothing could be discovered (the start node did not answer, or the
// transport failed at once); otherwise the result holds what was found,
// with Partial set when something is missing.
func Discover(ctx context.Context, tr transport.Transport, cfg Config) (*Result, error) {
	if cfg.Memo != nil {
		cfg.Memo.start()
		tr = &recorder{Transport: tr, m: cfg.Memo}
	}
	e := newEngine(tr, cfg)
	if cfg.Memo != nil {
		defer cfg.Memo.bind(e.fab)
	}
	err := e.run(ctx)
	res := &Result{
		Fabric:   e.fab,
		SMPs:     e.q.SMPs(),
		Retries:  e.q.RetryCount(),
		Errors:   e.q.Errors(),
		Problems: e.problems,
		Levels:   e.levels,
	}
	if ctx.Err() != nil {
		// the caller stopped us: what was found so far is the result
		res.Interrupted = true
		err = nil
	}
	if e.fab.From == nil {
		switch {
		case ctx.Err() != nil:
			// stopped before the start node answered: nothing was found
			err = fmt.Errorf("%w: %w", ErrStart, ctx.Err())
		case err == nil:
			err = ErrStart
		}
		return res, err
	}
	res.Err = err
	if !res.Interrupted {
		e.readTwins(ctx)
	}
	e.register()
	res.Problems = e.problems
	res.IBNetDiscover = ReplayIBNetDiscover(e.fab, ReplayOptions{MlnxEPI: !cfg.NoMlnxEPI, Progress: cfg.IBNetDiscoverProgress, strays: e.strays})
	res.MaxHops = res.IBNetDiscover.MaxHops
	if !res.Interrupted {
		// (after the replay, which gives the routes ibnetdiscover takes
		// from the start node)
		e.shortestPaths(ctx)
		res.SMPs, res.Retries = e.q.SMPs(), e.q.RetryCount()
	}
	return res, nil
}

// readTwins reads, as libibnetdisc does, the PortInfo (and the Mellanox
// ExtendedPortInfo where it would) of each CA twin (a node that answered
// with the GUID of a known CA) through the port it answered from:
// libibnetdisc takes them into the known CA's port.
func (e *engine) readTwins(ctx context.Context) {
	for _, via := range e.strayOrder {
		a := e.strays[via]
		old := e.fab.NodeByGUID(a.guid)
		if old == nil || old.IsSwitch() || a.port == 0 {
			continue
		}
		var buf [smp.DataSize]byte
		if err := e.q.Get(ctx, a.path, smp.AttrPortInfo, uint32(a.port), buf[:]); err != nil {
			if IsStop(err) {
				return
			}
			continue
		}
		a.info = &buf
		if e.cfg.NoMlnxEPI {
			continue
		}
		// (libibnetdisc reads the Mellanox ExtendedPortInfo as for the
		// known CA's port, holding the twin's PortInfo)
		probe := model.PhysPort{Node: old, Num: a.port}
		if probe.SetInfo(buf[:]) != nil || !wantsMlnxEPI(&probe) {
			continue
		}
		var ext [smp.DataSize]byte
		if err := e.q.Get(ctx, a.path, smp.AttrMlnxExtPortInfo, uint32(a.port), ext[:]); err != nil {
			if IsStop(err) {
				return
			}
			continue
		}
		a.ext = &ext
	}
}

// register enters every port with a PortInfo into the fabric's GUID and
// LID maps; conflicts become problems.
func (e *engine) register() {
	for _, n := range e.fab.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo {
				continue
			}
			if err := e.fab.RegisterPort(pp); err != nil {
				kind := ProblemContradiction
				if errors.Is(err, model.ErrDuplicateGUID) {
					kind = ProblemDuplicateGUID
				}
				e.addProblem(Problem{Kind: kind, Msg: err.Error(), Paths: []smp.DRPath{n.Path}})
			}
		}
	}
}

type engine struct {
	q   *Querier
	cfg Config
	fab *model.Fabric

	// probeWin and readWin are the windows of the two kinds of phase:
	// NodeInfo probes (where sibling parents may reach the same node at
	// once) and reads of new nodes (one worker per node).
	probeWin, readWin *Window
	// gang runs the workers of every phase (see gang).
	gang *gang

	noLID atomic.Bool // a LID-routed read failed: directed routes only
	// queues: the transport's peer answers every SMP however many one
	// node has at once (transport.Limits.Queues): a node's reads are sent
	// together and sibling probes are not kept apart.
	queues bool
	// first, owner and slots number readQueued's and readAndProbe's
	// jobs (reused from level to level)
	first, owner, slots []int32

	mu       sync.Mutex // guards problems
	problems []Problem

	entry  []uint8 // by node Index: the port by which the node was first reached
	levels int
	full   bool // a new node was refused at MaxNodes
	// answered holds, for every port probed whose answer did not link it,
	// the node GUID that answered through it. (During discovery a link is
	// never broken, so a linked port's answer is never looked up: keeping
	// only the others keeps the map empty on a healthy fabric.)
	answered map[*model.PhysPort]uint64
	// strays holds, for the same ports, the node GUID and entry port of
	// each answer: the replay of libibnetdisc takes a second node with a
	// known GUID for the first.
	strays     map[*model.PhysPort]*strayAnswer
	strayOrder []*model.PhysPort // strays' keys in the order first answered

	// slab and chunk hold the probes of the chunk in flight (reused).
	slab  []probe
	chunk []*probe
}

func newEngine(tr transport.Transport, cfg Config) *engine {
	if cfg.Outstanding <= 0 {
		cfg.Outstanding = DefaultOutstanding
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	// the engine's hop limit: -1 for none
	switch {
	case cfg.StartOnly:
		cfg.MaxHops = 0
	case cfg.MaxHops <= 0:
		cfg.MaxHops = -1
	}
	lim := transport.LimitsOf(tr)
	var fixed bool
	cfg.Outstanding, fixed = windowFor(lim, cfg.Outstanding, cfg.FixedWindow)
	return &engine{
		queues:   lim.Queues,
		probeWin: NewWindow(cfg.Outstanding, fixed),
		readWin:  NewWindow(cfg.Outstanding, fixed),
		q: &Querier{Transport: tr, Timeout: cfg.Timeout, Retries: cfg.Retries,
			MKey: cfg.MKey, Pool: cfg.Pool, Sent: cfg.Sent, FixedTimeout: cfg.FixedTimeout},
		cfg:      cfg,
		fab:      model.NewFabric(),
		answered: make(map[*model.PhysPort]uint64),
		strays:   make(map[*model.PhysPort]*strayAnswer),
	}
}

func (e *engine) addProblem(p Problem) {
	e.mu.Lock()
	e.problems = append(e.problems, p)
	e.mu.Unlock()
}

// probe is one NodeInfo sent to find the node behind a port.
type probe struct {
	parent *model.PhysPort // the port probed through (nil for the start)
	path   smp.DRPath
	// remotePort, when non-zero, is the port of the reached node that
	// faces parent (used when retracting from a CA start node, where the
	// answer's LocalPortNum is not that port).
	remotePort uint8
	ok         bool
	info       [smp.DataSize]byte
}

func (e *engine) run(ctx context.Context) error {
	e.gang = newGang()
	defer e.gang.stop()
	start := &probe{path: e.cfg.From}
	if err := e.q.Get(ctx, start.path, smp.AttrNodeInfo, 0, start.info[:]); err != nil {
		if IsStop(err) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	start.ok = true
	cur, again := e.accept(ctx, []*probe{start})
	for d := 0; len(cur) > 0 || len(again) > 0; d++ {
		next := e.cfg.MaxHops < 0 || d < e.cfg.MaxHops // the next level is wanted
		fused := next && !e.full && e.fusable(cur)
		var err error
		if fused {
			err = e.readAndProbe(ctx, cur, again)
		} else {
			err = e.read(ctx, cur, again)
		}
		if err != nil {
			if fused {
				e.accept(ctx, e.chunk) // take what answered, also when stopping
			}
			return err
		}
		e.checkLinks(cur, again)
		e.levels = d
		if e.full {
			return fmt.Errorf("%w (%d nodes)", ErrTooManyNodes, e.cfg.MaxNodes)
		}
		if !next {
			break
		}
		if fused {
			// (past MaxNodes, the nodes taken are read in the next turn)
			cur, again = e.accept(ctx, e.chunk)
			continue
		}
		// Probe the next level in chunks of a fixed size (the same
		// whatever the window, so the result does not depend on it):
		// the probes in memory stay bounded, and a fabric that keeps
		// growing stops at MaxNodes within one chunk.
		c := cursor{nodes: cur}
		cur, again = nil, nil
		var sh sharing // what this level's probes teach about port numbers
		for {
			probes := e.candidates(&c, probeChunk)
			if len(probes) == 0 {
				break
			}
			e.phase(e.probeWin)
			var err error
			if e.queues {
				// nothing to keep apart: the probes in order
				err = parallel(ctx, e.gang, e.probeWin, e.cfg.Outstanding, len(probes), func(ctx context.Context, i int) error {
					return e.send(ctx, probes[i])
				})
			} else {
				err = parallelApart(ctx, e.gang, e.probeWin, e.cfg.Outstanding, len(probes), func(i int) (int, int) {
					if p := probes[i]; p.parent != nil && p.remotePort == 0 {
						return sh.keys(p.parent)
					}
					return -1, -1
				}, func(i int) bool {
					p := probes[i]
					return sh.released(e.entry[p.parent.Node.Index], p.parent.Num)
				}, func(ctx context.Context, i int) error {
					p := probes[i]
					err := e.send(ctx, p)
					if p.ok && p.parent != nil && p.remotePort == 0 {
						sh.note(e.entry[p.parent.Node.Index], p.parent.Num, p.info[:])
					}
					return err
				})
			}
			// take what answered, also when stopping
			fresh, revisit := e.accept(ctx, probes)
			cur, again = append(cur, fresh...), append(again, revisit...)
			if err != nil {
				return err
			}
			if e.full {
				break
			}
		}
	}
	if e.full {
		return fmt.Errorf("%w (%d nodes)", ErrTooManyNodes, e.cfg.MaxNodes)
	}
	return nil
}

// send sends probe p (its NodeInfo along its path) and records whether
// it answered.
func (e *engine) send(ctx context.Context, p *probe) error {
	err := e.q.Get(ctx, p.path, smp.AttrNodeInfo, 0, p.info[:])
	p.ok = err == nil
	return err
}

// phase makes w the window of the SMPs that follow. A fixed window
// bounds nothing that the phase's workers, at most its size, do not
// already bound: the Querier then takes no token per SMP.
func (e *engine) phase(w *Window) {
	w.NewPhase()
	e.q.Window = w
	if w.fixed {
		e.q.Window = nil
	}
}

// probeChunk is the number of NodeInfo probes sent and taken in at once.
const probeChunk = 1024

// read reads what a new node needs: NodeDescription, SwitchInfo and
// PortInfo of every port for a switch, PortInfo of the reached port for a
// CA or router; and PortInfo of the ports of known CAs reached again.
func (e *engine) read(ctx context.Context, nodes []*model.Node, again []portRead) error {
	e.phase(e.readWin)
	if e.queues && !e.cfg.LIDReads {
		return e.readQueued(ctx, nodes, again, nil)
	}
	return parallel(ctx, e.gang, e.readWin, e.cfg.Outstanding, len(nodes)+len(again), func(ctx context.Context, i int) error {
		if i >= len(nodes) {
			r := again[i-len(nodes)]
			return e.readPort(ctx, r.n, r.num, r.path)
		}
		n := nodes[i]
		if e.cfg.LIDReads {
			return e.readByLID(ctx, n)
		}
		if err := e.readNodeAttr(ctx, n, smp.AttrNodeDescription); IsStop(err) {
			return err
		}
		if !n.IsSwitch() {
			return e.readPort(ctx, n, e.entry[n.Index], n.Path)
		}
		if err := e.readNodeAttr(ctx, n, smp.AttrSwitchInfo); IsStop(err) {
			return err
		}
		// (libibnetdisc asks for the external ports only once port 0
		// answered; they are read anyway, so that one lost SMP does not
		// lose the switch's links.)
		for p := 0; p <= n.NumPorts(); p++ {
			if err := e.readPort(ctx, n, uint8(p), n.Path); IsStop(err) {
				return err
			}
		}
		return nil
	})
}

// fusable reports whether a level's reads and the probes of the next
// level may be one phase (readAndProbe): the peer queues, the nodes
// are read by directed route, the next level's probes fit in one chunk
// (counting every port of every switch) and none would pass the 63-hop
// limit, and the start node, a CA or router whose probe may go back a
// hop, is not among them.
func (e *engine) fusable(nodes []*model.Node) bool {
	if !e.queues || e.cfg.LIDReads {
		return false
	}
	ports := 0
	for _, n := range nodes {
		if n == e.fab.From && !n.IsSwitch() || n.Path.Len() >= smp.MaxHops {
			return false
		}
		if n.IsSwitch() {
			ports += n.NumPorts()
		}
	}
	return ports <= probeChunk
}

// readAndProbe is read followed by the probes of the next level, as one
// phase (see fusable): a switch port's NodeInfo probe follows its
// PortInfo in the same job when the port is one candidates would probe
// (LinkUp and not linked: no link changes while a level is read), so the
// window stays full across what would be the end of a phase, and no
// SMP waits for the slowest of the level's reads. The probes are left in
// e.chunk in canonical order (the order candidates gives), for accept.
func (e *engine) readAndProbe(ctx context.Context, nodes []*model.Node, again []portRead) error {
	if len(e.slab) < probeChunk {
		e.slab, e.chunk = make([]probe, probeChunk), make([]*probe, 0, probeChunk)
	}
	// slot[n]+p-1 is the probe through port p of switch n
	slots := slices.Grow(e.slots[:0], len(nodes))
	next := 0
	for _, n := range nodes {
		slots = append(slots, int32(next))
		if n.IsSwitch() {
			next += n.NumPorts()
		}
	}
	e.slots = slots
	clear(e.slab[:next])
	e.phase(e.readWin)
	err := e.readQueued(ctx, nodes, again, func(ctx context.Context, i int, n *model.Node, num uint8) error {
		pp := n.Port(int(num))
		if pp == nil || !pp.HasInfo || pp.Remote != nil || pp.Info.PortPhysicalState != smp.PhysLinkUp {
			return nil
		}
		path, _ := n.Path.Extend(num) // (fusable: not past 63 hops)
		p := &e.slab[int(slots[i])+int(num)-1]
		*p = probe{parent: pp, path: path}
		return e.send(ctx, p)
	})
	e.chunk = e.chunk[:0]
	for i := range e.slab[:next] {
		if p := &e.slab[i]; p.parent != nil {
			e.chunk = append(e.chunk, p)
		}
	}
	return err
}

// readQueued is read for a transport whose peer queues (Limits.Queues):
// every SMP of a node is a job of its own, so a switch's reads go out
// together, up to the window, instead of one round trip after another.
// It reads the same attributes as read: first every NodeDescription,
// SwitchInfo and PortInfo (with the Mellanox ExtendedPortInfo that
// follows a CA's or a switch port 0's), then the ExtendedPortInfo of the
// switches' external ports, which depends on port 0's capability mask.
// When then is set, it is called after each PortInfo of a switch's
// external port that answered, in the same job, with the index of the
// node in nodes.
//
// A job is found from its number alone: nodes[owner[i]] is the node of
// job i, and i - first[owner[i]] which of its reads it is
// (NodeDescription, then a CA's PortInfo, or a switch's SwitchInfo and
// PortInfo of ports 0 to NumPorts); the jobs after the nodes' are the
// ports of again. (Four bytes per job and per node, where a job
// holding its DR path would take a hundred.)
func (e *engine) readQueued(ctx context.Context, nodes []*model.Node, again []portRead, then func(ctx context.Context, i int, n *model.Node, num uint8) error) error {
	total := 0
	for _, n := range nodes {
		total += nodeReads(n)
	}
	first := slices.Grow(e.first[:0], len(nodes))
	owner := slices.Grow(e.owner[:0], total)
	for k, n := range nodes {
		first = append(first, int32(len(owner)))
		for range nodeReads(n) {
			owner = append(owner, int32(k))
		}
	}
	e.first, e.owner = first, owner
	err := parallel(ctx, e.gang, e.readWin, e.cfg.Outstanding, total+len(again), func(ctx context.Context, i int) error {
		if i >= total {
			r := again[i-total]
			return e.readPort(ctx, r.n, r.num, r.path)
		}
		k := owner[i]
		n := nodes[k]
		var attr uint16
		var num uint8
		switch j := i - int(first[k]); {
		case j == 0:
			attr = smp.AttrNodeDescription
		case !n.IsSwitch():
			attr, num = smp.AttrPortInfo, e.entry[n.Index]
		case j == 1:
			attr = smp.AttrSwitchInfo
		default:
			attr, num = smp.AttrPortInfo, uint8(j-2)
		}
		if attr == smp.AttrPortInfo {
			// (a switch's external port waits for port 0 to know
			// whether to read its ExtendedPortInfo: below)
			ext := n.IsSwitch() && num != 0
			err := e.readPortInfo(ctx, n, num, n.Path, !ext)
			if err == nil && ext && then != nil {
				err = then(ctx, int(k), n, num)
			}
			return err
		}
		return e.readNodeAttr(ctx, n, attr)
	})
	if err != nil || e.cfg.NoMlnxEPI {
		return err
	}
	var epi []*model.PhysPort
	for _, n := range nodes {
		if !n.IsSwitch() {
			continue
		}
		for p := 1; p <= n.NumPorts(); p++ {
			if pp := n.Port(p); pp != nil && pp.HasInfo && wantsMlnxEPI(pp) {
				epi = append(epi, pp)
			}
		}
	}
	return parallel(ctx, e.gang, e.readWin, e.cfg.Outstanding, len(epi), func(ctx context.Context, i int) error {
		pp := epi[i]
		var buf [smp.DataSize]byte
		err := e.q.Get(ctx, pp.Node.Path, smp.AttrMlnxExtPortInfo, uint32(pp.Num), buf[:])
		if err == nil {
			pp.SetExtInfo(buf[:])
		}
		return err
	})
}

// readNodeAttr reads n's NodeDescription or SwitchInfo (attr) along its
// path and keeps the answer.
func (e *engine) readNodeAttr(ctx context.Context, n *model.Node, attr uint16) error {
	var buf [smp.DataSize]byte
	err := e.q.Get(ctx, n.Path, attr, 0, buf[:])
	if err == nil {
		keepNodeAttr(n, attr, buf[:])
	}
	return err
}

// keepNodeAttr keeps an answer b to NodeDescription or SwitchInfo (attr)
// in n.
func keepNodeAttr(n *model.Node, attr uint16, b []byte) {
	if attr == smp.AttrNodeDescription {
		_ = n.Desc.UnmarshalBinary(b)
	} else {
		_ = n.SetSwitchInfo(b)
	}
}

// nodeReads is the number of SMPs readQueued sends to read n.
func nodeReads(n *model.Node) int {
	if n.IsSwitch() {
		return 2 + n.NumPorts() + 1 // NodeDescription, SwitchInfo, PortInfo 0..NumPorts
	}
	return 2 // NodeDescription, the entry port's PortInfo
}

// readByLID reads what read does for a new node, the PortInfo that gives
// its LID first by directed route and the rest by LID where it can.
func (e *engine) readByLID(ctx context.Context, n *model.Node) error {
	first := e.entry[n.Index]
	if n.IsSwitch() {
		first = 0
	}
	if err := e.readPort(ctx, n, first, n.Path); IsStop(err) {
		return err
	}
	var lid uint16
	if pp := n.Port(int(first)); pp != nil && pp.HasInfo {
		lid = pp.Info.LID
	}
	get := func(attr uint16, mod uint32, buf []byte) error {
		if lid != 0 && lid < 0xc000 && !e.noLID.Load() {
			err := e.q.GetLID(ctx, lid, attr, mod, buf)
			if err == nil || IsStop(err) {
				return err
			}
			e.noLID.Store(true)
			e.q.forget(smp.DRPath{}, attr, mod)
		}
		return e.q.Get(ctx, n.Path, attr, mod, buf)
	}
	var buf [smp.DataSize]byte
	if err := get(smp.AttrNodeDescription, 0, buf[:]); err == nil {
		keepNodeAttr(n, smp.AttrNodeDescription, buf[:])
	} else if IsStop(err) {
		return err
	}
	if !n.IsSwitch() {
		return nil
	}
	if err := get(smp.AttrSwitchInfo, 0, buf[:]); err == nil {
		keepNodeAttr(n, smp.AttrSwitchInfo, buf[:])
	} else if IsStop(err) {
		return err
	}
	for p := 1; p <= n.NumPorts(); p++ {
		pp := n.Port(p)
		if pp == nil {
			if pp = n.EnsurePort(p, n.Info.PortGUID); pp == nil {
				continue
			}
		}
		err := get(smp.AttrPortInfo, uint32(p), buf[:])
		if err != nil {
			if IsStop(err) {
				return err
			}
			continue
		}
		if pp.SetInfo(buf[:]) != nil {
			continue
		}
		if !e.cfg.NoMlnxEPI && wantsMlnxEPI(pp) {
			if err := get(smp.AttrMlnxExtPortInfo, uint32(p), buf[:]); err == nil {
				pp.SetExtInfo(buf[:])
			} else if IsStop(err) {
				return err
			}
		}
	}
	return nil
}

// readPort reads PortInfo (and the Mellanox ExtendedPortInfo where
// ibnetdiscover would) of port num of n along path. As in libibnetdisc,
// a port comes into being only when its PortInfo answers (or, as a shell
// without PortInfo, when a NodeInfo answered through it): a failed
// PortInfo leaves no port behind.
func (e *engine) readPort(ctx context.Context, n *model.Node, num uint8, path smp.DRPath) error {
	return e.readPortInfo(ctx, n, num, path, true)
}

// readPortInfo is readPort, without the ExtendedPortInfo unless epi.
func (e *engine) readPortInfo(ctx context.Context, n *model.Node, num uint8, path smp.DRPath, epi bool) error {
	if num > n.Info.NumPorts {
		return nil
	}
	var buf [smp.DataSize]byte
	if err := e.q.Get(ctx, path, smp.AttrPortInfo, uint32(num), buf[:]); err != nil {
		return err
	}
	pp := n.EnsurePort(int(num), n.Info.PortGUID)
	if err := pp.SetInfo(buf[:]); err != nil {
		return err
	}
	if epi && !e.cfg.NoMlnxEPI && wantsMlnxEPI(pp) {
		if err := e.q.Get(ctx, path, smp.AttrMlnxExtPortInfo, uint32(num), buf[:]); err == nil {
			pp.SetExtInfo(buf[:])
		} else if IsStop(err) {
			return err
		}
	}
	return nil
}

// cursor walks the probes of one level: nodes in discovery order, ports
// ascending.
type cursor struct {
	nodes []*model.Node
	i     int // node
	p     int // next port of nodes[i]
}

// candidates returns up to max next NodeInfo probes of the level, in
// canonical order. A port linked since the level began (its peer was
// reached from the other side) is not probed again.
func (e *engine) candidates(c *cursor, max int) []*probe {
	// One chunk's probes are dead once accept has taken them in: the
	// next chunk reuses their memory.
	if len(e.slab) < max {
		e.slab, e.chunk = make([]probe, max), make([]*probe, 0, max)
	}
	out := e.chunk[:0]
	add := func(parent *model.PhysPort, path smp.DRPath, remotePort uint8) {
		p := &e.slab[len(out)]
		*p = probe{parent: parent, path: path, remotePort: remotePort}
		out = append(out, p)
	}
	for ; c.i < len(c.nodes) && len(out) < max; c.i, c.p = c.i+1, 0 {
		n := c.nodes[c.i]
		if n.IsSwitch() {
			if c.p == 0 {
				c.p = 1
			}
			for ; c.p <= n.NumPorts() && len(out) < max; c.p++ {
				p := c.p
				pp := n.Port(p)
				if pp == nil || !pp.HasInfo || pp.Remote != nil || pp.Info.PortPhysicalState != smp.PhysLinkUp {
					continue
				}
				path, err := n.Path.Extend(uint8(p))
				if err != nil {
					e.addProblem(Problem{Kind: ProblemPathTooLong, Msg: fmt.Sprintf("add port %d to DR path failed", p), Paths: []smp.DRPath{n.Path}})
					continue
				}
				add(pp, path, 0)
			}
			if c.p <= n.NumPorts() {
				return out // chunk full in the middle of this node
			}
			continue
		}
		// A CA or router is left only from the start node, through the
		// port discovery started on.
		if n != e.fab.From {
			continue
		}
		q := e.fab.FromPort
		pp := n.Port(int(q))
		if pp == nil || !pp.HasInfo || pp.Remote != nil || pp.Info.PortPhysicalState != smp.PhysLinkUp {
			continue
		}
		if n.Path.Len() == 0 {
			path, _ := n.Path.Extend(q)
			add(pp, path, 0)
		} else {
			// DR cannot pass through a CA: go back one hop instead.
			add(pp, n.Path.Retract(), n.Path.Last())
		}
	}
	return out
}

// accept takes the answers of one level's probes into the graph, in
// canonical order, and returns the nodes new at the next level and the ports of
// known CAs and routers reached for the first time.
func (e *engine) accept(ctx context.Context, probes []*probe) ([]*model.Node, []portRead) {
	var fresh []*model.Node
	var revisit []portRead
	for _, p := range probes {
		if !p.ok {
			continue
		}
		var ni smp.NodeInfo
		if err := ni.UnmarshalBinary(p.info[:]); err != nil {
			continue
		}
		fresh, revisit = e.acceptOne(ctx, p, &ni, fresh, revisit)
		if p.parent != nil && p.parent.Remote == nil {
			e.answered[p.parent] = ni.NodeGUID
			q := ni.LocalPortNum
			if p.remotePort != 0 {
				q = p.remotePort
			}
			if _, again := e.strays[p.parent]; !again {
				e.strayOrder = append(e.strayOrder, p.parent)
			}
			e.strays[p.parent] = &strayAnswer{guid: ni.NodeGUID, port: q, portGUID: ni.PortGUID, path: p.path}
		}
	}
	return fresh, revisit
}

// acceptOne takes one probe's NodeInfo answer ni into the graph.
func (e *engine) acceptOne(ctx context.Context, p *probe, ni *smp.NodeInfo, fresh []*model.Node, revisit []portRead) ([]*model.Node, []portRead) {
	q := ni.LocalPortNum
	if p.remotePort != 0 {
		q = p.remotePort
	}
	if p.parent != nil && q == 0 {
		e.addProblem(Problem{Kind: ProblemContradiction,
			Msg:   fmt.Sprintf("node 0x%016x answered through %s from its port 0", ni.NodeGUID, p.parent),
			Paths: []smp.DRPath{p.path}})
		return fresh, revisit
	}
	if p.parent != nil && p.parent.Remote != nil {
		// The port was linked in this level from the other side: the
		// answer must be that same peer.
		r := p.parent.Remote
		if r.Node.GUID() != ni.NodeGUID || r.Num != q {
			e.addProblem(Problem{Kind: ProblemDuplicateGUID,
				Msg: fmt.Sprintf("port %s answered as node 0x%016x port %d but node 0x%016x port %d answered through it",
					p.parent, ni.NodeGUID, q, r.Node.GUID(), r.Num),
				Paths: []smp.DRPath{r.Node.Path, p.path}})
		}
		return fresh, revisit
	}
	if old := e.fab.NodeByGUID(ni.NodeGUID); old != nil {
		if !e.known(ctx, old, ni, q, p) {
			return fresh, revisit
		}
		if !old.IsSwitch() {
			if pp := old.Port(int(q)); pp != nil && !pp.HasInfo {
				revisit = append(revisit, portRead{old, q, p.path})
			}
		}
		e.progress(p.path, false, old, q)
		return fresh, revisit
	}
	if int(q) > int(ni.NumPorts) {
		e.addProblem(Problem{Kind: ProblemContradiction, Msg: fmt.Sprintf("node 0x%016x answered from port %d but has %d ports", ni.NodeGUID, q, ni.NumPorts), Paths: []smp.DRPath{p.path}})
		return fresh, revisit
	}
	if len(e.fab.Nodes) >= e.cfg.MaxNodes {
		e.full = true
		return fresh, revisit
	}
	n, err := e.fab.AddNode(p.info[:], p.path)
	if err != nil {
		return fresh, revisit
	}
	e.entry = append(e.entry, q) // n.Index == len(e.entry)
	pg := ni.PortGUID
	pp := n.EnsurePort(int(q), pg)
	if p.parent != nil && q != 0 {
		e.link(p.parent, pp, p.path)
	}
	fresh = append(fresh, n)
	e.progress(p.path, true, n, q)
	return fresh, revisit
}

type portRead struct {
	n    *model.Node
	num  uint8
	path smp.DRPath
}

// known handles a NodeInfo answer for a GUID already in the graph. It
// reports whether the answer was accepted (linked) or rejected as a
// duplicate or contradiction.
func (e *engine) known(ctx context.Context, old *model.Node, ni *smp.NodeInfo, q uint8, p *probe) bool {
	if ni.NodeType != old.Type() || ni.NumPorts != old.Info.NumPorts || old.IsSwitch() && ni.PortGUID != old.Info.PortGUID {
		what := fmt.Sprintf("node GUID 0x%016x answered as %d-port type %d port GUID 0x%016x and as %d-port type %d port GUID 0x%016x",
			ni.NodeGUID, old.Info.NumPorts, old.Type(), old.Info.PortGUID, ni.NumPorts, ni.NodeType, ni.PortGUID)
		e.mismatch(ctx, old, ni, p, what)
		return false
	}
	if int(q) > old.NumPorts() {
		e.addProblem(Problem{Kind: ProblemContradiction, Msg: fmt.Sprintf("node 0x%016x answered from port %d but has %d ports", ni.NodeGUID, q, ni.NumPorts), Paths: []smp.DRPath{p.path}})
		return false
	}
	if p.parent == nil {
		return true
	}
	xp := old.Port(int(q))
	if xp != nil && xp.Remote != nil && xp.Remote != p.parent {
		e.addProblem(Problem{Kind: ProblemDuplicateGUID,
			Msg: fmt.Sprintf("node GUID 0x%016x port %d is linked to %s and answered again through %s",
				ni.NodeGUID, q, xp.Remote, p.parent),
			Paths: []smp.DRPath{old.Path, p.path}})
		return false
	}
	if xp != nil && xp.Remote == nil {
		if g, probed := e.answered[xp]; probed && g != p.parent.Node.GUID() {
			// xp's own probe found another node: this answer is a
			// second node with the same GUID.
			e.addProblem(Problem{Kind: ProblemDuplicateGUID,
				Msg: fmt.Sprintf("node GUID 0x%016x port %d answered through %s, but the port's own probe reached node 0x%016x",
					ni.NodeGUID, q, p.parent, g),
				Paths: []smp.DRPath{old.Path, p.path}})
			return false
		}
	}
	if !old.IsSwitch() && xp != nil && xp.GUID != ni.PortGUID {
		e.mismatch(ctx, old, ni, p, fmt.Sprintf("port %d of node 0x%016x answered port GUID 0x%016x, earlier 0x%016x", q, ni.NodeGUID, ni.PortGUID, xp.GUID))
		return false
	}
	if xp != nil && xp.HasInfo && xp.Info.PortPhysicalState != smp.PhysLinkUp {
		e.addProblem(Problem{Kind: ProblemContradiction,
			Msg:   fmt.Sprintf("port %d of node 0x%016x answered through a link it reported as down", q, ni.NodeGUID),
			Paths: []smp.DRPath{old.Path, p.path}})
		return false
	}
	if xp == nil {
		xp = old.EnsurePort(int(q), ni.PortGUID)
	}
	e.link(p.parent, xp, p.path)
	return true
}

// checkLinks reports links whose port, read after the link was found,
// says it is not LinkUp: the link went down during the discovery. The
// link stays in the graph (a NodeInfo answered through it), marked by the
// problem.
func (e *engine) checkLinks(nodes []*model.Node, again []portRead) {
	seen := map[*model.PhysPort]bool{}
	check := func(pp *model.PhysPort) {
		if pp == nil || pp.Remote == nil || !pp.HasInfo || pp.Info.PortPhysicalState == smp.PhysLinkUp || seen[pp] {
			return
		}
		seen[pp] = true
		pp.Healthy = false
		e.addProblem(Problem{Kind: ProblemContradiction,
			Msg:   fmt.Sprintf("%s is linked to %s but reports physical state %d: the link changed during discovery", pp, pp.Remote, pp.Info.PortPhysicalState),
			Paths: []smp.DRPath{pp.Node.Path}})
	}
	for _, n := range nodes {
		for _, pp := range n.Ports {
			check(pp)
		}
	}
	for _, r := range again {
		check(r.n.Port(int(r.num)))
	}
}

// verifyReads is how many times each DR path is read again to tell a
// node whose answers change from two nodes that share a GUID.
const verifyReads = 2

// mismatch reports a NodeInfo answer that disagrees with the known node
// of the same GUID. It reads NodeInfo again along both paths: if either
// path answers differently than it did, the node's answers change (a
// contradiction); if both are stable, two nodes share the GUID.
func (e *engine) mismatch(ctx context.Context, old *model.Node, ni *smp.NodeInfo, p *probe, what string) {
	stable := func(path smp.DRPath, want *smp.NodeInfo) bool {
		for i := 0; i < verifyReads; i++ {
			var buf [smp.DataSize]byte
			var got smp.NodeInfo
			if err := e.q.Get(ctx, path, smp.AttrNodeInfo, 0, buf[:]); err != nil {
				return true // no evidence either way
			}
			if got.UnmarshalBinary(buf[:]) != nil || got != *want {
				return false
			}
		}
		return true
	}
	kind := ProblemDuplicateGUID
	if !stable(old.Path, &old.Info) || !stable(p.path, ni) {
		kind = ProblemContradiction
		what = "NodeInfo answers change: " + what
	}
	e.addProblem(Problem{Kind: kind, Msg: what, Paths: []smp.DRPath{old.Path, p.path}})
}

func (e *engine) link(a, b *model.PhysPort, path smp.DRPath) {
	if a.Node == b.Node {
		e.addProblem(Problem{Kind: ProblemLoopback,
			Msg:   fmt.Sprintf("node 0x%016x port %d is cabled to its own port %d", a.Node.GUID(), a.Num, b.Num),
			Paths: []smp.DRPath{path}})
	}
	a.Link(b)
}

func (e *engine) progress(path smp.DRPath, isNew bool, n *model.Node, q uint8) {
	if e.cfg.Progress == nil {
		return
	}
	port := q
	if n.IsSwitch() {
		port = 0
	}
	p := Progress{Path: path, New: isNew, Node: n, Port: port, Nodes: len(e.fab.Nodes), SMPs: e.q.SMPs()}
	if !isNew {
		if pp := n.Port(int(q)); pp != nil && pp.HasInfo {
			p.LID, p.LMC = pp.BaseLID(), pp.LMC()
		}
		p.HasDesc = true
	}
	e.cfg.Progress(p)
}

// Distances returns the hop count of every node reachable from start over
// the links of the graph.
func Distances(f *model.Fabric, start *model.Node) map[*model.Node]int {
	dist := map[*model.Node]int{start: 0}
	queue := []*model.Node{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, p := range n.Ports {
			if p == nil || p.Remote == nil {
				continue
			}
			m := p.Remote.Node
			if _, ok := dist[m]; !ok {
				dist[m] = dist[n] + 1
				queue = append(queue, m)
			}
		}
	}
	return dist
}
