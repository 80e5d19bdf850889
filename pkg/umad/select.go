package umad

import (
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
func Select(fs *FS, ca string, port int) (PortRef, error) {
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
