// Package fabric opens a connection to an InfiniBand fabric, by whichever
// of the three ways the tools know: the kernel umad device (real
// hardware), a running ibsim, or the embedded simulator (package sim) on
// a net file, a topology file or a generated fat tree.
//
// Open takes a small Options struct and returns a Conn, a
// transport.Transport that discovery (package discover) and the readers
// of the other packages take:
//
//	c, err := fabric.Open(ctx, fabric.Options{Sim: "fabric.net"})
//	...
//	defer c.Close()
//	res, err := discover.Discover(ctx, c, discover.Config{})
//
// A Conn is read-only (Set methods refused with transport.ErrReadOnly)
// unless Options.AllowSet asks for Sets.
package fabric

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ibfabric/ibdiag/internal/suggest"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/transport"
	"github.com/ibfabric/ibdiag/pkg/umad"
)

// Options choose the fabric Open connects to. The zero Options is the
// kernel device's first usable port, as libibumad chooses it.
type Options struct {
	// Sim, if set, opens the embedded simulator on SPEC: an ibsim net
	// file, an ibnetdiscover topology file, or a generator spec such as
	// "fattree:levels=2,radix=8,hosts=4" (see netfile.Generate).
	Sim string
	// SimSM runs the simulator's minimal subnet manager first (LIDs,
	// Active ports, min-hop forwarding tables), as OpenSM would.
	SimSM bool
	// IBSim, if set, connects to a running ibsim, found as libumad2sim
	// finds it (IBSIM_SOCKNAME, IBSIM_SERVER_NAME/IBSIM_SERVER_PORT,
	// SIM_HOST; see ibsim.ConfigFromEnv).
	IBSim bool
	// IBSimSockName overrides IBSIM_SOCKNAME.
	IBSimSockName string
	// Host is the node to attach at with Sim or IBSim: a net-file node id
	// or a node description, and with Sim also a node or port GUID in hex
	// ("": the first node of the file, or SIM_HOST for ibsim).
	Host string
	// CA and Port choose the kernel device and its port ("" and 0: as
	// libibumad chooses).
	CA   string
	Port int
	// Timeout bounds ibsim's control requests (0: ibsim.DefaultTimeout).
	Timeout time.Duration
	// MaxNodes bounds a simulated fabric, counted while it is parsed or
	// before it is generated (0: discover.DefaultMaxNodes).
	MaxNodes int
	// AllowSet opens the fabric for Set methods too; by default they are
	// refused with transport.ErrReadOnly before they are sent.
	AllowSet bool
	// Warn, if set, gets each warning (one line, no newline), e.g. the
	// embedded SM running out of LIDs; Conn.Warnings holds them too.
	Warn func(msg string)
	// ConnectSent, if set, is given to ibsim.Config.ConnectSent.
	ConnectSent func()
	// SysfsRoot is where the kernel device is looked up ("": /sys).
	SysfsRoot string
}

// Conn is an open fabric: the transport and where it is attached.
type Conn struct {
	transport.Transport
	// Desc says what the connection is attached to, e.g. `ibsim "sim"
	// slot 1 at "Switch1"`, "embedded simulator demo.net".
	Desc string
	// Sim is the embedded simulator behind the transport, if that is what
	// was opened (for fault injection at run time).
	Sim *sim.Fabric
	// Warnings are the warnings Open had (also given to Options.Warn).
	Warnings []string

	// peer is the ibsim client, when the transport is one.
	peer ibsimConn
}

// Limits are the transport's (see transport.Limits).
func (c *Conn) Limits() transport.Limits { return transport.LimitsOf(c.Transport) }

// PeerGone reports whether the ibsim the connection was attached through
// went away (ended, or restarted: it no longer knows this client); Open
// again to reattach. Always false for other transports.
func (c *Conn) PeerGone() bool { return c.peer != nil && c.peer.PeerGone() }

// Errors of Open.
var (
	// ErrUmadLinuxOnly: the kernel umad transport exists on Linux only.
	ErrUmadLinuxOnly = errors.New("kernel InfiniBand devices (umad) are Linux-only")
	// ErrIBSimLinuxOnly: ibsim and its client run on Linux only.
	ErrIBSimLinuxOnly = errors.New("ibsim and its client run on Linux only")
	// ErrTwoTransports: Options chose both Sim and IBSim.
	ErrTwoTransports = errors.New("both Sim and IBSim chosen: choose one transport")
)

// SimError is a failure to open the embedded simulator. Op is the step
// that failed: "load" (the fabric could not be parsed or generated: Err
// is a *netfile.ParseError or wraps netfile.ErrSpec), "sm" (the minimal
// SM) or "attach" (Options.Host: Err wraps sim.ErrNoNode).
type SimError struct {
	Spec string
	Op   string
	Err  error
}

func (e *SimError) Error() string {
	return "embedded simulator " + e.Spec + ": " + e.Op + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *SimError) Unwrap() error { return e.Err }

// goos is runtime.GOOS (tests change it).
var goos = runtime.GOOS

// Open connects to the fabric o chooses: the embedded simulator if o.Sim
// is set, a running ibsim if o.IBSim, otherwise the kernel umad device.
// It never prints: warnings go to o.Warn and Conn.Warnings.
func Open(ctx context.Context, o Options) (*Conn, error) {
	c, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	if !o.AllowSet {
		c.Transport = transport.ReadOnly(c.Transport)
	}
	return c, nil
}

func open(ctx context.Context, o Options) (*Conn, error) {
	switch {
	case o.Sim != "" && o.IBSim:
		return nil, ErrTwoTransports
	case o.Sim != "":
		return openSim(o)
	case o.IBSim:
		if goos != "linux" {
			return nil, ErrIBSimLinuxOnly
		}
		cfg := IBSimConfig(o)
		c, err := dialIBSim(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &Conn{Transport: c, peer: c, Desc: fmt.Sprintf("ibsim %q slot %d at %q", cfg.SockName, c.Slot(), c.AttachedNode())}, nil
	}
	if goos != "linux" {
		return nil, ErrUmadLinuxOnly
	}
	root := o.SysfsRoot
	if root == "" {
		root = "/sys"
	}
	fs, err := umad.NewFS(root)
	if err != nil {
		return nil, err
	}
	ref, err := umad.Select(fs, o.CA, o.Port)
	if err != nil {
		return nil, err
	}
	d, err := umad.Open(fs, ref.CA, ref.Port)
	if err != nil {
		return nil, err
	}
	return &Conn{Transport: d, Desc: ref.String()}, nil
}

// IBSimConfig is the ibsim client configuration Open uses for o: the
// environment's (ibsim.ConfigFromEnv) with o's overrides.
func IBSimConfig(o Options) ibsim.Config {
	cfg := ibsim.ConfigFromEnv()
	if o.IBSimSockName != "" {
		cfg.SockName = o.IBSimSockName
	}
	if o.Host != "" {
		cfg.Host = o.Host
	}
	cfg.Timeout = o.Timeout
	cfg.ConnectSent = o.ConnectSent
	return cfg
}

// openSim builds the embedded simulator from a file or a generator spec,
// optionally runs its minimal SM, and attaches to it.
func openSim(o Options) (*Conn, error) {
	maxNodes := o.MaxNodes
	if maxNodes <= 0 {
		maxNodes = discover.DefaultMaxNodes
	}
	// Inputs are bounded before anything is built: net files by
	// netfile.DefaultMaxBytes (includes counted) and, like generated
	// fabrics, by MaxNodes.
	var nf *netfile.Fabric
	var err error
	if IsGeneratorSpec(o.Sim) {
		nf, err = netfile.GenerateLimit(o.Sim, maxNodes)
	} else {
		nf, err = netfile.ParseFileOptions(o.Sim, netfile.ParseOptions{MaxNodes: maxNodes, RequireNodes: true})
	}
	var f *sim.Fabric
	if err == nil {
		f, err = sim.New(nf, nil)
	}
	if err != nil {
		return nil, &SimError{Spec: o.Sim, Op: "load", Err: err}
	}
	if o.Host != "" {
		id, err := simHost(nf, o.Host)
		if err != nil {
			return nil, &SimError{Spec: o.Sim, Op: "attach", Err: err}
		}
		o.Host = id
	}
	var warnings []string
	if o.SimSM {
		if err := f.RunSM(o.Host); err != nil {
			// Out of LIDs is a warning: the SM did the rest, as OpenSM.
			var le *sim.LIDSpaceError
			if !errors.As(err, &le) {
				return nil, &SimError{Spec: o.Sim, Op: "sm", Err: err}
			}
			w := fmt.Sprintf("embedded SM: %d of %d ports left without a LID (unicast LIDs are 1..%d); they stay at LID 0, not Active",
				le.Unassigned, le.Ports, sim.MaxUnicastLID)
			warnings = append(warnings, w)
			if o.Warn != nil {
				o.Warn(w)
			}
		}
	}
	tr, err := f.Attach(o.Host)
	if err != nil {
		return nil, &SimError{Spec: o.Sim, Op: "attach", Err: err}
	}
	return &Conn{Transport: tr, Desc: "embedded simulator " + o.Sim, Sim: f, Warnings: warnings}, nil
}

// simHost returns the id of the node of nf that Options.Host names: its
// id, its NodeDescription, its node GUID or one of its port GUIDs (hex,
// with or without 0x: the "Initiated from node ... port ..." GUIDs of a
// topology file's header). Otherwise the error says what is taken and
// suggests the nearest ids and descriptions.
func simHost(nf *netfile.Fabric, host string) (string, error) {
	for i := range nf.Nodes {
		if n := &nf.Nodes[i]; n.ID == host {
			return n.ID, nil
		}
	}
	for i := range nf.Nodes {
		if n := &nf.Nodes[i]; n.Description() == host {
			return n.ID, nil
		}
	}
	hex := strings.TrimPrefix(strings.TrimPrefix(host, "0x"), "0X")
	if v, err := strconv.ParseUint(hex, 16, 64); err == nil && len(hex) > 4 {
		for i := range nf.Nodes {
			n := &nf.Nodes[i]
			if n.GUID == v {
				return n.ID, nil
			}
			for p := 1; p <= n.NumPorts; p++ {
				if n.PortGUID(p) == v {
					return n.ID, nil
				}
			}
		}
	}
	var names []string
	for i := range nf.Nodes {
		names = append(names, nf.Nodes[i].ID, nf.Nodes[i].Description())
	}
	msg := "no node has this id, description, node GUID or port GUID"
	if near := suggest.Closest(host, names, 3); len(near) > 0 {
		return "", &hostError{msg + suggest.DidYouMean(near, strconv.Quote)}
	}
	if len(nf.Nodes) > 0 {
		n := &nf.Nodes[0]
		desc := ""
		if d := n.Description(); d != n.ID {
			desc = fmt.Sprintf(", %q", d)
		}
		msg += fmt.Sprintf(" (the first node is %q%s, node GUID 0x%016x)", n.ID, desc, n.GUID)
	}
	return "", &hostError{msg}
}

// hostError is simHost's error: it says what Options.Host may be and
// unwraps to sim.ErrNoNode.
type hostError struct{ msg string }

func (e *hostError) Error() string { return e.msg }
func (e *hostError) Unwrap() error { return sim.ErrNoNode }

// IsGeneratorSpec reports whether a Sim spec names a generator
// ("fattree:...") rather than a file: a file of that name wins.
func IsGeneratorSpec(spec string) bool {
	if _, err := os.Stat(spec); err == nil {
		return false
	}
	return strings.HasPrefix(spec, "fattree:")
}

// ibsimConn is what Open uses of an ibsim client (pkg/ibsim's Client, on
// Linux).
type ibsimConn interface {
	transport.Transport
	Slot() int
	AttachedNode() string
	PeerGone() bool
}
