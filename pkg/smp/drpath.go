package smp

import (
	"errors"
	"strconv"
	"strings"
)

// Errors of ParseDRPath and DRPath.
var (
	// ErrPathSyntax: a DR path that is not a comma-separated list of port numbers.
	ErrPathSyntax = errors.New("not a comma-separated list of port numbers")
	// ErrPathStart: a DR path whose first element is not 0.
	ErrPathStart = errors.New("first element must be 0")
	// ErrPathPort: a port number outside 1..254.
	ErrPathPort = errors.New("port number out of range 1..254")
)

// DRPath is a directed route: element 0 is always 0 (the local port), then
// the output port at each hop. The zero value is the empty route (hop
// count 0) that addresses the local node. DRPath is a comparable value.
type DRPath struct {
	hops  uint8
	ports [MaxHops + 1]byte
}

// Len is the hop count.
func (p DRPath) Len() uint8 { return p.hops }

// Port returns the output port at hop i (1..Len).
func (p DRPath) Port(i int) uint8 {
	if i < 0 || i > int(p.hops) {
		return 0
	}
	return p.ports[i]
}

// Last returns the last output port, or 0 for the empty route.
func (p DRPath) Last() uint8 { return p.ports[p.hops] }

// Extend returns p with one more hop out of port. It fails beyond 63 hops.
func (p DRPath) Extend(port uint8) (DRPath, error) {
	if p.hops >= MaxHops {
		return p, ErrHopCount
	}
	p.hops++
	p.ports[p.hops] = port
	return p, nil
}

// Retract returns p without its last hop.
func (p DRPath) Retract() DRPath {
	if p.hops > 0 {
		p.ports[p.hops] = 0
		p.hops--
	}
	return p
}

// HasPrefix reports whether q is a prefix of p.
func (p DRPath) HasPrefix(q DRPath) bool {
	if q.hops > p.hops {
		return false
	}
	return string(p.ports[1:q.hops+1]) == string(q.ports[1:q.hops+1])
}

// String formats p as infiniband-diags do: "0,1,3"; the empty route is "0".
func (p DRPath) String() string {
	b := make([]byte, 0, 4*int(p.hops)+1)
	b = append(b, '0')
	for i := 1; i <= int(p.hops); i++ {
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(p.ports[i]), 10)
	}
	return string(b)
}

// AppendTo appends String's text to b.
func (p DRPath) AppendTo(b []byte) []byte {
	b = append(b, '0')
	for i := 1; i <= int(p.hops); i++ {
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(p.ports[i]), 10)
	}
	return b
}

// ParseDRPath parses "0,1,3" (first element 0, then output ports 1..254,
// at most 63 hops). Spaces around elements are allowed; "0" is the local port.
func ParseDRPath(s string) (DRPath, error) {
	var p DRPath
	s = strings.TrimSpace(s)
	if s == "" {
		return p, ErrPathSyntax
	}
	fields := strings.Split(s, ",")
	for i, f := range fields {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil {
			return DRPath{}, ErrPathSyntax
		}
		if i == 0 {
			if n != 0 {
				return DRPath{}, ErrPathStart
			}
			continue
		}
		if n < 1 || n > 254 {
			return DRPath{}, ErrPathPort
		}
		if i > MaxHops {
			return DRPath{}, ErrHopCount
		}
		p.ports[i] = byte(n)
		p.hops = uint8(i)
	}
	return p, nil
}
