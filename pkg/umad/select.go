package umad

import (
	"errors"
	"fmt"
	"strings"
)

// MinABIVersion is the oldest kernel user_mad ABI this package speaks.
const MinABIVersion = 5

// capSMDisabled is CapabilityMask bit 10 (IsSMDisabled): the port has no
// SMI (planarized HCAs expose separate SMI and GSI ports).
const capSMDisabled = 0x400

// PortRef names the CA port a Device uses and what sysfs says about it.
type PortRef struct {
	CA       string
	Port     int
	Device   string // /dev/infiniband/umadK
	Issm     string // /dev/infiniband/issmK, or ""
	NodeType NodeType
	NodeGUID uint64
	Info     Port
}

// String describes the reference, e.g. "mlx5_0 port 1 (/dev/infiniband/umad0)".
func (r PortRef) String() string {
	return fmt.Sprintf("%s port %d (%s)", r.CA, r.Port, r.Device)
}

// portRank orders ports as libibumad does: Active, then LinkUp, then any
// port that is not Disabled; 0 means unusable.
func portRank(p *Port) int {
	switch {
	case p.State == StateActive:
		return 3
	case p.PhysState == PhysLinkUp:
		return 2
	case p.PhysState != PhysDisabled:
		return 1
	}
	return 0
}

// bestPort picks the port of ca to use, honouring an explicit port number
// (> 0). It returns nil and the number of Ethernet ports skipped when
// nothing fits.
func bestPort(ca *CA, port int) (best *Port, rank, ethernet int) {
	for i := range ca.Ports {
		p := &ca.Ports[i]
		if ca.NodeType == NodeSwitch && p.Number != 0 {
			continue
		}
		if port > 0 && p.Number != port {
			continue
		}
		if !p.IsInfiniBand() {
			ethernet++
			continue
		}
		if port <= 0 && p.CapMask&capSMDisabled != 0 {
			continue
		}
		if r := portRank(p); r > rank {
			best, rank = p, r
		}
	}
	return best, rank, ethernet
}

// Select chooses the CA port to open, as libibumad does when no port is
// given. ca = "" means any CA (the first, sorted by name, with the best
// port); port <= 0 means any port. Ports whose link layer is not
// InfiniBand are skipped, then the first Active port wins, else the first
// LinkUp one, else the first not Disabled; a switch device always uses
// port 0. The chosen port must be at least Init: directed-route SMPs work
// before a subnet manager has brought the port to Active.
//
// On ErrPortNotActive the returned PortRef still names the port, so the
// caller can report it.
//
// With neither ca nor port given, every failure is a *NoPortError that
// gives the reason for each candidate device and port, one per line
// (errors.Is still finds the sentinels: ErrPortNotActive, ErrEthernet,
// ErrNoUmad, ErrABIVersion, ...). When the host has no RDMA device at all
// the error wraps ErrNoInfiniBand alone.
func Select(fs *FS, ca string, port int) (PortRef, error) {
	ref, err := selectPort(fs, ca, port)
	if err == nil || ca != "" || port > 0 || errors.Is(err, ErrNoInfiniBand) && !hasCandidates(fs) {
		return ref, err
	}
	if np := noPort(fs, err); np != nil {
		return ref, np
	}
	return ref, err
}

func selectPort(fs *FS, ca string, port int) (PortRef, error) {
	cas, err := fs.CAs()
	if err != nil {
		return PortRef{}, err
	}
	if len(cas) == 0 {
		if ca != "" {
			return PortRef{}, fmt.Errorf("umad: CA %q: %w", ca, ErrNotFound)
		}
		return PortRef{}, fmt.Errorf("umad: %w", ErrNoInfiniBand)
	}
	var cand []*CA
	if ca != "" {
		for i := range cas {
			if cas[i].Name == ca {
				cand = append(cand, &cas[i])
			}
		}
		if cand == nil {
			return PortRef{}, fmt.Errorf("umad: CA %q (have %s): %w", ca, caList(cas), ErrNotFound)
		}
	} else {
		for i := range cas {
			if cas[i].NodeType < NodeRNIC {
				cand = append(cand, &cas[i])
			}
		}
	}

	var (
		chosen   *CA
		cport    *Port
		crank    = -1
		ethernet []string
		found    bool // the explicit port exists on some candidate
	)
	for _, c := range cand {
		if port > 0 && c.Port(port) != nil {
			found = true
		}
		p, r, eth := bestPort(c, port)
		if eth > 0 {
			ethernet = append(ethernet, c.Name)
		}
		if p != nil && r > crank {
			chosen, cport, crank = c, p, r
		}
	}
	if cport == nil {
		switch {
		case port > 0 && !found:
			where := "any CA"
			if ca != "" {
				where = "CA " + ca
				if cand[0].NodeType == NodeSwitch {
					where += " (a switch device, which only has port 0)"
				}
			}
			return PortRef{}, fmt.Errorf("umad: port %d on %s: %w", port, where, ErrNotFound)
		case len(ethernet) > 0:
			return PortRef{}, fmt.Errorf("umad: %s: %w", strings.Join(ethernet, ", "), ErrEthernet)
		case ca != "" && port > 0:
			p := cand[0].Port(port)
			return PortRef{}, fmt.Errorf("umad: %s port %d is %d: %s (physical %d: %s): %w", ca, port,
				p.State, p.State, p.PhysState, p.PhysState, ErrPortNotActive)
		case ca != "" || port > 0:
			return PortRef{}, fmt.Errorf("umad: %s: no usable port (all Disabled or SMI-less): %w",
				describe(ca, port), ErrPortNotActive)
		}
		return PortRef{}, fmt.Errorf("umad: %w", ErrNoInfiniBand)
	}

	ref := PortRef{CA: chosen.Name, Port: cport.Number, NodeType: chosen.NodeType,
		NodeGUID: chosen.NodeGUID, Info: *cport}
	devs, err := fs.UmadDevices()
	if err != nil {
		return ref, err
	}
	for _, d := range devs {
		if d.CA == ref.CA && d.Port == ref.Port {
			ref.Device, ref.Issm = d.Path, d.Issm
			break
		}
	}
	if ref.Device == "" {
		return ref, fmt.Errorf("umad: %s port %d: %w", ref.CA, ref.Port, ErrNoUmad)
	}
	abi, err := fs.ABIVersion()
	if err != nil {
		return ref, err
	}
	if abi < MinABIVersion {
		return ref, fmt.Errorf("umad: abi_version %d: %w", abi, ErrABIVersion)
	}
	if cport.State < StateInit { // Init and later imply a physical LinkUp
		return ref, fmt.Errorf("umad: %s port %d is %d: %s (physical %d: %s): %w", ref.CA, ref.Port,
			cport.State, cport.State, cport.PhysState, cport.PhysState, ErrPortNotActive)
	}
	return ref, nil
}

func describe(ca string, port int) string {
	s := ca
	if s == "" {
		s = "any CA"
	}
	if port > 0 {
		s += fmt.Sprintf(" port %d", port)
	}
	return s
}

func caList(cas []CA) string {
	names := make([]string, len(cas))
	for i := range cas {
		names[i] = cas[i].Name
	}
	return strings.Join(names, ", ")
}

// Unusable is a device or port Select could not use, and why.
type Unusable struct {
	CA   string
	Port int   // -1: the whole device
	Err  error // the reason; it wraps one of the package's sentinel errors
}

func (u Unusable) String() string {
	if u.Port < 0 {
		return fmt.Sprintf("%s: %v", u.CA, u.Err)
	}
	return fmt.Sprintf("%s port %d: %v", u.CA, u.Port, u.Err)
}

// NoPortError is Select's error when no device was named and none could
// be used: the reason for every candidate.
type NoPortError struct {
	Candidates []Unusable
	// Global is a reason that rules out every port (the kernel's umad
	// ABI), or nil.
	Global error
}

// Error is a few lines: a heading, one line per candidate, and what to
// do next.
func (e *NoPortError) Error() string {
	var b strings.Builder
	b.WriteString("umad: no usable InfiniBand port")
	if e.Global != nil {
		fmt.Fprintf(&b, "\n  %v", e.Global)
	}
	for _, u := range e.Candidates {
		b.WriteString("\n  ")
		b.WriteString(u.String())
	}
	b.WriteString("\n  choose a port with -C/--Ca and -P/--Port, or work without hardware: --sim <net file> (embedded simulator) or --ibsim (a running ibsim)")
	return b.String()
}

// Unwrap returns every reason, so errors.Is finds their sentinels.
func (e *NoPortError) Unwrap() []error {
	var errs []error
	if e.Global != nil {
		errs = append(errs, e.Global)
	}
	for _, u := range e.Candidates {
		errs = append(errs, u.Err)
	}
	return errs
}

// reason is a short reason wrapping a sentinel (whose long hint is not
// repeated on every line).
type reason struct {
	msg      string
	sentinel error
}

func (r *reason) Error() string { return r.msg }
func (r *reason) Unwrap() error { return r.sentinel }

func because(sentinel error, format string, a ...any) error {
	return &reason{fmt.Sprintf(format, a...), sentinel}
}

// hasCandidates reports whether fs lists any RDMA device.
func hasCandidates(fs *FS) bool {
	names, err := fs.CANames()
	return err == nil && len(names) > 0
}

// noPort explains, device by device and port by port, why nothing could
// be used; nil when sysfs cannot be read again (then err stands).
func noPort(fs *FS, err error) *NoPortError {
	cas, cerr := fs.CAs()
	if cerr != nil || len(cas) == 0 {
		return nil
	}
	devs, _ := fs.UmadDevices()
	hasUmad := func(ca string, port int) bool {
		for _, d := range devs {
			if d.CA == ca && d.Port == port {
				return true
			}
		}
		return false
	}
	e := &NoPortError{}
	if abi, aerr := fs.ABIVersion(); aerr == nil && abi < MinABIVersion {
		e.Global = because(ErrABIVersion, "kernel user_mad ABI version %d is below %d, which is not supported: upgrade the kernel", abi, MinABIVersion)
	} else if errors.Is(aerr, ErrNoUmad) {
		e.Global = because(ErrNoUmad, "no umad devices (%s missing): load the ib_umad kernel module (modprobe ib_umad)", fs.umadDir())
	}
	for i := range cas {
		c := &cas[i]
		if c.NodeType >= NodeRNIC {
			e.Candidates = append(e.Candidates, Unusable{c.Name, -1,
				because(ErrNotInfiniBand, "a %s device (node type %d), not InfiniBand: no subnet management", c.NodeType, c.NodeType)})
			continue
		}
		if len(c.Ports) == 0 {
			e.Candidates = append(e.Candidates, Unusable{c.Name, -1, because(ErrNotFound, "no ports listed in sysfs")})
		}
		for j := range c.Ports {
			p := &c.Ports[j]
			if c.NodeType == NodeSwitch && p.Number != 0 {
				continue
			}
			var why error
			switch {
			case !p.IsInfiniBand():
				why = because(ErrEthernet, "link layer is %s (RoCE): no subnet management, no SMPs", p.LinkLayer)
			case p.CapMask&capSMDisabled != 0:
				why = because(ErrPortNotActive, "no SMI (IsSMDisabled in the capability mask): a GSI-only port")
			case p.PhysState == PhysDisabled:
				why = because(ErrPortNotActive, "port is Disabled (state %s): enable it, e.g. ibportstate enable", p.State)
			case p.State < StateInit:
				why = because(ErrPortNotActive, "port is %s (physical %s): no link; check the cable and the peer port", p.State, p.PhysState)
			case e.Global == nil && !hasUmad(c.Name, p.Number):
				why = because(ErrNoUmad, "no umad device: load the ib_umad kernel module (modprobe ib_umad)")
			case e.Global == nil:
				why = because(errors.Unwrap(err), "%v", err) // usable in sysfs: the original error says why not
			default:
				continue // the global reason covers it
			}
			e.Candidates = append(e.Candidates, Unusable{c.Name, p.Number, why})
		}
	}
	if e.Global == nil && len(e.Candidates) == 0 {
		return nil
	}
	return e
}
