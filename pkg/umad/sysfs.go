package umad

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DefaultRoot is where sysfs is mounted.
const DefaultRoot = "/sys"

// DefaultDevDir is the directory holding the umad and issm character devices.
const DefaultDevDir = "/dev/infiniband"

// FS reads the InfiniBand parts of a sysfs tree rooted at a directory, so
// that tests can point it at a fixture tree.
type FS struct {
	sys string // sysfs mount point
	dev string // directory of the umad/issm device nodes
}

// NewFS returns an FS rooted at root, or at DefaultRoot when root is "".
// The device nodes are looked up in DefaultDevDir.
func NewFS(root string) (*FS, error) {
	if root == "" {
		root = DefaultRoot
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("umad: sysfs root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("umad: sysfs root %s is not a directory", root)
	}
	return &FS{sys: root, dev: DefaultDevDir}, nil
}

// Root is the sysfs directory fs reads.
func (fs *FS) Root() string { return fs.sys }

func (fs *FS) caDir() string   { return filepath.Join(fs.sys, "class", "infiniband") }
func (fs *FS) umadDir() string { return filepath.Join(fs.sys, "class", "infiniband_mad") }

// NodeType is an RDMA device's node type as sysfs reports it.
type NodeType uint8

// Node types of /sys/class/infiniband/<ca>/node_type. Types from RNIC on
// are not InfiniBand devices.
const (
	NodeCA     NodeType = 1
	NodeSwitch NodeType = 2
	NodeRouter NodeType = 3
	NodeRNIC   NodeType = 4
)

// String returns the name sysfs prints after the number.
func (t NodeType) String() string {
	switch t {
	case NodeCA:
		return "CA"
	case NodeSwitch:
		return "switch"
	case NodeRouter:
		return "router"
	case NodeRNIC:
		return "RNIC"
	case 5:
		return "usNIC"
	case 6:
		return "usNIC UDP"
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// PortState is the logical port state (PortInfo PortState).
type PortState uint8

// Logical port states as sysfs numbers them.
const (
	StateNOP         PortState = 0
	StateDown        PortState = 1
	StateInit        PortState = 2
	StateArmed       PortState = 3
	StateActive      PortState = 4
	StateActiveDefer PortState = 5
)

var stateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// String returns the kernel's name of the state, e.g. "ACTIVE".
func (s PortState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "UNKNOWN(" + strconv.Itoa(int(s)) + ")"
}

// PhysState is the physical port state (PortInfo PortPhysicalState).
type PhysState uint8

// Physical port states as sysfs numbers them.
const (
	PhysSleep             PhysState = 1
	PhysPolling           PhysState = 2
	PhysDisabled          PhysState = 3
	PhysTraining          PhysState = 4
	PhysLinkUp            PhysState = 5
	PhysLinkErrorRecovery PhysState = 6
	PhysTest              PhysState = 7
)

var physNames = [...]string{"NOP", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
	"LinkUp", "LinkErrorRecovery", "Phy Test"}

// String returns the kernel's name of the state, e.g. "LinkUp".
func (s PhysState) String() string {
	if int(s) < len(physNames) {
		return physNames[s]
	}
	return "UNKNOWN(" + strconv.Itoa(int(s)) + ")"
}

// Rate is a port's active rate as sysfs prints it, "100 Gb/sec (4X EDR)".
type Rate struct {
	Mbps  uint32 // data rate in Mb/s (2.5 Gb/s = 2500)
	Width uint8  // active link width multiplier (1, 2, 4, 8, 12)
	Speed string // lane speed name ("SDR", "EDR", ...); may be empty
}

// String formats r the way sysfs does.
func (r Rate) String() string {
	g := strconv.FormatUint(uint64(r.Mbps/1000), 10)
	if f := r.Mbps % 1000; f != 0 {
		g += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
	}
	s := g + " Gb/sec (" + strconv.Itoa(int(r.Width)) + "X"
	if r.Speed != "" {
		s += " " + r.Speed
	}
	return s + ")"
}

// CA is one RDMA device of /sys/class/infiniband.
type CA struct {
	Name         string
	NodeType     NodeType
	NodeGUID     uint64
	SysImageGUID uint64
	NodeDesc     string
	FWVer        string
	HCAType      string
	BoardID      string
	Ports        []Port // ascending port number
}

// Port is one port of a CA, /sys/class/infiniband/<ca>/ports/<n>.
type Port struct {
	Number    int
	LID       uint16
	LMC       uint8 // lid_mask_count
	SMLID     uint16
	SMSL      uint8
	State     PortState
	PhysState PhysState
	Rate      Rate
	CapMask   uint32
	LinkLayer string   // "InfiniBand" or "Ethernet"; "" when the kernel does not say
	GID       [16]byte // gids/0: subnet prefix and port GUID
}

// IsInfiniBand reports whether the port's link layer is InfiniBand (a
// missing link_layer, as on old kernels, counts as InfiniBand).
func (p *Port) IsInfiniBand() bool {
	switch p.LinkLayer {
	case "", "InfiniBand", "IB":
		return true
	}
	return false
}

// PortGUID is the low 64 bits of gids/0.
func (p *Port) PortGUID() uint64 {
	var g uint64
	for _, b := range p.GID[8:] {
		g = g<<8 | uint64(b)
	}
	return g
}

// UmadDev is one umad character device and the CA port it serves.
type UmadDev struct {
	Index int    // K of umadK
	CA    string // ibdev
	Port  int
	Path  string // /dev/infiniband/umadK
	Issm  string // /dev/infiniband/issmK, "" if sysfs lists none
}

// CANames lists the RDMA devices, sorted by name. A missing
// class/infiniband directory yields an empty list.
func (fs *FS) CANames() ([]string, error) {
	ents, err := os.ReadDir(fs.caDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("umad: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// CAs reads every RDMA device, sorted by name.
func (fs *FS) CAs() ([]CA, error) {
	names, err := fs.CANames()
	if err != nil {
		return nil, err
	}
	cas := make([]CA, 0, len(names))
	for _, n := range names {
		ca, err := fs.CA(n)
		if err != nil {
			return nil, err
		}
		cas = append(cas, ca)
	}
	return cas, nil
}

// CA reads one RDMA device and its ports.
func (fs *FS) CA(name string) (CA, error) {
	dir := filepath.Join(fs.caDir(), name)
	ca := CA{Name: name}
	s, err := readAttr(dir, "node_type")
	if err != nil {
		return CA{}, err
	}
	n, _, err := parseEnum(s)
	if err != nil || n > 255 {
		return CA{}, attrErr(dir, "node_type", s)
	}
	ca.NodeType = NodeType(n)
	if s, err = readAttr(dir, "node_guid"); err != nil {
		return CA{}, err
	}
	if ca.NodeGUID, err = ParseGUID(s); err != nil {
		return CA{}, attrErr(dir, "node_guid", s)
	}
	if s, ok := readOptional(dir, "sys_image_guid"); ok {
		if ca.SysImageGUID, err = ParseGUID(s); err != nil {
			return CA{}, attrErr(dir, "sys_image_guid", s)
		}
	}
	ca.NodeDesc, _ = readOptional(dir, "node_desc")
	ca.FWVer, _ = readOptional(dir, "fw_ver")
	ca.HCAType, _ = readOptional(dir, "hca_type")
	ca.BoardID, _ = readOptional(dir, "board_id")

	pdir := filepath.Join(dir, "ports")
	ents, err := os.ReadDir(pdir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return CA{}, fmt.Errorf("umad: %w", err)
	}
	for _, e := range ents {
		num, err := strconv.Atoi(e.Name())
		if err != nil || num < 0 || num > 255 {
			continue
		}
		p, err := readPort(filepath.Join(pdir, e.Name()), num)
		if err != nil {
			return CA{}, err
		}
		ca.Ports = append(ca.Ports, p)
	}
	sort.Slice(ca.Ports, func(i, j int) bool { return ca.Ports[i].Number < ca.Ports[j].Number })
	return ca, nil
}

// Port returns the port numbered n, or nil.
func (ca *CA) Port(n int) *Port {
	for i := range ca.Ports {
		if ca.Ports[i].Number == n {
			return &ca.Ports[i]
		}
	}
	return nil
}

func readPort(dir string, num int) (Port, error) {
	p := Port{Number: num}
	s, err := readAttr(dir, "state")
	if err != nil {
		return Port{}, err
	}
	n, _, err := parseEnum(s)
	if err != nil || n > 255 {
		return Port{}, attrErr(dir, "state", s)
	}
	p.State = PortState(n)
	if s, err = readAttr(dir, "phys_state"); err != nil {
		return Port{}, err
	}
	if n, _, err = parseEnum(s); err != nil || n > 255 {
		return Port{}, attrErr(dir, "phys_state", s)
	}
	p.PhysState = PhysState(n)

	if s, ok := readOptional(dir, "lid"); ok {
		v, err := strconv.ParseUint(s, 0, 16)
		if err != nil {
			return Port{}, attrErr(dir, "lid", s)
		}
		p.LID = uint16(v)
	}
	if s, ok := readOptional(dir, "lid_mask_count"); ok {
		v, err := strconv.ParseUint(s, 10, 8)
		if err != nil || v > 7 {
			return Port{}, attrErr(dir, "lid_mask_count", s)
		}
		p.LMC = uint8(v)
	}
	if s, ok := readOptional(dir, "sm_lid"); ok {
		v, err := strconv.ParseUint(s, 0, 16)
		if err != nil {
			return Port{}, attrErr(dir, "sm_lid", s)
		}
		p.SMLID = uint16(v)
	}
	if s, ok := readOptional(dir, "sm_sl"); ok {
		v, err := strconv.ParseUint(s, 10, 8)
		if err != nil || v > 15 {
			return Port{}, attrErr(dir, "sm_sl", s)
		}
		p.SMSL = uint8(v)
	}
	if s, ok := readOptional(dir, "cap_mask"); ok {
		v, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			return Port{}, attrErr(dir, "cap_mask", s)
		}
		p.CapMask = uint32(v)
	}
	if s, ok := readOptional(dir, "rate"); ok {
		r, err := parseRate(s)
		if err != nil {
			return Port{}, attrErr(dir, "rate", s)
		}
		p.Rate = r
	}
	p.LinkLayer, _ = readOptional(dir, "link_layer")
	if s, ok := readOptional(filepath.Join(dir, "gids"), "0"); ok {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Port{}, attrErr(dir, "gids/0", s)
		}
		p.GID = a.As16()
	}
	return p, nil
}

// UmadDevices lists the umad devices of class/infiniband_mad, ordered by
// index. A missing directory (ib_umad not loaded) yields an empty list.
func (fs *FS) UmadDevices() ([]UmadDev, error) {
	ents, err := os.ReadDir(fs.umadDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("umad: %w", err)
	}
	type key struct {
		ca   string
		port int
	}
	issm := map[key]string{}
	var devs []UmadDev
	for _, e := range ents {
		name := e.Name()
		var prefix string
		switch {
		case strings.HasPrefix(name, "umad"):
			prefix = "umad"
		case strings.HasPrefix(name, "issm"):
			prefix = "issm"
		default:
			continue
		}
		k, err := strconv.Atoi(name[len(prefix):])
		if err != nil || k < 0 {
			continue
		}
		dir := filepath.Join(fs.umadDir(), name)
		ca, err := readAttr(dir, "ibdev")
		if err != nil {
			return nil, err
		}
		ps, err := readAttr(dir, "port")
		if err != nil {
			return nil, err
		}
		port, err := strconv.Atoi(ps)
		if err != nil || port < 0 || port > 255 {
			return nil, attrErr(dir, "port", ps)
		}
		if prefix == "issm" {
			issm[key{ca, port}] = filepath.Join(fs.dev, name)
			continue
		}
		devs = append(devs, UmadDev{Index: k, CA: ca, Port: port, Path: filepath.Join(fs.dev, name)})
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Index < devs[j].Index })
	for i := range devs {
		devs[i].Issm = issm[key{devs[i].CA, devs[i].Port}]
	}
	return devs, nil
}

// ABIVersion reads class/infiniband_mad/abi_version. When the file is
// missing the error wraps ErrNoUmad.
func (fs *FS) ABIVersion() (int, error) {
	s, err := readAttr(fs.umadDir(), "abi_version")
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("umad: %s/abi_version missing: %w", fs.umadDir(), ErrNoUmad)
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, attrErr(fs.umadDir(), "abi_version", s)
	}
	return v, nil
}

// ErrFormat reports a sysfs attribute whose content could not be parsed.
var ErrFormat = errors.New("umad: malformed sysfs attribute")

func attrErr(dir, name, val string) error {
	return fmt.Errorf("%w: %s/%s = %q", ErrFormat, dir, name, val)
}

// readAttr reads a sysfs attribute and trims the trailing newline and
// surrounding blanks.
func readAttr(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("umad: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readOptional reads an attribute that some kernels or drivers lack or
// fail to read; ok is false then.
func readOptional(dir, name string) (string, bool) {
	s, err := readAttr(dir, name)
	return s, err == nil
}

// ParseGUID parses a GUID in the sysfs form "xxxx:xxxx:xxxx:xxxx" (four
// groups of one to four hex digits, most significant first).
func ParseGUID(s string) (uint64, error) {
	var g uint64
	groups := 0
	for {
		i := strings.IndexByte(s, ':')
		part := s
		if i >= 0 {
			part = s[:i]
		}
		if len(part) == 0 || len(part) > 4 || groups == 4 {
			return 0, fmt.Errorf("%w: GUID %q", ErrFormat, s)
		}
		v, err := strconv.ParseUint(part, 16, 16)
		if err != nil || part[0] == '+' || part[0] == '-' {
			return 0, fmt.Errorf("%w: GUID %q", ErrFormat, s)
		}
		g = g<<16 | v
		groups++
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	if groups != 4 {
		return 0, fmt.Errorf("%w: GUID with %d groups", ErrFormat, groups)
	}
	return g, nil
}

// FormatGUID formats g the way sysfs does.
func FormatGUID(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// parseEnum parses "4: ACTIVE" into 4 and "ACTIVE". A bare number is
// accepted with an empty name.
func parseEnum(s string) (int, string, error) {
	num, name, _ := strings.Cut(s, ":")
	num = strings.TrimSpace(num)
	if num == "" || len(num) > 3 {
		return 0, "", fmt.Errorf("%w: %q", ErrFormat, s)
	}
	n := 0
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return 0, "", fmt.Errorf("%w: %q", ErrFormat, s)
		}
		n = n*10 + int(c-'0')
	}
	return n, strings.TrimSpace(name), nil
}

// parseRate parses the sysfs rate, e.g. "100 Gb/sec (4X EDR)" or
// "2.5 Gb/sec (1X SDR)".
func parseRate(s string) (Rate, error) {
	bad := func() (Rate, error) { return Rate{}, fmt.Errorf("%w: rate %q", ErrFormat, s) }
	num, rest, ok := strings.Cut(s, " Gb/sec")
	if !ok || num == "" {
		return bad()
	}
	ip, fp, _ := strings.Cut(num, ".")
	if ip == "" || len(ip) > 6 || len(fp) > 3 {
		return bad()
	}
	var r Rate
	for _, c := range []byte(ip) {
		if c < '0' || c > '9' {
			return bad()
		}
		r.Mbps = r.Mbps*10 + uint32(c-'0')
	}
	r.Mbps *= 1000
	scale := uint32(100)
	for _, c := range []byte(fp) {
		if c < '0' || c > '9' {
			return bad()
		}
		r.Mbps += uint32(c-'0') * scale
		scale /= 10
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return r, nil
	}
	if len(rest) < 2 || rest[0] != '(' || rest[len(rest)-1] != ')' {
		return bad()
	}
	w, speed, _ := strings.Cut(rest[1:len(rest)-1], " ")
	if len(w) < 2 || (w[len(w)-1] != 'X' && w[len(w)-1] != 'x') {
		return bad()
	}
	wn, err := strconv.ParseUint(w[:len(w)-1], 10, 8)
	if err != nil {
		return bad()
	}
	r.Width = uint8(wn)
	r.Speed = strings.TrimSpace(speed)
	return r, nil
}
