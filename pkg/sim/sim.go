// Package sim is an embedded InfiniBand fabric simulator that behaves like
// ibsim 0.10: built from a net file (package netfile), it has ibsim's
// GUIDs, port numbers and NodeInfo/PortInfo/SwitchInfo defaults, and its
// subnet management agents answer SMPs byte for byte as ibsim's do —
// directed-route routing with the return path filled in, the same status
// codes, and "no answer" (transport.ErrTimeout) wherever ibsim answers
// with sim status 110: a down link on the path, transit through a CA, an
// unsupported attribute, an LID that does not route, or a packet dropped
// by fault injection.
//
// A Fabric is attached to like ibsim (Attach returns a transport.Transport
// on a node's port), can run a minimal subnet manager (RunSM: LIDs, Active
// ports, min-hop LFTs) so that LID-routed SMPs work without OpenSM, and
// takes ibsim's console commands for fault injection (Exec, or the typed
// methods Unlink, ReLink, Link, SetErrorRate, SetNodeGUID, SetBaseLID).
//
// Memory is flat: one slice of nodes (64 bytes each plus the id string),
// one slice of ports (56 bytes each) indexed from the node's base, and
// LFTs, MFTs, P_Key/SL2VL/VLArb tables and ExtPortInfo allocated only when
// written; a generated 3-level fat tree with 62,208 hosts (64,656 nodes)
// retains about 300 bytes per node. Gets run under a read lock, so
// parallel discovery scales; Sets and faults take the write lock.
//
// Fault injection. Besides ibsim's console commands (Error, Unlink,
// ReLink, Link, Clear, Guid, Baselid), Exec and net-file "do" lines take
// commands of our own (ibsim does not know them; a net file using them
// loads only here):
//
//	Drop <rate>                        drop rate% of all SMPs, once per SMP (SetDropRate)
//	Kill "id" / Revive "id"            the node's SMA stops / resumes answering; a
//	                                   switch still forwards (Kill, Revive)
//	Inconsistent "id" <field> [every]  every n-th NodeInfo answer lies about
//	                                   numports, type, portguid or guid; none clears
//	                                   (SetInconsistent)
//	Latency hop=1us sma=20us vl15=1    the latency model (SetLatency, Options.Latency;
//	                                   fwd=5us adds a directed-route SMP's forwarding
//	                                   at each switch crossed);
//	                                   "Latency hop=0 sma=0" turns it off
//	Latency "id" sma=500us             one node's SMA service time (SetServiceTime)
//	After <n> <command>                run command after n more SMPs (AfterSMPs)
//	At <duration> <command>            run command after that much time (AfterTime)
//
// e.g. "do After 200 Unlink "L0"[9]" flaps a link in the middle of a
// discovery. A generator spec takes the same commands after ';'
// ("fattree:levels=3,radix=16;Latency hop=1us sma=20us vl15=1").
// Error's random drops use a generator seeded by Options.Seed. Duplicate
// node GUIDs come from a Guid command or, with Options.AllowDuplicateGUIDs
// (ibsim -I), from the net file itself. Stats counts the drops and lies.
//
// Port faults (drop rate, link state) are per-port state consulted on the
// packet's path; node faults (dead, lying, own service time) live in a
// map consulted only when it is not empty; the latency model is one
// atomic pointer, nil by default, so the fault-free fast path is the same
// as without fault injection (BenchmarkExchange: about 95 ns, 0 allocs).
//
// The latency model works in real time: each SMP takes hop time per link
// crossed each way and waits for the target SMA, which serves one SMP at a
// time; an SMP arriving when the SMA already holds VL15 SMPs is lost.
// Exchange then blocks until the answer is due, or until the context's
// deadline when there is none, as a real transport times out. Go timers
// wake about a millisecond late, so the last 2 ms of every wait are spent
// yielding (runtime.Gosched) for microsecond precision: the model costs
// CPU while SMPs are in flight.
//
// The PMA (PerfMgt, class 0x04, by LID) answers ClassPortInfo,
// PortCounters and PortCountersExtended as ibsim's does (pma.go): counters
// move with every MAD crossing a link, with losses on the way and with
// PerformanceSet; a PortCounters Set resets the selected counters.
//
// After RunSM, an SA (class 0x03, sa.go) at the SM port's LID answers Get
// and GetTable of NodeRecord, PortInfoRecord and PathRecord from the
// minimal SM's state, multi-MAD answers as RMPP transfers through
// Endpoint.Stream; sa.go says what it leaves out (multicast among it).
// ibsim forwards SA requests to an SM client instead.
//
// Differences from ibsim, all deliberate: of PerfMgt only those three
// attributes are simulated (the detail and per-VL counters get no answer);
// requests that no handler takes are not forwarded
// to other clients (there are none: no answer); ports out of range in
// P_KeyTable, SL2VL and VLArbitration modifiers are rejected with status
// 0x001c instead of touching other ports' memory; LID routing that exceeds
// 16 hops fails instead of answering at the wrong port; "do" commands of a
// net file run after the links are made (ibsim runs them while parsing,
// when nothing is linked yet, so "do Unlink" works here and not there);
// traps are not generated.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"sync"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Errors of the fabric API.
var (
	ErrNoNode      = errors.New("sim: node not found")
	ErrBadPort     = errors.New("sim: port out of range")
	ErrNotLinked   = errors.New("sim: port is not linked")
	ErrLinked      = errors.New("sim: port is already linked")
	ErrNoPrevious  = errors.New("sim: no previous link stored")
	ErrMismatch    = errors.New("sim: link ends have no common enabled width or speed")
	ErrLIDSpace    = errors.New("sim: more ports than unicast LIDs")
	ErrBadCommand  = errors.New("sim: bad console command")
	ErrUnsupported = errors.New("sim: console command not supported")
)

// Options tune a Fabric. The zero value gives ibsim 0.10's defaults.
type Options struct {
	// LinearFDBCap is SwitchInfo.LinearFDBCap (ibsim -L, default 30720).
	LinearFDBCap uint16
	// MulticastFDBCap is SwitchInfo.MulticastFDBCap (ibsim -M, default 1024).
	MulticastFDBCap uint16
	// Seed seeds the fault-injection random numbers (0: a fixed default).
	Seed uint64
	// AllowDuplicateGUIDs accepts net files that give two nodes the same
	// GUID (ibsim -I); by default Load and New refuse them, as ibsim does.
	AllowDuplicateGUIDs bool
	// Latency, when set, installs the latency model (see SetLatency); by
	// default it is off and Exchange answers at once.
	Latency *Latency
	// OpenSMLIDs makes RunSM number the ports as OpenSM's first sweep
	// does: the LIDs the net file gives are kept by the SM's port, then
	// by the others in OpenSM's port table order (port GUIDs compared as
	// little-endian numbers), which in that order take the lowest free
	// LIDs when they have none or a port before kept theirs. By default
	// RunSM does the same in file order.
	OpenSMLIDs bool
}

// Port template kinds (ibsim's PortInfo templates).
const (
	tmplSMA uint8 = iota
	tmplSW
	tmplSWDown
	tmplCA
	tmplCADown
)

type node struct {
	guid    uint64
	sysguid uint64
	id      string
	desc    string // NodeDescription, at most 63 bytes
	base    int32  // index of port 0 (switch) or port 1 (CA, router) in ports
	sw      int32  // index in sws, -1 for CAs and routers
	vendor  uint32
	devid   uint16
	typ     uint8
	nports  uint8
}

type port struct {
	node    int32
	remote  int32 // peer port index, -1 if none
	prev    int32 // peer before the last Unlink, -1 if none
	lid     uint16
	smlid   uint16
	errAttr uint16
	num     uint8
	lmc     uint8
	state   uint8
	phys    uint8
	wEn, w  uint8 // LinkWidthEnabled, LinkWidthActive
	sEn, s  uint8 // LinkSpeedEnabled, LinkSpeedActive
	eEn, e  uint8 // LinkSpeedExtEnabled, LinkSpeedExtActive
	mEn, m  uint8 // Mellanox FDR10 enabled, active
	opVLs   uint8
	hoq     uint8
	tmpl    uint8
	mtuCap  uint8 // 0: template's
	vlCap   uint8 // 0: template's (4)
	errRate uint8
	prefix  uint64
	x       *portExtra
}

// portExtra holds per-port tables that only exist once written.
type portExtra struct {
	pkeys  []byte // raw P_Key table
	sl2vl  []byte // 8 bytes per output port (switch) or 8 bytes
	vlLow  []byte // 128 bytes: 64 entries of (VL, weight)
	vlHigh []byte
	epi    *[64]byte // Mellanox ExtendedPortInfo as last Set
}

type swState struct {
	lft        []byte // grows on demand; missing entries are 0xff
	mft        []byte // lazily allocated
	top        uint16
	lifetime   uint8
	portChange bool
	esp0       bool
	numPortMsk uint8
}

// Fabric is a simulated fabric. All methods are safe for concurrent use.
type Fabric struct {
	mu    sync.RWMutex
	nodes []node
	ports []port
	sws   []swState
	ids   map[string]int32
	opt   Options
	slots atomic.Uint32
	rnd   *rand.Rand
	rndMu sync.Mutex
	fs    faultState
	pma   pmaState
	// bcast: the ports RunSM made members of the broadcast group.
	bcast []int32
}

// Load parses a net file (or an ibnetdiscover topology file) and builds
// its fabric. A file that cannot be read, is not a net file or declares no
// node is a *netfile.ParseError: errors.Is(err, fs.ErrNotExist) for a
// missing file, errors.Is(err, netfile.ErrNoNodes) for one without nodes.
func Load(path string, opt *Options) (*Fabric, error) {
	po := netfile.ParseOptions{RequireNodes: true}
	if opt != nil {
		po.AllowDuplicateGUIDs = opt.AllowDuplicateGUIDs
	}
	nf, err := netfile.ParseFileOptions(path, po)
	if err != nil {
		return nil, err
	}
	return New(nf, opt)
}

// Generate builds a fabric from a netfile.Generate spec such as
// "fattree:levels=2,radix=36".
func Generate(spec string, opt *Options) (*Fabric, error) {
	nf, err := netfile.Generate(spec)
	if err != nil {
		return nil, err
	}
	return New(nf, opt)
}

// New builds the fabric described by nf (which it does not keep), links
// the ports as ibsim does at startup and runs nf's do-commands in order.
func New(nf *netfile.Fabric, opt *Options) (*Fabric, error) {
	f := &Fabric{ids: make(map[string]int32, len(nf.Nodes))}
	if opt != nil {
		f.opt = *opt
	}
	if f.opt.LinearFDBCap == 0 {
		f.opt.LinearFDBCap = 30720
	}
	if f.opt.MulticastFDBCap == 0 {
		f.opt.MulticastFDBCap = 1024
	}
	seed := f.opt.Seed
	if seed == 0 {
		seed = 0x1b51
	}
	f.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	nports, nsw := 0, 0
	for i := range nf.Nodes {
		n := &nf.Nodes[i]
		if n.NumPorts < 1 || n.NumPorts > 255 || len(n.Ports) != n.NumPorts+1 {
			return nil, fmt.Errorf("sim: node %q: bad port count %d", n.ID, n.NumPorts)
		}
		nports += n.NumPorts
		if n.Type == netfile.Switch {
			nports++
			nsw++
		}
	}
	var guids map[uint64]int32
	if !f.opt.AllowDuplicateGUIDs {
		guids = make(map[uint64]int32, len(nf.Nodes))
	}
	f.nodes = make([]node, len(nf.Nodes))
	f.ports = make([]port, nports)
	f.pma.init(nports)
	f.sws = make([]swState, nsw)
	base, sw := int32(0), int32(0)
	for i := range nf.Nodes {
		n := &nf.Nodes[i]
		d := &f.nodes[i]
		d.guid, d.sysguid = n.GUID, n.SysImageGUID
		if d.sysguid == 0 {
			d.sysguid = n.GUID
		}
		d.id, d.desc = n.ID, n.Description()
		if d.desc == d.id {
			d.desc = "" // share: Description falls back to the id
		}
		d.vendor, d.devid = n.VendorID&0xffffff, n.DeviceID
		d.typ, d.nports = uint8(n.Type), uint8(n.NumPorts)
		d.base, d.sw = base, -1
		if _, dup := f.ids[n.ID]; dup {
			return nil, fmt.Errorf("sim: duplicate node id %q", n.ID)
		}
		f.ids[n.ID] = int32(i)
		if !f.opt.AllowDuplicateGUIDs {
			if other, dup := guids[n.GUID]; dup {
				return nil, fmt.Errorf("%w: %q and %q have 0x%x", ErrDuplicateGUID, nf.Nodes[other].ID, n.ID, n.GUID)
			}
			guids[n.GUID] = int32(i)
		}
		first := 1
		if n.Type == netfile.Switch {
			d.sw = sw
			s := &f.sws[sw]
			s.esp0 = n.EnhancedPort0 > 0
			s.numPortMsk = uint8((n.NumPorts + 16) / 16)
			sw++
			first = 0
		}
		for p := first; p <= n.NumPorts; p++ {
			src := &n.Ports[p]
			pp := &f.ports[base]
			base++
			*pp = port{
				node: int32(i), remote: -1, prev: -1, num: uint8(p),
				wEn: src.WidthEnabled, w: netfile.Width4x,
				sEn: src.SpeedEnabled, s: netfile.SpeedSDR,
				eEn: src.ExtSpeedEnabled,
				lid: src.LID, lmc: src.LMC & 7,
				mtuCap: src.MTUCap, vlCap: src.VLCap,
			}
			if src.FDR10 {
				pp.mEn = 1
			}
			if p == 0 {
				// ibsim reads the header's lid/lmc into port 0.
				pp.lid, pp.lmc = n.Ports[0].LID, n.Ports[0].LMC&7
			}
		}
	}
	// connect_ports: in port order.
	for i := range f.ports {
		pp := &f.ports[i]
		if pp.remote >= 0 {
			continue
		}
		n := &f.nodes[pp.node]
		if n.typ == uint8(netfile.Switch) && pp.num == 0 {
			f.setTemplate(pp, tmplSMA)
			pp.state, pp.phys = 4, 5
			continue
		}
		src := &nf.Nodes[pp.node].Ports[pp.num]
		if src.Remote < 0 {
			f.setDown(pp)
			continue
		}
		if int(src.Remote) >= len(nf.Nodes) || int(src.RemotePort) > nf.Nodes[src.Remote].NumPorts || src.RemotePort == 0 {
			return nil, fmt.Errorf("sim: %q[%d]: bad remote", n.id, pp.num)
		}
		ri := f.portIndex(src.Remote, int(src.RemotePort))
		rsrc := &nf.Nodes[src.Remote].Ports[src.RemotePort]
		if rsrc.Remote != pp.node || int(rsrc.RemotePort) != int(pp.num) {
			return nil, fmt.Errorf("sim: %q[%d] and %q[%d] do not name each other",
				n.id, pp.num, f.nodes[src.Remote].id, src.RemotePort)
		}
		if f.ports[ri].remote >= 0 {
			continue
		}
		if err := f.link(int32(i), ri); err != nil {
			return nil, err
		}
	}
	if f.opt.Latency != nil {
		if err := f.SetLatency(f.opt.Latency); err != nil {
			return nil, err
		}
	}
	for _, c := range nf.Commands {
		if err := f.run(c); err != nil {
			return nil, fmt.Errorf("%s: do %s: %w", c.Pos, c.String(), err)
		}
	}
	return f, nil
}

// portIndex returns the index in f.ports of port p of node n (p must be
// valid: 0..N on a switch, 1..N otherwise).
func (f *Fabric) portIndex(n int32, p int) int32 {
	d := &f.nodes[n]
	if d.sw >= 0 {
		return d.base + int32(p)
	}
	return d.base + int32(p) - 1
}

func (f *Fabric) isSwitch(pp *port) bool { return f.nodes[pp.node].sw >= 0 }

func (f *Fabric) setTemplate(pp *port, t uint8) {
	pp.tmpl = t
	if pp.opVLs == 0 {
		pp.opVLs = pp.vlCapOr()
	}
}

func (pp *port) vlCapOr() uint8 {
	if pp.vlCap != 0 {
		return pp.vlCap
	}
	return 4
}

func (f *Fabric) setDown(pp *port) {
	if f.isSwitch(pp) {
		f.setTemplate(pp, tmplSWDown)
	} else {
		f.setTemplate(pp, tmplCADown)
	}
	pp.state, pp.phys = 1, 2
}

// link connects two free ports as ibsim's link_ports does.
func (f *Fabric) link(a, b int32) error {
	pa, pb := &f.ports[a], &f.ports[b]
	if pa.remote >= 0 || pb.remote >= 0 {
		return ErrLinked
	}
	w := highestWidth(pa.wEn & pb.wEn)
	s := highestSpeed(pa.sEn & pb.sEn)
	if w == 0 || s == 0 {
		return fmt.Errorf("%w: %q[%d] W=%d S=%d and %q[%d] W=%d S=%d", ErrMismatch,
			f.nodes[pa.node].id, pa.num, pa.wEn, pa.sEn, f.nodes[pb.node].id, pb.num, pb.wEn, pb.sEn)
	}
	e := highestExt(pa.eEn & pb.eEn)
	m := pa.mEn & pb.mEn & 1
	for _, x := range [2]*port{pa, pb} {
		if f.isSwitch(x) {
			f.setTemplate(x, tmplSW)
			f.sws[f.nodes[x.node].sw].portChange = true
		} else {
			f.setTemplate(x, tmplCA)
		}
		x.state, x.phys = 2, 5
		x.w, x.s, x.e, x.m = w, s, e, m
	}
	pa.remote, pb.remote = b, a
	f.pcLinked(a, b)
	return nil
}

func highestWidth(m uint8) uint8 {
	for _, w := range [...]uint8{netfile.Width12x, netfile.Width8x, netfile.Width4x, netfile.Width2x, netfile.Width1x} {
		if m&w != 0 {
			return w
		}
	}
	return 0
}

func highestSpeed(m uint8) uint8 {
	for _, s := range [...]uint8{netfile.SpeedQDR, netfile.SpeedDDR, netfile.SpeedSDR} {
		if m&s != 0 {
			return s
		}
	}
	return 0
}

func highestExt(m uint8) uint8 {
	for _, s := range [...]uint8{netfile.ExtSpeedHDR, netfile.ExtSpeedEDR, netfile.ExtSpeedFDR} {
		if m&s != 0 {
			return s
		}
	}
	return 0
}

// lookup finds a node by id, then by description (like SIM_HOST).
func (f *Fabric) lookup(id string) (int32, bool) {
	if i, ok := f.ids[id]; ok {
		return i, true
	}
	for i := range f.nodes {
		if f.nodes[i].description() == id {
			return int32(i), true
		}
	}
	return -1, false
}

func (n *node) description() string {
	if n.desc == "" {
		if len(n.id) > 63 {
			return n.id[:63]
		}
		return n.id
	}
	return n.desc
}

// Attach returns a transport attached to node id like an ibsim client:
// "" is the first node of the file, otherwise id is matched against node
// ids, then descriptions. A switch is attached at port 0, a CA or router at
// its first port. Several transports may be attached at once.
func (f *Fabric) Attach(id string) (transport.Transport, error) {
	e, err := f.AttachEndpoint(id)
	if err != nil {
		// A nil *Endpoint in the interface would compare non-nil.
		return nil, err
	}
	return e, nil
}

// AttachEndpoint is Attach returning the concrete type.
func (f *Fabric) AttachEndpoint(id string) (*Endpoint, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.nodes) == 0 {
		return nil, &transport.OpError{Op: "attach", Source: "sim", Err: transport.ErrNoDevice}
	}
	n := int32(0)
	if id != "" {
		var ok bool
		if n, ok = f.lookup(id); !ok {
			return nil, &transport.OpError{Op: "attach", Source: "sim " + id, Err: ErrNoNode}
		}
	}
	slot := f.slots.Add(1) - 1
	return &Endpoint{f: f, port: f.nodes[n].base, slot: uint16(slot), node: f.nodes[n].id}, nil
}

// Endpoint is a client attached to one port of a Fabric; it implements
// transport.Transport.
type Endpoint struct {
	f      *Fabric
	port   int32
	slot   uint16
	node   string
	closed atomic.Bool
}

// Node returns the id of the node the endpoint is attached to.
func (e *Endpoint) Node() string { return e.node }

// syncWindow is the window the endpoint states without the latency model.
const syncWindow = 64

// Limits states the endpoint's limits. Without the latency model an SMP
// is answered at once, in the caller's goroutine (Immediate): nothing is
// ever in flight, and SMPs at once only share the CPUs. Its Window is
// then syncWindow (discovering 2,144 nodes at windows 2 to 64 takes the
// same time; at 1024, half as long again and 3 MB more). With the model
// SMPs take the fabric's time, and it states no window.
func (e *Endpoint) Limits() transport.Limits {
	if e.f.fs.lat.Load() != nil {
		return transport.Limits{}
	}
	return transport.Limits{Window: syncWindow, Immediate: true}
}

// Slot returns the client number written into TID bits 63..48 of every
// request, as ibsim writes its slot number.
func (e *Endpoint) Slot() uint16 { return e.slot }

// Close detaches the endpoint; later Exchanges return transport.ErrClosed.
func (e *Endpoint) Close() error {
	e.closed.Store(true)
	return nil
}

// NumNodes returns the number of nodes.
func (f *Fabric) NumNodes() int { return len(f.nodes) }

// NumPorts returns the number of ports, switch ports 0 included.
func (f *Fabric) NumPorts() int { return len(f.ports) }

var _ transport.Transport = (*Endpoint)(nil)
