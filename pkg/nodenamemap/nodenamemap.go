// Package nodenamemap reads the infiniband-diags node name map
// (/etc/rdma/ib-node-name-map): lines of "<guid> <name>" that give nodes,
// looked up by NodeGUID, the names the tools print instead of their
// NodeDescription.
//
// Parsing follows rdma-core's util/node_name_map.c exactly: lines are read
// through a 256-byte buffer (a longer line is split and its remainder
// parsed as a line of its own), leading whitespace is skipped, empty lines
// and lines starting with '#' are ignored, the GUID is read as C strtoull
// with base 0 (0x hex, leading-0 octal, or decimal, optional sign) and must
// be followed by whitespace, '#' or the end of the line, and the name is
// the first token when the rest is split on '"' and '#'. The first entry
// for a GUID wins. A line that fails makes the whole map invalid.
package nodenamemap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode"
)

// DefaultPath is the map the tools read when none is given.
const DefaultPath = "/etc/rdma/ib-node-name-map"

// lineBuf is the C fgets buffer size: a line holds at most lineBuf-1 bytes.
const lineBuf = 256

// Map is a parsed node name map. The nil *Map is valid and empty.
type Map struct {
	names map[uint64]string
}

// ParseError is a line that is not "<guid> <name>": the whole map is
// rejected, as infiniband-diags do.
type ParseError struct {
	File string // file name, "" when parsed from a reader
	Line string // the offending line as the tools print it (no newline)
	Num  int    // 1-based number of the line (buffer chunk) that failed
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s: line %d: bad GUID in %q", e.File, e.Num, e.Line)
}

// Warning is the text ibnetdiscover prints on stderr for the error: two
// lines, each ending in a newline.
func (e *ParseError) Warning() string {
	return fmt.Sprintf("WARNING failed to parse node name map \"%s\"\nWARNING failed line: \"%s\"\n", e.File, e.Line)
}

// OpenError is a map file that cannot be read.
type OpenError struct {
	File string
	Err  error
}

func (e *OpenError) Error() string { return e.File + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *OpenError) Unwrap() error { return e.Err }

// Warning is ibnetdiscover's stderr line for the error, e.g.
// `WARNING failed to open node name map "x" (No such file or directory)`.
func (e *OpenError) Warning() string {
	return fmt.Sprintf("WARNING failed to open node name map \"%s\" (%s)\n", e.File, strerror(e.Err))
}

// strerror renders an error as glibc's strerror text.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" {
			r := []rune(s)
			r[0] = unicode.ToUpper(r[0])
			return string(r)
		}
	}
	return err.Error()
}

// Warner is an error with the exact warning text the C tools print.
type Warner interface {
	error
	Warning() string
}

// MaxBytes is the largest map read (32 MiB, several times a map naming
// every node of a 64k-node fabric): a larger input, such as /dev/zero, is
// an OpenError wrapping ErrTooLarge.
const MaxBytes = 32 << 20

// ErrTooLarge is the error of a map larger than MaxBytes.
var ErrTooLarge = fmt.Errorf("larger than %d MiB, the limit for a node name map", MaxBytes>>20)

// Parse reads a map from r (at most MaxBytes). name is used in errors.
func Parse(r io.Reader, name string) (*Map, error) { return parse(r, name, MaxBytes) }

func parse(r io.Reader, name string, limit int) (*Map, error) {
	m := &Map{names: make(map[uint64]string)}
	br := bufio.NewReader(io.LimitReader(r, int64(limit)+1))
	num, total := 0, 0
	for {
		line, err := readChunk(br)
		if total += len(line); total > limit {
			return nil, &OpenError{File: name, Err: ErrTooLarge}
		}
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				return m, nil
			}
			return nil, &OpenError{File: name, Err: err}
		}
		num++
		if perr := m.parseLine(line); perr {
			return nil, &ParseError{File: name, Line: failedLine(line), Num: num}
		}
	}
}

// readChunk emulates fgets(buf, 256): up to 255 bytes, through a newline.
// The chunk is a copy (the reader's buffer is reused).
func readChunk(br *bufio.Reader) ([]byte, error) {
	b, err := br.Peek(lineBuf - 1)
	if len(b) == 0 {
		return nil, err
	}
	n := len(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		n = i + 1
	}
	line := append([]byte(nil), b[:n]...)
	br.Discard(n)
	return line, nil
}

// cstr cuts b at its first NUL, as C string functions see it.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

func failedLine(line []byte) string {
	s := cstr(line)
	for i, c := range s {
		if c == '\n' {
			return string(s[:i])
		}
	}
	return string(s)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseLine adds the entry of one line; it reports whether the line is bad.
func (m *Map) parseLine(raw []byte) bool {
	p := cstr(raw)
	i := 0
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	if i == len(p) || p[i] == '#' {
		return false
	}
	guid, n := strtoull(p[i:])
	if n == 0 {
		return true
	}
	i += n
	if i < len(p) && !isSpace(p[i]) && p[i] != '#' {
		return true
	}
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	rest := p[i:]
	for j, c := range rest {
		if c == '\n' {
			rest = rest[:j]
			break
		}
	}
	// strtok(rest, "\"#"): skip leading delimiters, take up to the next.
	k := 0
	for k < len(rest) && (rest[k] == '"' || rest[k] == '#') {
		k++
	}
	if k == len(rest) {
		return false
	}
	e := k
	for e < len(rest) && rest[e] != '"' && rest[e] != '#' {
		e++
	}
	if _, ok := m.names[guid]; !ok {
		m.names[guid] = string(rest[k:e])
	}
	return false
}

// strtoull parses like C strtoull(s, &end, 0) on a string that does not
// start with whitespace. It returns the value and the number of bytes
// consumed (0 when no number was found). Overflow gives the maximum.
func strtoull(s []byte) (uint64, int) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	start := i
	if i < len(s) && s[i] == '0' {
		if i+2 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') && digit(s[i+2]) < 16 {
			base = 16
			i += 2
			start = i
		} else {
			base = 8
		}
	}
	var v uint64
	over := false
	j := i
	for ; j < len(s); j++ {
		d := digit(s[j])
		if d >= base {
			break
		}
		if v > (^uint64(0)-d)/base {
			over = true
		}
		v = v*base + d
	}
	if j == start {
		return 0, 0
	}
	if over {
		return ^uint64(0), j
	}
	if neg {
		v = -v
	}
	return v, j
}

func digit(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'z':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10
	}
	return 99
}

// Load reads the map in file.
func Load(file string) (*Map, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, &OpenError{File: file, Err: unwrapPath(err)}
	}
	defer f.Close()
	// A directory is an error like a missing map (in C, fopen(dir)
	// succeeds and the map is silently empty).
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &OpenError{File: file, Err: syscall.EISDIR}
	}
	return Parse(f, file)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open loads the map the tools would use: file when it is not "", else
// DefaultPath when it exists. A missing default is no error (nil map).
// On error the map is nil and the error is a Warner whose Warning text is
// what infiniband-diags print before running without a map.
func Open(file string) (*Map, error) {
	if file == "" {
		if _, err := os.Stat(DefaultPath); err != nil {
			return nil, nil
		}
		file = DefaultPath
	}
	return Load(file)
}

// Len is the number of entries.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.names)
}

// Lookup returns the name mapped to a NodeGUID.
func (m *Map) Lookup(guid uint64) (string, bool) {
	if m == nil {
		return "", false
	}
	s, ok := m.names[guid]
	return s, ok
}

// Name returns the mapped name of guid, else desc (the node's cleaned
// NodeDescription).
func (m *Map) Name(guid uint64, desc string) string {
	if s, ok := m.Lookup(guid); ok {
		return s
	}
	return desc
}

// Entries returns a copy of the map's entries, name by NodeGUID.
func (m *Map) Entries() map[uint64]string {
	out := make(map[uint64]string, m.Len())
	if m != nil {
		for g, s := range m.names {
			out[g] = s
		}
	}
	return out
}
