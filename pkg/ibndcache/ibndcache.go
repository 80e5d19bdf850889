// Package ibndcache reads and writes libibnetdisc's fabric cache, the
// binary file of ibnetdiscover --cache / --load-cache / --diff
// (infiniband-diags 44), so caches move between ibdiscover and
// ibnetdiscover in both directions.
//
// Layout (all integers little-endian, SMP attributes raw as received):
//
//	header  28 bytes: magic 0x8FE7832B, version 1, node count, port
//	        count, from-node GUID (8), max hops discovered
//	node    207 bytes + 9 per port key: smalid (2), smalmc, EnhancedPort0
//	        flag, SwitchInfo (64), NodeGUID (8), node type, NumPorts,
//	        NodeInfo (64), NodeDescription (64), key count K, then K keys
//	        of port GUID (8) + port number
//	port    95 bytes: port GUID (8), port number, external port number
//	        (chassis line ports, see package chassis),
//	        base LID (2), LMC, PortInfo (64), owning NodeGUID (8), remote
//	        flag, remote port GUID (8), remote port number
//
// Nodes are stored in libibnetdisc's all-nodes list order (reverse
// discovery order) and ports in its 137-bucket port hash order, each
// bucket newest first in the order libibnetdisc takes the PortInfo
// answers (model.Fabric.PortHashOrder). Loading restores the discovery
// order. The Mellanox ExtendedPortInfo and the
// directed routes are not stored (FDR10 links read back as QDR). A
// partial discovery's switch ports whose PortInfo was not read are
// written with an all-zero PortInfo and no remote port (see
// serializer.withPlaceholders).
package ibndcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/chassis"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Format constants.
const (
	Magic   = 0x8FE7832B
	Version = 1

	HeaderLen  = 28
	NodeLen    = 15 + 3*smp.DataSize // without port keys
	PortKeyLen = 9
	PortLen    = 31 + smp.DataSize

	// hashBuckets is libibnetdisc's hash table size (HTSZ).
	hashBuckets = 137
)

// Sentinel errors, wrapped in *FormatError.
var (
	ErrEmpty     = errors.New("empty file")
	ErrMagic     = errors.New("not an ibnetdiscover cache (bad magic)")
	ErrVersion   = errors.New("unsupported cache version")
	ErrTruncated = errors.New("truncated")
	ErrCorrupt   = errors.New("corrupted")
	ErrTooLarge  = errors.New("too large")
	ErrIsDir     = errors.New("is a directory")
	// ErrTooManyNodes: the header counts more nodes (or more ports than
	// that many nodes can have) than the reader's limit (LoadMax).
	ErrTooManyNodes = errors.New("too many nodes")
	// ErrTooManyPorts: Marshal cannot write a node with more than 255
	// ports with PortInfo (a 255-port switch has 256 with port 0): the
	// format counts a node's ports in one byte. ibnetdiscover 44 writes
	// the count modulo 256, a file no loader reads back.
	ErrTooManyPorts = errors.New("more ports than the cache format holds")
)

// FormatError is a cache file that cannot be loaded: it names the file,
// the byte offset and the problem.
type FormatError struct {
	File   string // "" when decoding bytes
	Offset int64
	Err    error  // one of the sentinel errors
	Detail string // what exactly is wrong
}

func (e *FormatError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	if e.Err != ErrMagic { // which says it is not an ibnetdiscover cache
		s += "ibnetdiscover cache: "
	}
	s += e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}

// Unwrap returns the sentinel error.
func (e *FormatError) Unwrap() error { return e.Err }

// hashGUID is libibnetdisc's HASHGUID(guid) % HTSZ.
func hashGUID(guid uint64) int {
	h := uint32(guid)*101 ^ uint32(guid>>32)*103
	return int(h % hashBuckets)
}

// smalid is libibnetdisc's node smalid/smalmc: port 0's for switches, 0
// for CAs and routers.
func smalid(n *model.Node) (uint16, uint8) {
	if n.IsSwitch() {
		return n.SMALID(), n.SMALMC()
	}
	return 0, 0
}

// serializer decides which ports get a record. A port is serialized when
// its PortInfo was read (libibnetdisc registers a port only then), it is
// the port its node holds under its number, its node is the fabric's node
// of that GUID, and no earlier node (discovery order) holds a serialized
// port with the same port GUID and number (the loaders look ports up by
// that key). Node port keys and remote-port references are written only
// for serialized ports, as rdma-core's fixed writer does (PR 1767), so
// every cache loads in ibnetdiscover 44 whatever the discovery missed:
// shell ports reached by NodeInfo whose PortInfo failed, links to them,
// and twins of a duplicated GUID are left out (a switch's unread ports
// get placeholder records: withPlaceholders).
type serializer struct {
	f     *model.Fabric
	owner map[portKey]*model.Node
}

func newSerializer(f *model.Fabric) *serializer {
	s := &serializer{f: f, owner: make(map[portKey]*model.Node)}
	for _, n := range f.Nodes {
		if f.NodeByGUID(n.GUID()) != n {
			continue
		}
		for i, p := range n.Ports {
			if p == nil || !p.HasInfo || p.Node != n || int(p.Num) != i {
				continue
			}
			k := portKey{p.GUID, p.Num}
			if _, taken := s.owner[k]; !taken {
				s.owner[k] = n
			}
		}
	}
	return s
}

// serialized reports whether p gets a port record.
func (s *serializer) serialized(p *model.PhysPort) bool {
	if p == nil || !p.HasInfo || p.Node == nil || p.Node.Port(int(p.Num)) != p {
		return false
	}
	return s.owner[portKey{p.GUID, p.Num}] == p.Node && s.f.NodeByGUID(p.Node.GUID()) == p.Node
}

// ports returns the serialized ports of n by port number.
func (s *serializer) ports(n *model.Node) []*model.PhysPort {
	var out []*model.PhysPort
	for _, p := range n.Ports {
		if s.serialized(p) {
			out = append(out, p)
		}
	}
	return out
}

// withPlaceholders adds to the serialized ports of a switch a record for
// each of its ports 1..NumPorts whose PortInfo was not read (a partial
// discovery): the port GUID and number, the switch's LID and LMC, an
// all-zero PortInfo and no remote port. libibnetdisc holds every port of
// a switch it discovered completely, and ibnetdiscover 44's --diff prints
// a port that one cache holds without a remote port and the other does
// not hold at all as a link, following its NULL remote port (a segfault).
// With every switch port present on both sides, --diff compares them;
// complete discoveries have no such ports, so their bytes do not change.
func (s *serializer) withPlaceholders(n *model.Node, ports []*model.PhysPort) []*model.PhysPort {
	if !n.IsSwitch() || s.f.NodeByGUID(n.GUID()) != n {
		return ports
	}
	have := make([]bool, int(n.Info.NumPorts)+1)
	missing := int(n.Info.NumPorts)
	for _, p := range ports {
		if p.Num > 0 && int(p.Num) < len(have) && !have[p.Num] {
			have[p.Num] = true
			missing--
		}
	}
	if missing == 0 {
		return ports
	}
	out := make([]*model.PhysPort, 0, n.Info.NumPorts+1)
	j := 0
	for num := 0; num <= int(n.Info.NumPorts); num++ {
		for j < len(ports) && int(ports[j].Num) <= num {
			out = append(out, ports[j])
			j++
		}
		if num == 0 || have[num] {
			continue
		}
		k := portKey{n.Info.PortGUID, uint8(num)}
		if _, taken := s.owner[k]; taken {
			continue
		}
		s.owner[k] = n
		out = append(out, &model.PhysPort{Node: n, Num: uint8(num), GUID: k.guid})
	}
	return append(out, ports[j:]...)
}

// Marshal encodes f as an ibnetdiscover cache. Ports are written only as
// far as they are known (see serializer): the result always loads, in
// Unmarshal and in ibnetdiscover 44, also for a partial discovery.
func Marshal(f *model.Fabric) ([]byte, error) {
	if f.From == nil {
		return nil, errors.New("ibnetdiscover cache: fabric has no start node")
	}
	s := newSerializer(f)
	perNode := make([][]*model.PhysPort, len(f.Nodes))
	size := HeaderLen
	nports := 0
	for i, n := range f.Nodes {
		ports := s.withPlaceholders(n, s.ports(n))
		if len(ports) > 255 {
			return nil, fmt.Errorf("ibnetdiscover cache: %w: node 0x%016x has %d ports with PortInfo (port 0 included), the format counts at most 255 (a switch of at most 254 ports)", ErrTooManyPorts, n.GUID(), len(ports))
		}
		perNode[i] = ports
		size += NodeLen + PortKeyLen*len(ports)
		nports += len(ports)
	}
	size += PortLen * nports
	b := make([]byte, 0, size)
	le := binary.LittleEndian
	b = le.AppendUint32(b, Magic)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint32(b, uint32(len(f.Nodes)))
	b = le.AppendUint32(b, uint32(nports))
	b = le.AppendUint64(b, f.From.GUID())
	b = le.AppendUint32(b, uint32(f.MaxHops))

	var buckets [hashBuckets][]*model.PhysPort
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		n := f.Nodes[i]
		lid, lmc := smalid(n)
		b = le.AppendUint16(b, lid)
		b = append(b, lmc)
		if n.IsSwitch() && n.SwitchInfo.EnhancedPort0 {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		if n.IsSwitch() {
			si := n.RawSwitchInfo()
			b = append(b, si[:]...)
		} else {
			b = append(b, make([]byte, smp.DataSize)...)
		}
		b = le.AppendUint64(b, n.GUID())
		b = append(b, n.Type(), n.Info.NumPorts)
		ni := n.RawInfo()
		b = append(b, ni[:]...)
		b = append(b, n.Desc[:]...)
		ports := perNode[i]
		b = append(b, uint8(len(ports)))
		for _, p := range ports {
			b = le.AppendUint64(b, p.GUID)
			b = append(b, p.Num)
		}
	}
	// Ports enter the hash in the order libibnetdisc takes their PortInfo
	// answers (f.PortHashOrder, from discovery's replay of ibnetdiscover or
	// from a loaded cache); ports it does not list follow in discovery
	// order (node by node, port numbers ascending). Each bucket lists the
	// newest first.
	var listed map[*model.PhysPort]bool
	if len(f.PortHashOrder) > 0 {
		listed = make(map[*model.PhysPort]bool, len(f.PortHashOrder))
		for _, p := range f.PortHashOrder {
			if listed[p] || !s.serialized(p) {
				continue
			}
			listed[p] = true
			h := hashGUID(p.GUID)
			buckets[h] = append(buckets[h], p)
		}
	}
	for _, ports := range perNode {
		for _, p := range ports {
			if listed[p] {
				continue
			}
			h := hashGUID(p.GUID)
			buckets[h] = append(buckets[h], p)
		}
	}
	// libibnetdisc groups chassis at the end of every discovery: the
	// ports of Voltaire and Mellanox IS4 chassis lines carry their
	// external port numbers.
	ext := func(*model.PhysPort) int { return 0 }
	if chassis.HasExtPorts(f) {
		ext = chassis.Group(f).ExtPort
	}
	for _, bucket := range buckets {
		for i := len(bucket) - 1; i >= 0; i-- {
			p := bucket[i]
			b = le.AppendUint64(b, p.GUID)
			b = append(b, p.Num, uint8(ext(p)))
			b = le.AppendUint16(b, p.BaseLID())
			b = append(b, p.LMC())
			pi := p.RawInfo()
			b = append(b, pi[:]...)
			b = le.AppendUint64(b, p.Node.GUID())
			if r := p.Remote; r != nil && s.serialized(r) {
				b = append(b, 1)
				b = le.AppendUint64(b, r.GUID)
				b = append(b, r.Num)
			} else {
				b = append(b, make([]byte, 10)...)
			}
		}
	}
	return b, nil
}

// Write writes f as an ibnetdiscover cache to w.
func Write(w io.Writer, f *model.Fabric) error {
	b, err := Marshal(f)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

type portKey struct {
	guid uint64
	num  uint8
}

type portRec struct {
	off    int64
	key    portKey
	lid    uint16
	lmc    uint8
	info   []byte
	node   uint64
	remote bool
	rkey   portKey
	phys   *model.PhysPort
	used   bool
}

type nodeRec struct {
	off  int64
	node *model.Node
	keys []portKey
}

// Unmarshal decodes a cache into a fabric whose Nodes are in discovery
// order. Like rdma-core since PR 1767 it loads incomplete caches (written
// by ibnetdiscover 44 after PortInfo timeouts) tolerantly: it skips port
// keys without a port record, port numbers beyond NumPorts, port records
// no node claims and links to ports that were not attached. Every length,
// count and port number is checked; anything else inconsistent is an
// error.
func Unmarshal(b []byte) (*model.Fabric, error) {
	f, _, err := Decode(b)
	return f, err
}

// Skipped counts what loading an incomplete cache left out.
type Skipped struct {
	Keys    int // node port keys without a port record, or beyond NumPorts
	Links   int // links to ports that were not loaded
	Records int // port records no node claims
}

// Any reports whether anything was skipped.
func (s Skipped) Any() bool { return s != Skipped{} }

func (s Skipped) String() string {
	var parts []string
	for _, c := range []struct {
		n         int
		one, many string
	}{
		{s.Keys, "port reference without a record", "port references without a record"},
		{s.Links, "link to a missing port", "links to missing ports"},
		{s.Records, "port record of no node", "port records of no node"},
	} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 "+c.one)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.many))
		}
	}
	if len(parts) == 0 {
		return "nothing skipped"
	}
	return "skipped " + strings.Join(parts, ", ")
}

// Decode is Unmarshal that also says what it skipped.
func Decode(b []byte) (*model.Fabric, Skipped, error) {
	var skipped Skipped
	f, err := decode(b, &skipped)
	return f, skipped, err
}

func decode(b []byte, skipped *Skipped) (*model.Fabric, error) {
	ferr := func(off int, err error, format string, a ...any) error {
		return &FormatError{Offset: int64(off), Err: err, Detail: fmt.Sprintf(format, a...)}
	}
	if len(b) == 0 {
		return nil, &FormatError{Offset: -1, Err: ErrEmpty}
	}
	le := binary.LittleEndian
	var magic [4]byte
	le.PutUint32(magic[:], Magic)
	if len(b) < 4 && bytes.Equal(b, magic[:len(b)]) {
		return nil, ferr(len(b), ErrTruncated, "header is %d bytes, want %d", len(b), HeaderLen)
	}
	if len(b) < 4 {
		return nil, ferr(0, ErrMagic, "%d-byte file", len(b))
	}
	if m := le.Uint32(b); m != Magic {
		return nil, ferr(0, ErrMagic, "magic 0x%08x, want 0x%08x", m, uint32(Magic))
	}
	if len(b) < HeaderLen {
		return nil, ferr(len(b), ErrTruncated, "header is %d bytes, want %d", len(b), HeaderLen)
	}
	if v := le.Uint32(b[4:]); v != Version {
		return nil, ferr(4, ErrVersion, "version %d, want %d", v, Version)
	}
	nodeCount := le.Uint32(b[8:])
	portCount := le.Uint32(b[12:])
	fromGUID := le.Uint64(b[16:])
	maxHops := le.Uint32(b[24:])
	if min := uint64(HeaderLen) + uint64(nodeCount)*NodeLen + uint64(portCount)*PortLen; min > uint64(len(b)) {
		return nil, ferr(len(b), ErrTruncated, "%d nodes and %d ports need at least %d bytes, file has %d", nodeCount, portCount, min, len(b))
	}
	off := HeaderLen
	nodes := make([]nodeRec, 0, nodeCount)
	byGUID := make(map[uint64]*nodeRec, nodeCount)
	for i := uint32(0); i < nodeCount; i++ {
		if len(b)-off < NodeLen {
			return nil, ferr(len(b), ErrTruncated, "node record %d of %d cut short", i+1, nodeCount)
		}
		r := b[off:]
		n := &model.Node{}
		guid := le.Uint64(r[68:])
		typ, numPorts := r[76], r[77]
		if err := n.Info.UnmarshalBinary(r[78 : 78+smp.DataSize]); err != nil {
			return nil, ferr(off+78, ErrCorrupt, "node 0x%016x NodeInfo: %v", guid, err)
		}
		n.Info.NodeGUID, n.Info.NodeType, n.Info.NumPorts = guid, typ, numPorts
		n.SetRawInfo(r[78 : 78+smp.DataSize]) // after the record's own fields: the bytes are written back as read
		copy(n.Desc[:], r[142:206])
		if typ == smp.NodeSwitch {
			if err := n.SwitchInfo.UnmarshalBinary(r[4 : 4+smp.DataSize]); err != nil {
				return nil, ferr(off+4, ErrCorrupt, "node 0x%016x SwitchInfo: %v", guid, err)
			}
			n.HasSwitchInfo = true
			n.SwitchInfo.EnhancedPort0 = r[3] != 0
			n.SetRawSwitchInfo(r[4 : 4+smp.DataSize])
		}
		n.Ports = make([]*model.PhysPort, int(numPorts)+1)
		k := int(r[206])
		if len(b)-off < NodeLen+PortKeyLen*k {
			return nil, ferr(len(b), ErrTruncated, "port keys of node 0x%016x cut short", guid)
		}
		rec := nodeRec{off: int64(off), node: n}
		for j := 0; j < k; j++ {
			kb := r[NodeLen+PortKeyLen*j:]
			rec.keys = append(rec.keys, portKey{le.Uint64(kb), kb[8]})
		}
		if _, dup := byGUID[guid]; dup {
			return nil, ferr(off, ErrCorrupt, "node 0x%016x stored twice", guid)
		}
		nodes = append(nodes, rec)
		byGUID[guid] = &nodes[len(nodes)-1]
		off += NodeLen + PortKeyLen*k
	}
	if len(b)-off < int(portCount)*PortLen {
		return nil, ferr(len(b), ErrTruncated, "%d port records need %d bytes, %d left", portCount, int(portCount)*PortLen, len(b)-off)
	}
	ports := make([]portRec, portCount)
	byKey := make(map[portKey]*portRec, portCount)
	for i := range ports {
		r := b[off:]
		p := &ports[i]
		p.off = int64(off)
		p.key = portKey{le.Uint64(r), r[8]}
		p.lid = le.Uint16(r[10:])
		p.lmc = r[12]
		p.info = r[13 : 13+smp.DataSize]
		p.node = le.Uint64(r[77:])
		p.remote = r[85] != 0
		p.rkey = portKey{le.Uint64(r[86:]), r[94]}
		byKey[p.key] = p // the last record of a key wins, as in the hash
		off += PortLen
	}
	from, ok := byGUID[fromGUID]
	if !ok {
		return nil, ferr(16, ErrCorrupt, "start node 0x%016x is not in the file", fromGUID)
	}

	f := model.NewFabric()
	// File order is the all-nodes list (reverse discovery).
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := f.AppendNode(nodes[i].node); err != nil {
			return nil, ferr(int(nodes[i].off), ErrCorrupt, "%v", err)
		}
	}
	f.From = from.node
	f.FromPort = from.node.Info.LocalPortNum
	f.MaxHops = int(maxHops)

	// Attach ports to their nodes through the nodes' keys. A key without
	// a record (caches written by ibnetdiscover 44 after PortInfo
	// timeouts) or with a port number beyond NumPorts is skipped, as
	// rdma-core does since PR 1767; a port claimed twice or by a node
	// other than its owner is corrupt.
	for i := range nodes {
		nr := &nodes[i]
		for _, k := range nr.keys {
			p := byKey[k]
			if p == nil || int(k.num) > nr.node.NumPorts() {
				skipped.Keys++
				continue
			}
			if p.used {
				return nil, ferr(int(nr.off), ErrCorrupt, "port 0x%016x[%d] claimed by two nodes", k.guid, k.num)
			}
			owner, ok := byGUID[p.node]
			if !ok {
				return nil, ferr(int(p.off+77), ErrCorrupt, "port 0x%016x[%d] belongs to node 0x%016x, which is not in the file", p.key.guid, p.key.num, p.node)
			}
			if owner.node != nr.node {
				return nil, ferr(int(nr.off), ErrCorrupt, "node 0x%016x lists port 0x%016x[%d] of node 0x%016x", nr.node.GUID(), k.guid, k.num, p.node)
			}
			pp := &model.PhysPort{Node: nr.node, Num: k.num, GUID: k.guid, Healthy: true}
			if err := pp.SetInfo(p.info); err != nil {
				return nil, ferr(int(p.off+13), ErrCorrupt, "port 0x%016x[%d] PortInfo: %v", k.guid, k.num, err)
			}
			p.phys, p.used = pp, true
			nr.node.Ports[k.num] = pp
		}
	}
	// Link the ports that were attached. Port records no node claims are
	// ignored, and so is a link to a port that has no attached record.
	for i := range ports {
		p := &ports[i]
		if !p.used {
			if byKey[p.key] == p {
				skipped.Records++
			}
			continue
		}
		if !p.remote {
			continue
		}
		if r := byKey[p.rkey]; r != nil && r.used {
			p.phys.Remote = r.phys
		} else {
			skipped.Links++
		}
	}
	// The file lists each hash bucket newest first: the records read
	// backwards are in an insertion order that writes the file again.
	f.PortHashOrder = make([]*model.PhysPort, 0, len(ports))
	for i := len(ports) - 1; i >= 0; i-- {
		if ports[i].used {
			f.PortHashOrder = append(f.PortHashOrder, ports[i].phys)
		}
	}
	// Register logical ports (GUIDs and LIDs) in discovery order.
	for _, n := range f.Nodes {
		for _, pp := range n.Ports {
			if pp != nil {
				f.RegisterPort(pp) // duplicates are the fabric's, not the file's, problem
			}
		}
	}
	return f, nil
}

// MaxSize is the largest cache Read and Load accept: 1 GiB, about three
// times the cache of a 1,048,576-node fabric (discover.DefaultMaxNodes).
// Reading stops at the size the header's counts allow, so a device or
// FIFO that never ends (/dev/zero) is never read past it.
const MaxSize = 1 << 30

// Read decodes a cache from r, reading no more than the header's node and
// port counts can need (and never more than MaxSize bytes); whatever
// follows is ignored, as ibnetdiscover does.
func Read(r io.Reader) (*model.Fabric, error) {
	f, _, err := read(r, MaxSize)
	return f, err
}

func read(r io.Reader, max int64) (*model.Fabric, Skipped, error) {
	return readMax(r, max, 0)
}

// readMax is read refusing a header with more than maxNodes nodes (0: no
// limit), before anything else is read.
func readMax(r io.Reader, max int64, maxNodes int) (*model.Fabric, Skipped, error) {
	var skipped Skipped
	f, err := readInto(r, max, maxNodes, &skipped)
	return f, skipped, err
}

func readInto(r io.Reader, max int64, maxNodes int, skipped *Skipped) (*model.Fabric, error) {
	hdr := make([]byte, HeaderLen)
	n, err := io.ReadFull(r, hdr)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if n < HeaderLen {
		return decode(hdr[:n], skipped) // empty, bad magic or truncated
	}
	if _, err := Unmarshal(hdr); err != nil && !errors.Is(err, ErrTruncated) {
		return nil, err // bad magic or version
	}
	le := binary.LittleEndian
	nodes, ports := uint64(le.Uint32(hdr[8:])), uint64(le.Uint32(hdr[12:]))
	if maxNodes > 0 && nodes > uint64(maxNodes) {
		return nil, &FormatError{Offset: 8, Err: ErrTooManyNodes,
			Detail: fmt.Sprintf("the header counts %d nodes, more than the limit of %d", nodes, maxNodes)}
	}
	if maxNodes > 0 && ports > uint64(maxNodes)*256 {
		return nil, &FormatError{Offset: 12, Err: ErrTooManyNodes,
			Detail: fmt.Sprintf("the header counts %d ports, more than %d nodes can have", ports, maxNodes)}
	}
	least := HeaderLen + nodes*NodeLen + ports*PortLen
	most := least + nodes*255*PortKeyLen
	if least > uint64(max) {
		return nil, &FormatError{Offset: 8, Err: ErrTooLarge,
			Detail: fmt.Sprintf("%d nodes and %d ports need at least %d bytes, more than the %d-byte limit", nodes, ports, least, max)}
	}
	limit := min(most, uint64(max)+1) // one byte past max tells "too large"
	var buf bytes.Buffer
	buf.Write(hdr)
	if _, err := io.Copy(&buf, io.LimitReader(r, int64(limit)-HeaderLen)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, &FormatError{Offset: max, Err: ErrTooLarge, Detail: fmt.Sprintf("larger than the %d-byte limit", max)}
	}
	return decode(buf.Bytes(), skipped)
}

// Load reads the cache in file (see Read); errors name the file.
func Load(file string) (*model.Fabric, error) {
	f, _, err := LoadSkipped(file)
	return f, err
}

// LoadSkipped is Load that also says what it skipped of an incomplete cache.
func LoadSkipped(file string) (*model.Fabric, Skipped, error) { return LoadMax(file, 0) }

// LoadMax is LoadSkipped refusing, with ErrTooManyNodes and before the
// rest is read, a cache whose header counts more than maxNodes nodes
// (0: no limit beyond MaxSize), so memory is bounded by the node limit.
func LoadMax(file string, maxNodes int) (*model.Fabric, Skipped, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, Skipped{}, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.IsDir() {
		return nil, Skipped{}, &FormatError{File: file, Offset: -1, Err: ErrIsDir}
	}
	f, skipped, err := readMax(fh, MaxSize, maxNodes)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.File = file
		} else {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, Skipped{}, err
	}
	return f, skipped, nil
}
