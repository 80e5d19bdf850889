package netfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MaxIncludeDepth is how deeply include lines may nest (ibsim's limit).
const MaxIncludeDepth = 9

// maxLine is ibsim's line buffer: longer lines are read in pieces.
const maxLine = 255

// maxIncludes bounds the number of include lines followed in one parse,
// so that a file including itself many times cannot blow up.
const maxIncludes = 256

// DefaultMaxBytes is the most a net file and its includes may hold in
// all (64 MiB, several times the ibnetdiscover topology of a 64k-node
// fabric), unless ParseOptions.MaxBytes says otherwise. A larger input,
// such as /dev/zero, is a ParseError wrapping ErrTooLarge.
const DefaultMaxBytes = 64 << 20

// Errors wrapped by a ParseError when an input exceeds a limit.
var (
	ErrTooLarge     = errors.New("too large")
	ErrTooManyNodes = errors.New("too many nodes")
)

// ErrNoNodes is wrapped by a ParseError when ParseOptions.RequireNodes is
// set and the input declares no node: ibsim starts on such a file and
// serves nothing, so a tool that wants a fabric refuses it.
var ErrNoNodes = errors.New("no nodes")

// Parse parses a net file held in memory. name is used in errors; include
// lines fail because there is nothing to include from.
func Parse(name string, data []byte) (*Fabric, error) {
	p := newParser(func(string, int64) ([]byte, error) { return nil, fs.ErrNotExist }, path.Join)
	return p.run(name, data)
}

// ParseFile parses the net file at path, following includes relative to
// the including file.
func ParseFile(name string) (*Fabric, error) {
	return ParseFileOptions(name, ParseOptions{})
}

// ParseOptions change what a parse accepts.
type ParseOptions struct {
	// AllowDuplicateGUIDs lets two nodes have the same node GUID, as
	// ibsim's -I does (by default that is an error, as in ibsim).
	AllowDuplicateGUIDs bool
	// MaxBytes bounds the bytes of the file and all its includes
	// (0: DefaultMaxBytes).
	MaxBytes int64
	// MaxNodes, when positive, stops the parse at the node beyond it
	// (a ParseError wrapping ErrTooManyNodes), before it is built.
	MaxNodes int
	// RequireNodes makes a file that declares no node (an empty file,
	// /etc/passwd, a binary) a ParseError wrapping ErrNoNodes that says
	// what the file held instead.
	RequireNodes bool
}

// ParseFileOptions is ParseFile with options.
func ParseFileOptions(name string, o ParseOptions) (*Fabric, error) {
	p := newParser(readFile, filepath.Join)
	p.dir = filepath.Dir
	p.opt = o
	data, err := p.read(name)
	if err != nil {
		return nil, fileError(name, err)
	}
	f, err := p.run(name, data)
	if err == nil && o.RequireNodes && len(f.Nodes) == 0 {
		regular := true
		if st, err := os.Stat(name); err == nil && !st.Mode().IsRegular() {
			regular = false
		}
		return nil, &ParseError{File: name, Msg: noNodesMsg(data, regular), Err: ErrNoNodes}
	}
	return f, err
}

// noNodesMsg says why a file gave no nodes, from its content (data) when
// it is a regular file.
func noNodesMsg(data []byte, regular bool) string {
	const want = " (want an ibsim net file or an ibnetdiscover topology file)"
	if len(data) > 1<<20 {
		data = data[:1<<20] // enough to tell
	}
	switch {
	case !regular:
		// a FIFO or device: what it gave once says little of the file
		return "no nodes" + want
	case len(data) == 0:
		return "empty file: no nodes"
	case bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data):
		return "not a text file: no nodes" + want
	}
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			return "no node lines (Switch, Hca, Ca, Rt): not an ibsim net file or ibnetdiscover topology file"
		}
	}
	return "only comments and blank lines: no nodes"
}

// ParseFS parses the net file name in fsys, following includes relative
// to the including file inside fsys.
func ParseFS(fsys fs.FS, name string) (*Fabric, error) {
	p := newParser(func(n string, limit int64) ([]byte, error) {
		f, err := fsys.Open(n)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f, limit)
	}, path.Join)
	data, err := p.read(name)
	if err != nil {
		return nil, fileError(name, err)
	}
	return p.run(name, data)
}

// fileError is the ParseError of a file that cannot be read.
func fileError(name string, err error) *ParseError {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &ParseError{File: name, Msg: err.Error(), Err: err}
}

// readFile reads at most limit bytes of the file name (an error wrapping
// ErrTooLarge when it holds more); a directory is an error.
func readFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, errors.New("is a directory")
	} else if err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, ErrTooLarge // without reading it
	}
	return readLimited(f, limit)
}

// readLimited reads r to its end, at most limit bytes (an error wrapping
// ErrTooLarge when it holds more). It reads into chunks (4 KiB, doubling
// to 1 MiB) joined once at the end: io.ReadAll's one growing buffer
// allocates and copies about twice what it returns, which for a pipe or
// a device holding more than the limit (/dev/zero) was twice the limit
// (64 MiB) allocated and copied for nothing.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	const first, most = 4 << 10, 1 << 20
	var chunks [][]byte
	var n int64
	size := int64(first)
	for {
		b := make([]byte, min(size, limit+1-n))
		m, err := io.ReadFull(r, b)
		n += int64(m)
		chunks = append(chunks, b[:m])
		if n > limit {
			return nil, ErrTooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, most)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	data := make([]byte, 0, n)
	for _, c := range chunks {
		data = append(data, c...)
	}
	return data, nil
}

// tooLarge is the error of an input beyond the byte limit.
type tooLarge struct{ limit int64 }

func (e tooLarge) Error() string {
	size := fmt.Sprintf("%d bytes", e.limit)
	if e.limit >= 1<<20 && e.limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", e.limit>>20)
	}
	return "more than " + size + " (the limit for a net file and its includes)"
}

func (tooLarge) Is(target error) bool { return target == ErrTooLarge }

// read reads a file of the parse, counting it against MaxBytes.
func (p *parser) read(name string) ([]byte, error) {
	limit := p.opt.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	data, err := p.open(name, limit-p.bytes)
	if errors.Is(err, ErrTooLarge) {
		err = tooLarge{limit}
	}
	p.bytes += int64(len(data))
	return data, err
}

// source reads one file the way ibsim's readline does.
type source struct {
	name string
	data []byte
	off  int
	line int // physical line of the last piece returned
	next int // physical line of the next piece
}

func (s *source) readline() (string, bool) {
	if s.off >= len(s.data) {
		return "", false
	}
	s.line = s.next
	rest := s.data[s.off:]
	n := len(rest)
	if n > maxLine {
		n = maxLine
	}
	var piece []byte
	if i := indexByte(rest[:n], '\n'); i >= 0 {
		piece = rest[:i]
		s.off += i + 1
		s.next++
	} else {
		piece = rest[:n]
		s.off += n
	}
	if i := indexByte(piece, 0); i >= 0 {
		piece = piece[:i]
	}
	return string(piece), true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

type pending struct {
	node, port int32
	remote     string // expanded remote node id ("" for alias refs)
	alias      string // expanded alias name when linking to "@alias"
	rport      int
	pos        Pos
}

type aliasTarget struct {
	node int32
	port uint8
}

type parser struct {
	opt      ParseOptions
	f        *Fabric
	open     func(name string, limit int64) ([]byte, error)
	bytes    int64 // read so far, includes counted
	join     func(...string) string
	dir      func(string) string
	includes int
	depth    int
	abs      [4]uint64
	guids    [4]uint64
	prefix   string
	vendid   uint32
	devid    uint16
	sysimg   uint64
	width    uint8
	speed    uint8
	ext      uint8
	aliases  map[string]aliasTarget
	pend     []pending
	byGUID   map[uint64]int32
	backIdx  map[ref]ref
}

func newParser(open func(string, int64) ([]byte, error), join func(...string) string) *parser {
	p := &parser{
		dir:     path.Dir,
		f:       &Fabric{index: map[string]int32{}},
		open:    open,
		join:    join,
		abs:     [4]uint64{^uint64(0), 0x100000, 0x200000, 0},
		width:   DefaultWidth,
		speed:   DefaultSpeed,
		ext:     DefaultExtSpeed,
		aliases: map[string]aliasTarget{},
		byGUID:  map[uint64]int32{},
	}
	p.guids = p.abs
	return p
}

func (p *parser) run(name string, data []byte) (*Fabric, error) {
	if err := p.file(name, data); err != nil {
		return nil, err
	}
	if err := p.resolve(); err != nil {
		return nil, err
	}
	return p.f, nil
}

func errAt(s *source, format string, a ...any) *ParseError {
	return &ParseError{File: s.name, Line: s.line, Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) file(name string, data []byte) error {
	s := &source{name: name, data: data, next: 1}
	for {
		line, ok := s.readline()
		if !ok {
			return nil
		}
		var err error
		switch {
		case strings.HasPrefix(line, "Switch"):
			err = p.node(s, line, Switch, 6)
		case strings.HasPrefix(line, "Hca"), strings.HasPrefix(line, "Ca"):
			err = p.node(s, line, CA, 3)
		case strings.HasPrefix(line, "Rt"):
			err = p.node(s, line, Router, 3)
		case strings.HasPrefix(line, "switchguid"):
			err = p.guidbase(s, line, Switch)
		case strings.HasPrefix(line, "hcaguids"), strings.HasPrefix(line, "caguid"):
			err = p.guidbase(s, line, CA)
		case strings.HasPrefix(line, "rtguid"):
			err = p.guidbase(s, line, Router)
		case strings.HasPrefix(line, "vendid"):
			var v string
			if v, err = assignment(s, line); err == nil {
				p.vendid = uint32(sint(v)) & 0xffffff
			}
		case strings.HasPrefix(line, "devid"):
			var v string
			if v, err = assignment(s, line); err == nil {
				p.devid = uint16(sint(v))
			}
		case strings.HasPrefix(line, "sysimgguid"):
			var v string
			if v, err = assignment(s, line); err == nil {
				p.sysimg, _ = strtoul(v)
			}
		case strings.HasPrefix(line, "width"):
			err = p.mask(s, line, &p.width, 1, 31, "enabled link width")
		case strings.HasPrefix(line, "speed"):
			err = p.mask(s, line, &p.speed, 1, 7, "enabled link speed")
		case strings.HasPrefix(line, "extspeed"):
			err = p.mask(s, line, &p.ext, 0, 7, "enabled link speed extended")
		case strings.HasPrefix(line, "module"):
			err = p.module(s, line)
		case strings.HasPrefix(line, "include"):
			err = p.include(s, line)
		case strings.HasPrefix(line, "pdebug"):
			_, err = assignment(s, line)
		case strings.HasPrefix(line, "do"):
			err = p.command(s, line[2:])
		}
		if err != nil {
			return err
		}
	}
}

func assignment(s *source, line string) (string, error) {
	i := strings.IndexByte(line, '=')
	if i < 0 {
		return "", errAt(s, "bad assignment: missing '=' sign")
	}
	return line[i+1:], nil
}

func (p *parser) mask(s *source, line string, dst *uint8, lo, hi int, what string) error {
	v, err := assignment(s, line)
	if err != nil {
		return err
	}
	n := sint(v)
	if n < lo || n > hi {
		return errAt(s, "invalid %s %d (want %d..%d)", what, n, lo, hi)
	}
	*dst = uint8(n)
	return nil
}

func (p *parser) guidbase(s *source, line string, t NodeType) error {
	i := strings.IndexAny(line, "=")
	if i < 0 {
		i = strings.IndexByte(line, '+')
	}
	if i < 0 {
		return errAt(s, "bad assignment: missing '=|+' sign")
	}
	v, _ := strtoul(line[i+1:])
	if line[i] == '=' {
		p.abs[t] = v
		v = 0
	}
	p.guids[t] = p.abs[t] + v
	return nil
}

func (p *parser) module(s *source, line string) error {
	v, err := assignment(s, line)
	if err != nil {
		return err
	}
	id, _, ok := quoted(v)
	if !ok {
		return errAt(s, "can't find valid id in <%s>", v)
	}
	if len(id) > 20 {
		return errAt(s, "prefix %s too long!", id)
	}
	p.prefix = id
	return nil
}

func (p *parser) include(s *source, line string) error {
	name, _, ok := quoted(line)
	if !ok {
		return errAt(s, "bad include file name")
	}
	if p.depth+1 >= MaxIncludeDepth {
		return errAt(s, "include %q: nested deeper than %d", name, MaxIncludeDepth)
	}
	p.includes++
	if p.includes > maxIncludes {
		return errAt(s, "include %q: more than %d includes", name, maxIncludes)
	}
	full := name
	if !strings.HasPrefix(name, "/") {
		full = p.join(p.dir(s.name), name)
	}
	data, err := p.read(full)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		e := errAt(s, "can't open net configuration file %q: %v", name, err)
		e.Err = err
		return e
	}
	p.depth++
	err = p.file(full, data)
	p.depth--
	return err
}

// quoted returns the text between the first two double quotes of s and
// what follows the closing quote.
func quoted(s string) (string, string, bool) {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return "", s, false
	}
	j := strings.IndexByte(s[i+1:], '"')
	if j < 0 {
		return "", s, false
	}
	return s[i+1 : i+1+j], s[i+2+j:], true
}

// expand applies the module prefix to a node id as ibsim's expand_name does.
func (p *parser) expand(id string) string {
	if p.prefix != "" && !strings.Contains(id, "#") {
		id = p.prefix + "#" + id
	}
	if len(id) > 64 {
		id = id[:64]
	}
	return id
}

func (p *parser) node(s *source, line string, t NodeType, kw int) error {
	rest := line[min(kw, len(line)):]
	for len(rest) > 0 && !isDigit(rest[0]) {
		rest = rest[1:]
	}
	nports, _ := strtoul(rest)
	if nports == 0 {
		return errAt(s, "bad %s header: missing port count", t)
	}
	if nports > 255 {
		// (ibsim loads more, but NodeInfo's 8-bit NumPorts then says 0)
		return errAt(s, "bad %s header: %d ports (max 255)", t, nports)
	}
	base, after, ok := quoted(line)
	if !ok {
		return errAt(s, "can't find valid id in <%s>", line)
	}
	if strings.ContainsAny(base, "#@") {
		return errAt(s, "bad nodeid %q: '#' & '@' characters are reserved", base)
	}
	id := base
	if p.prefix != "" {
		id = p.prefix + "#" + base
	}
	if len(id) > 64 {
		id = id[:64]
	}
	desc, tail, hasTail := nodeDesc(after)
	if _, dup := p.f.index[id]; dup {
		return errAt(s, "node id %s already exists", id)
	}
	guid := p.guids[t]
	if other, dup := p.byGUID[guid]; dup && !p.opt.AllowDuplicateGUIDs {
		return errAt(s, "node %s guid %x already exists (%q)", t, guid, p.f.Nodes[other].ID)
	}
	n := Node{
		Type:         t,
		ID:           id,
		Desc:         desc,
		NumPorts:     int(nports),
		GUID:         guid,
		SysImageGUID: guid,
		VendorID:     p.vendid,
		DeviceID:     p.devid,
		Pos:          Pos{s.name, s.line},
	}
	if p.sysimg != 0 {
		n.SysImageGUID = p.sysimg
	}
	if t == Switch {
		p.guids[t]++
	} else {
		p.guids[t] += nports + 1
	}
	p.vendid, p.sysimg = 0, 0
	n.Ports = make([]Port, nports+1)
	for i := range n.Ports {
		n.Ports[i] = Port{Remote: -1, WidthEnabled: p.width, SpeedEnabled: p.speed, ExtSpeedEnabled: p.ext}
	}
	idx := int32(len(p.f.Nodes))
	if t == Switch && hasTail {
		if strings.Contains(tail, "enhanced port 0") {
			n.EnhancedPort0 = 1
		} else if strings.Contains(tail, "base port 0") {
			n.EnhancedPort0 = -1
		}
	}
	if p.opt.MaxNodes > 0 && len(p.f.Nodes) >= p.opt.MaxNodes {
		e := errAt(s, "more than %d nodes (the node limit)", p.opt.MaxNodes)
		e.Err = ErrTooManyNodes
		return e
	}
	p.f.Nodes = append(p.f.Nodes, n)
	p.f.index[id] = idx
	p.byGUID[guid] = idx
	if err := p.ports(s, idx); err != nil {
		return err
	}
	if t == Switch && hasTail {
		pp := &p.f.Nodes[idx].Ports[0]
		lidLMC(tail, pp)
	}
	return nil
}

// nodeDesc extracts the description after a header's node id the way
// ibsim's parse_node_desc does, and returns what follows it.
func nodeDesc(s string) (desc, tail string, hasTail bool) {
	i := strings.IndexByte(s, '#')
	if i < 0 {
		return "", s, true
	}
	s = s[i+1:]
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	if strings.HasPrefix(s, "\"") {
		s = s[1:]
		if j := strings.IndexByte(s, '"'); j >= 0 {
			desc, tail, hasTail = s[:j], s[j+1:], true
		} else {
			desc = s
		}
	} else {
		desc = s
		for _, kw := range []string{" enhanced port ", " base port ", " lid ", " lmc "} {
			if j := strings.Index(s, kw); j >= 0 {
				desc, tail, hasTail = s[:j], s[j+1:], true
				break
			}
		}
	}
	if len(desc) > 63 {
		desc = desc[:63]
	}
	return desc, tail, hasTail
}

// lidLMC applies the first "lid N" and "lmc N" of s.
func lidLMC(s string, pp *Port) {
	if i := strings.Index(s, "lid "); i >= 0 {
		v, _ := strtoul(s[i+4:])
		pp.LID = uint16(v)
	}
	if i := strings.Index(s, "lmc "); i >= 0 {
		v, _ := strtoul(s[i+4:])
		pp.LMC = uint8(v) & 7
	}
}

func (p *parser) ports(s *source, idx int32) error {
	n := &p.f.Nodes[idx]
	for left := n.NumPorts; left > 0; {
		line, ok := s.readline()
		if !ok {
			return nil
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "@") {
			return nil // end of record; ibsim drops this line
		}
		if err := p.port(s, idx, line); err != nil {
			return err
		}
		left--
	}
	return nil
}

func (p *parser) port(s *source, idx int32, line string) error {
	n := &p.f.Nodes[idx]
	isAlias := false
	if line[0] == '@' {
		isAlias = true
		line = line[1:]
		if line == "" {
			return errAt(s, "bad port alias line")
		}
	}
	num := atoi(line[1:])
	if num < 1 || num > n.NumPorts {
		return errAt(s, "port %d out of range 1..%d for %q", num, n.NumPorts, n.ID)
	}
	pp := &n.Ports[num]
	rid, rest, ok := quoted(line)
	if !ok {
		return errAt(s, "invalid remote nodeid: <%s>", line)
	}
	pos := Pos{s.name, s.line}
	if isAlias {
		if strings.ContainsAny(rid, "#@") {
			return errAt(s, "bad alias %q: '#' & '@' characters are reserved", rid)
		}
		name := p.prefix + "@" + rid
		if _, dup := p.aliases[name]; dup {
			return errAt(s, "alias %s is already mapped", name)
		}
		p.aliases[name] = aliasTarget{idx, uint8(num)}
		pp.Alias = name
	} else {
		pe := pending{node: idx, port: int32(num), rport: 1, pos: pos}
		if strings.Contains(rid, "@") {
			name := rid
			if strings.HasPrefix(rid, "@") {
				name = p.prefix + rid
			}
			if _, ok := p.aliases[name]; !ok {
				return errAt(s, "unknown port alias %q", name)
			}
			pe.alias = name
		} else {
			pe.remote = p.expand(rid)
			if strings.HasPrefix(rest, "[") {
				pe.rport = atoi(rest[1:])
				if pe.rport <= 0 {
					return errAt(s, "invalid remote port %d", pe.rport)
				}
			}
		}
		p.pend = append(p.pend, pe)
	}
	// Options: every '=' after the remote id, keyed by the nearest letter
	// before it (ibsim's rule), plus our mtu=/vl= extension.
	for i := 1; i < len(rest); i++ {
		if rest[i] != '=' {
			continue
		}
		j := i - 1
		for j >= 0 && !isAlpha(rest[j]) {
			j--
		}
		if j < 0 {
			return errAt(s, "bad port option")
		}
		v := sint(rest[i+1:])
		switch rest[j] {
		case 'w':
			if v < 1 || v > 31 {
				return errAt(s, "bad enabled width %d - should be between 1 to 31", v)
			}
			pp.WidthEnabled = uint8(v)
		case 's':
			if v < 1 || v > 7 {
				return errAt(s, "bad speed %d - should be between 1 to 7", v)
			}
			pp.SpeedEnabled = uint8(v)
		case 'e':
			if v < 0 || v > 7 {
				return errAt(s, "bad extended speed %d = should be between 0 to 7", v)
			}
			pp.ExtSpeedEnabled = uint8(v)
		case 'u':
			if j >= 2 && rest[j-2:j+1] == "mtu" {
				if v < 1 || v > 5 {
					return errAt(s, "bad mtu code %d - should be between 1 to 5", v)
				}
				pp.MTUCap = uint8(v)
			}
		case 'l':
			if j >= 1 && rest[j-1:j+1] == "vl" {
				if v < 1 || v > 5 {
					return errAt(s, "bad vl code %d - should be between 1 to 5", v)
				}
				pp.VLCap = uint8(v)
			}
		}
	}
	if n.Type == Router {
		return nil
	}
	// ibnetdiscover annotations: the last "lid ... <W>x<SPD>" with no quote after it.
	k := -1
	for i := 0; i+3 <= len(rest); i++ {
		if rest[i:i+3] == "lid" && !strings.Contains(rest[i:], "\"") {
			k = i
			break
		}
	}
	if k < 0 {
		return nil
	}
	if n.Type == CA {
		lidLMC(rest, pp)
	}
	linkToken(rest[k:], pp)
	return nil
}

// linkToken reads "lid <n> <w>x<speed>" like ibsim's sscanf and sets the
// enable masks it implies. Unreadable tokens change nothing.
func linkToken(s string, pp *Port) {
	s = s[3:]
	// %d
	if _, n := scanInt(s); n == 0 {
		return
	} else {
		s = s[n:]
	}
	w, n := scanInt(s)
	if n == 0 {
		return
	}
	s = s[n:]
	if !strings.HasPrefix(s, "x") {
		return
	}
	s = s[1:]
	e := 0
	for e < len(s) && e < 9 && !isSpace(s[e]) {
		e++
	}
	spd := s[:e]
	if spd == "" {
		return
	}
	switch w {
	case 12:
		pp.WidthEnabled = Width1x | Width4x | Width12x
	case 8:
		pp.WidthEnabled = Width8x
	case 4:
		pp.WidthEnabled = Width1x | Width4x
	case 1:
		pp.WidthEnabled = Width1x
	case 2:
		pp.WidthEnabled = Width2x
	}
	all := SpeedSDR | SpeedDDR | SpeedQDR
	switch {
	case strings.HasPrefix("SDR", spd):
		pp.SpeedEnabled = SpeedSDR
	case strings.HasPrefix("DDR", spd):
		pp.SpeedEnabled = SpeedSDR | SpeedDDR
	case strings.HasPrefix("QDR", spd):
		pp.SpeedEnabled = all
	case strings.HasPrefix("FDR", spd):
		pp.SpeedEnabled, pp.ExtSpeedEnabled, pp.FDR10 = all, ExtSpeedFDR, true
	case strings.HasPrefix("EDR", spd):
		pp.SpeedEnabled, pp.ExtSpeedEnabled, pp.FDR10 = all, ExtSpeedFDR|ExtSpeedEDR, true
	case strings.HasPrefix("HDR", spd):
		pp.SpeedEnabled, pp.ExtSpeedEnabled, pp.FDR10 = all, ExtSpeedFDR|ExtSpeedEDR|ExtSpeedHDR, true
	case strings.HasPrefix("FDR10", spd):
		pp.SpeedEnabled, pp.FDR10 = all, true
	}
}

// scanInt reads a scanf %d: optional space, sign, decimal digits.
func scanInt(s string) (int, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	d := i
	v := 0
	for i < len(s) && isDigit(s[i]) {
		if v < 1<<30 {
			v = v*10 + int(s[i]-'0')
		}
		i++
	}
	if i == d {
		_ = start
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, i
}

func (p *parser) command(s *source, text string) error {
	c, err := ParseCommand(text)
	c.Pos = Pos{s.name, s.line}
	if err != nil {
		return errAt(s, "do %s: %v", strings.TrimSpace(text), err)
	}
	if err := p.checkCommand(s, &c); err != nil {
		return err
	}
	p.f.Commands = append(p.f.Commands, c)
	return nil
}

// checkCommand resolves the node ids of c (and of the command it
// schedules) against the nodes parsed so far, as ibsim does.
func (p *parser) checkCommand(s *source, c *Command) error {
	return checkTargets(c, func(id string) (*Node, string, bool) {
		full := p.expand(id)
		i, ok := p.f.index[full]
		if !ok {
			return nil, full, false
		}
		return &p.f.Nodes[i], full, true
	}, func(format string, a ...any) error { return errAt(s, format, a...) })
}

// checkTargets checks the targets of c with lookup and rewrites them to
// the ids lookup returns.
func checkTargets(c *Command, lookup func(string) (*Node, string, bool), fail func(string, ...any) error) error {
	var err error
	check := func(id string, port int, lo int, need bool) (string, error) {
		n, full, ok := lookup(id)
		if !ok {
			return full, fail("do %s: nodeid %q not found", c.Verb, id)
		}
		if port < 0 {
			if need {
				return full, fail("do %s: missing port for %q", c.Verb, id)
			}
			return full, nil
		}
		if n.Type != Switch && lo == 0 {
			lo = 1
		}
		if port < lo || port > n.NumPorts {
			return full, fail("do %s: port %d out of range %d..%d for %q", c.Verb, port, lo, n.NumPorts, id)
		}
		return full, nil
	}
	switch c.Verb {
	case "Error":
		if c.Node, err = check(c.Node, c.Port, 0, false); err != nil {
			return err
		}
		if len(c.Args) == 0 {
			return fail("do Error: error rate is missing")
		}
		if r, _ := strtoul(c.Args[0]); r > 100 {
			return fail("do Error: error rate must be in [0..100] range (%d)", r)
		}
	case "Unlink", "Clear", "ReLink":
		if c.Node, err = check(c.Node, c.Port, 1, false); err != nil {
			return err
		}
	case "Guid", "Kill", "Revive", "Inconsistent":
		if c.Node, err = check(c.Node, c.Port, 0, false); err != nil {
			return err
		}
	case "Latency":
		if c.Node != "" {
			if c.Node, err = check(c.Node, c.Port, 0, false); err != nil {
				return err
			}
		}
	case "Baselid", "PerformanceSet":
		if c.Node, err = check(c.Node, c.Port, 0, true); err != nil {
			return err
		}
	case "Link":
		if c.Node, err = check(c.Node, c.Port, 1, true); err != nil {
			return err
		}
		if c.Node2, err = check(c.Node2, c.Port2, 1, true); err != nil {
			return err
		}
	case "After", "At":
		if c.Then != nil {
			c.Then.Pos = c.Pos
			return checkTargets(c.Then, lookup, fail)
		}
	}
	return nil
}

// resolve links the ports named in port lines and checks that both ends
// agree, as ibsim's connect_ports does.
func (p *parser) resolve() error {
	nodes := p.f.Nodes
	for _, pe := range p.pend {
		n := &nodes[pe.node]
		pp := &n.Ports[pe.port]
		fail := func(format string, a ...any) error {
			return &ParseError{File: pe.pos.File, Line: pe.pos.Line, Msg: fmt.Sprintf(format, a...)}
		}
		var ri int32
		var rp int
		if pe.alias != "" {
			t := p.aliases[pe.alias]
			ri, rp = t.node, int(t.port)
			rpp := &nodes[ri].Ports[rp]
			if rpp.Remote >= 0 && (rpp.Remote != pe.node || int32(rpp.RemotePort) != pe.port) {
				return fail("alias %s (%q[%d]) is already linked", pe.alias, nodes[ri].ID, rp)
			}
		} else {
			i, ok := p.f.index[pe.remote]
			if !ok {
				return fail("can't find remote node %q connected to node %q port %d", pe.remote, n.ID, pe.port)
			}
			ri, rp = i, pe.rport
			if rp > nodes[ri].NumPorts {
				return fail("bad remote port %d in node %q connected to node %q port %d", rp, pe.remote, n.ID, pe.port)
			}
		}
		if ri == pe.node && rp == int(pe.port) {
			return fail("port %d of %q is linked to itself", pe.port, n.ID)
		}
		if pe.alias == "" {
			// The other end must name us back.
			back := p.backref(ri, rp)
			if back == nil || back.node != pe.node || back.port != pe.port {
				got := "nothing"
				if back != nil {
					got = fmt.Sprintf("%q[%d]", nodes[back.node].ID, back.port)
				}
				return fail("remote port %d in node %q is not connected to node %q port %d (it names %s)",
					rp, nodes[ri].ID, n.ID, pe.port, got)
			}
		}
		pp.Remote, pp.RemotePort = ri, uint8(rp)
		rpp := &nodes[ri].Ports[rp]
		rpp.Remote, rpp.RemotePort = pe.node, uint8(pe.port)
		if pp.WidthEnabled&rpp.WidthEnabled == 0 {
			return fail("mismatched enabled width between %q[%d] W=%d and %q[%d] W=%d",
				n.ID, pe.port, pp.WidthEnabled, nodes[ri].ID, rp, rpp.WidthEnabled)
		}
		if pp.SpeedEnabled&rpp.SpeedEnabled == 0 {
			return fail("mismatched enabled speed between %q[%d] S=%d and %q[%d] S=%d",
				n.ID, pe.port, pp.SpeedEnabled, nodes[ri].ID, rp, rpp.SpeedEnabled)
		}
	}
	return nil
}

type ref struct{ node, port int32 }

// backref returns what port rp of node ri names as its remote in the file.
func (p *parser) backref(ri int32, rp int) *ref {
	// pend is small per port; build an index lazily.
	if p.backIdx == nil {
		p.backIdx = make(map[ref]ref, len(p.pend))
		for _, q := range p.pend {
			if q.alias != "" {
				continue
			}
			if i, ok := p.f.index[q.remote]; ok {
				p.backIdx[ref{q.node, q.port}] = ref{i, int32(q.rport)}
			}
		}
	}
	r, ok := p.backIdx[ref{ri, int32(rp)}]
	if !ok {
		return nil
	}
	return &r
}
