package netfile

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Command is a console command, from a "do" line of a net file or typed
// by a test. Node and Port name the first target ("id"[p]); Node2/Port2 the
// second one of Link. Args are the words after the last target.
type Command struct {
	Verb  string // canonical spelling (see ParseCommand), or the word as written
	Node  string
	Port  int // -1 when no [p] was given
	Node2 string
	Port2 int
	Args  []string
	Text  string // the command as written
	Pos   Pos
	// Then is the command that After and At schedule.
	Then *Command
}

var verbs = []string{"Error", "Unlink", "ReLink", "Link", "Clear", "Guid", "Baselid",
	"Dump", "Route", "Start", "Verbose", "Wait", "Attached", "X", "Help", "Quit", "PerformanceSet",
	"Drop", "Kill", "Revive", "Inconsistent", "Latency", "After", "At"}

// maxNest bounds After/At nesting.
const maxNest = 4

// ErrCommand is returned by ParseCommand for a malformed command.
var ErrCommand = errors.New("malformed console command")

// ParseCommand splits a console command line such as
// `Error "sw1"[3] 50 21` or `Link "a"[1] "b"[2]`. Node ids are taken
// as written (no module prefix is applied). Commands neither ibsim nor
// package sim knows are returned with their first word as Verb and no
// error.
//
// Besides ibsim's commands it parses the fault-injection commands of
// package sim (ibsim does not know them):
//
//	Drop <rate>                          drop rate% of all SMPs
//	Kill "id"  /  Revive "id"            the node's SMA stops / resumes answering
//	Inconsistent "id" <field> [every]    every n-th NodeInfo answer lies
//	Latency ["id"] hop=D sma=D fwd=D vl15=N    latency model (D: Go duration, e.g. 2us)
//	After <n> <command>                  run command after n more SMPs
//
// and ibsim's `PerformanceSet "id"[p] Attr.Field=value` for the
// PortCounters and PortCountersExtended counters (see PerfCounter).
//
//	At <duration> <command>              run command after that much time
//
// field is numports, type, portguid or guid. The arguments are checked
// here (CheckArgs), so a net file with a bad one fails to parse.
func ParseCommand(text string) (Command, error) {
	return parseCommand(text, 0)
}

func parseCommand(text string, depth int) (Command, error) {
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
	rest := s[len(word):]
	switch c.Verb {
	case "Error", "Unlink", "ReLink", "Link", "Clear", "Guid", "Baselid", "Kill", "Revive", "Inconsistent":
	case "PerformanceSet":
		var ok bool
		if c.Node, c.Port, rest, ok = target(rest); !ok || c.Port < 0 {
			return c, ErrCommand
		}
		if err := parsePerfSet(&c, rest); err != nil {
			return c, err
		}
		return c, c.CheckArgs()
	case "Drop":
		c.Args = strings.Fields(rest)
		return c, c.CheckArgs()
	case "Latency":
		if strings.IndexByte(rest, '"') < 0 {
			c.Args = strings.Fields(rest)
			return c, c.CheckArgs()
		}
	case "After", "At":
		if depth >= maxNest {
			return c, ErrCommand
		}
		rest = strings.TrimLeft(rest, " \t\r\n\v\f")
		i := strings.IndexAny(rest, " \t\r\n\v\f")
		if i < 0 {
			return c, ErrCommand
		}
		c.Args = []string{rest[:i]}
		then, err := parseCommand(rest[i:], depth+1)
		if err != nil {
			return c, err
		}
		c.Then = &then
		return c, c.CheckArgs()
	default:
		return c, nil
	}
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
	return c, c.CheckArgs()
}

// Fields an Inconsistent command can make a node lie about.
var lieFields = []string{"none", "numports", "type", "portguid", "guid"}

// LieField returns the index of an Inconsistent field name in
// none, numports, type, portguid, guid (case-insensitive), or -1.
func LieField(name string) int {
	for i, f := range lieFields {
		if strings.EqualFold(f, name) {
			return i
		}
	}
	return -1
}

// LatencyArgs is the parsed argument list of a Latency command; the Has
// fields say which keys were given.
type LatencyArgs struct {
	Hop, SMA, Fwd                   time.Duration
	VL15                            int
	HasHop, HasSMA, HasFwd, HasVL15 bool
}

// Latency parses the key=value arguments of a Latency command: hop=,
// sma=, fwd= (Go durations, at most 10s) and vl15= (0..64, 0 = unbounded).
func (c *Command) Latency() (LatencyArgs, error) {
	var l LatencyArgs
	if len(c.Args) == 0 {
		return l, ErrCommand
	}
	for _, a := range c.Args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return l, ErrCommand
		}
		switch strings.ToLower(k) {
		case "hop", "sma", "fwd":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > 10*time.Second {
				return l, ErrCommand
			}
			switch strings.ToLower(k) {
			case "hop":
				l.Hop, l.HasHop = d, true
			case "sma":
				l.SMA, l.HasSMA = d, true
			default:
				l.Fwd, l.HasFwd = d, true
			}
		case "vl15":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 64 {
				return l, ErrCommand
			}
			l.VL15, l.HasVL15 = n, true
		default:
			return l, ErrCommand
		}
	}
	if c.Node != "" && (l.HasHop || l.HasFwd || l.HasVL15) {
		return l, ErrCommand // a node takes only its own service time
	}
	return l, nil
}

// CheckArgs checks the arguments of the fault-injection commands of
// package sim (ParseCommand calls it); other commands always pass.
func (c *Command) CheckArgs() error {
	switch c.Verb {
	case "PerformanceSet":
		_, err := c.PerfSet()
		return err
	case "Drop":
		if len(c.Args) != 1 {
			return ErrCommand
		}
		if n, err := strconv.Atoi(c.Args[0]); err != nil || n < 0 || n > 100 {
			return ErrCommand
		}
	case "Kill", "Revive":
		if len(c.Args) != 0 {
			return ErrCommand
		}
	case "Inconsistent":
		if len(c.Args) < 1 || len(c.Args) > 2 || LieField(c.Args[0]) < 0 {
			return ErrCommand
		}
		if len(c.Args) == 2 {
			if n, err := strconv.Atoi(c.Args[1]); err != nil || n < 1 {
				return ErrCommand
			}
		}
	case "Latency":
		_, err := c.Latency()
		return err
	case "After":
		if n, err := strconv.ParseUint(c.Args[0], 10, 63); err != nil || n == 0 {
			return ErrCommand
		}
	case "At":
		if d, err := time.ParseDuration(c.Args[0]); err != nil || d <= 0 {
			return ErrCommand
		}
	}
	return nil
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
