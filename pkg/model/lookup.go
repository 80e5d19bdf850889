package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotFound: a port specification matches nothing in the fabric.
var ErrNotFound = errors.New("not in the fabric")

// ErrAmbiguous: a name matches more than one node.
var ErrAmbiguous = errors.New("ambiguous: matches more than one node")

// ResolvePort finds the logical port a user names: a LID (decimal, or
// 0x-prefixed hex when it is at most 4 hex digits), a port GUID or node
// GUID (0x-prefixed, more than 4 hex digits; a node GUID gives the node's
// first port with a LID), or a node name: the name given by names (may be
// nil) or the NodeDescription. A name is compared exactly first, spaces
// included; only when nothing matches so are both sides compared with
// leading and trailing white space trimmed. For a switch the result is
// its port 0.
func (f *Fabric) ResolvePort(spec string, names func(*Node) string) (*Port, error) {
	p, _, err := f.ResolveLID(spec, names)
	return p, err
}

// ResolveLID is ResolvePort that also returns the LID the user meant: the
// LID given when spec is a LID (any LID of the port's LMC range), else
// the port's base LID.
func (f *Fabric) ResolveLID(spec string, names func(*Node) string) (*Port, uint16, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, 0, fmt.Errorf("empty port specification")
	}
	if v, ok := parseHex(s); ok {
		if len(s) <= 6 { // "0x" + up to 4 digits: a LID
			if p := f.PortByLID(uint16(v)); p != nil && v <= 0xFFFF {
				return p, uint16(v), nil
			}
			return nil, 0, fmt.Errorf("LID %s: %w", s, ErrNotFound)
		}
		if p := f.PortByGUID(v); p != nil {
			return p, p.BaseLID(), nil
		}
		if n := f.NodeByGUID(v); n != nil {
			if p := f.nodePort(n); p != nil {
				return p, p.BaseLID(), nil
			}
		}
		return nil, 0, fmt.Errorf("GUID %s: %w", s, ErrNotFound)
	}
	if v, err := strconv.ParseUint(s, 10, 16); err == nil {
		if p := f.PortByLID(uint16(v)); p != nil {
			return p, uint16(v), nil
		}
		return nil, 0, fmt.Errorf("LID %s: %w", s, ErrNotFound)
	}
	found, err := f.nodeByName(spec, names, false)
	if err == nil && found == nil {
		found, err = f.nodeByName(s, names, true)
	}
	if err != nil {
		return nil, 0, err
	}
	if found == nil {
		return nil, 0, fmt.Errorf("%q: %w", spec, ErrNotFound)
	}
	if p := f.nodePort(found); p != nil {
		return p, p.BaseLID(), nil
	}
	return nil, 0, fmt.Errorf("%q: node has no port with a LID", spec)
}

// nodeByName returns the one node whose description or mapped name is s
// (nil when none), comparing both trimmed when trim is set.
func (f *Fabric) nodeByName(s string, names func(*Node) string, trim bool) (*Node, error) {
	eq := func(a string) bool {
		if trim {
			a = strings.TrimSpace(a)
		}
		return a == s
	}
	var found *Node
	for _, n := range f.Nodes {
		match := eq(n.Description())
		if !match && names != nil {
			match = eq(names(n))
		}
		if !match {
			continue
		}
		if found != nil && found != n {
			return nil, fmt.Errorf("%q: %w", s, ErrAmbiguous)
		}
		found = n
	}
	return found, nil
}

// nodePort is a node's port 0 (switch) or its first port registered as a
// logical port.
func (f *Fabric) nodePort(n *Node) *Port {
	for _, pp := range n.Ports {
		if pp == nil {
			continue
		}
		if p := f.PortByGUID(pp.GUID); p != nil && p.Node == n {
			return p
		}
	}
	return nil
}

func parseHex(s string) (uint64, bool) {
	if len(s) < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	return v, err == nil
}
