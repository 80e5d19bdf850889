package netfile

import (
	"errors"
	"strings"
)

// Command is a console command, from a "do" line of a net file or typed
// by a test. Node and Port name the first target ("id"[p]); Node2/Port2 the
// second one of Link. Args are the words after the last target.
type Command struct {
	Verb  string // canonical spelling: Error, Unlink, ReLink, Link, Clear, Guid, Baselid, or the word as written
	Node  string
	Port  int // -1 when no [p] was given
	Node2 string
	Port2 int
	Args  []string
	Text  string // the command as written
	Pos   Pos
}

var verbs = []string{"Error", "Unlink", "ReLink", "Link", "Clear", "Guid", "Baselid",
	"Dump", "Route", "Start", "Verbose", "Wait", "Attached", "X", "Help", "Quit", "PerformanceSet"}

// ErrCommand is returned by ParseCommand for a malformed command.
var ErrCommand = errors.New("malformed console command")

// ParseCommand splits a console command line such as
// `Error "sw1"[3] 50 21` or `Link "a"[1] "b"[2]`. Node ids are taken
// as written (no module prefix is applied). Commands ibsim does not know
// are returned with their first word as Verb and no error.
func ParseCommand(text string) (Command, error) {
	c := Command{Text: text, Port: -1, Port2: -1}
	s := strings.TrimLeft(text, " \t\r\n\v\f")
	word := s
	if i := strings.IndexAny(s, " \t\r\n\v\f"); i >= 0 {
		word = s[:i]
	}
	c.Verb = word
	for _, v := range verbs {
		if strings.EqualFold(v, word) {
			c.Verb = v
			break
		}
	}
	switch c.Verb {
	case "Error", "Unlink", "ReLink", "Link", "Clear", "Guid", "Baselid":
	default:
		return c, nil
	}
	rest := s[len(word):]
	var ok bool
	c.Node, c.Port, rest, ok = target(rest)
	if !ok {
		return c, ErrCommand
	}
	if c.Verb == "Link" {
		c.Node2, c.Port2, rest, ok = target(rest)
		if !ok {
			return c, ErrCommand
		}
	}
	c.Args = strings.Fields(rest)
	return c, nil
}

// target parses `"id"[p]` at the first quote of s.
func target(s string) (id string, port int, rest string, ok bool) {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return "", -1, s, false
	}
	j := strings.IndexByte(s[i+1:], '"')
	if j < 0 {
		return "", -1, s, false
	}
	id = s[i+1 : i+1+j]
	rest = s[i+2+j:]
	port = -1
	if strings.HasPrefix(rest, "[") {
		v, n := strtoul(rest[1:])
		if n == 0 {
			return id, -1, rest, false
		}
		if v > 1<<16 {
			v = 1 << 16
		}
		port = int(v)
		rest = rest[1+n:]
		if strings.HasPrefix(rest, "]") {
			rest = rest[1:]
		}
	}
	return id, port, rest, true
}
