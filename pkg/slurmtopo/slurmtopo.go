// Package slurmtopo writes a fabric as the topology.conf of Slurm's
// topology/tree plugin: one SwitchName line per switch, leaves (the
// switches CAs hang off) listing their hosts, every upper switch listing
// the switches one level below it, levels taken from the graph
// (model.Levels) and host lists compressed as Slurm writes them.
package slurmtopo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ErrRule: a host name rule that is not word, full or re:REGEXP.
var ErrRule = errors.New("bad host name rule")

// ErrDuplicateName: two GUIDs of a node name map share one name.
var ErrDuplicateName = errors.New("duplicate name")

// Rule turns a CA's name (its node-name-map entry or NodeDescription)
// into the Slurm host name it belongs to.
type Rule struct {
	kind string
	re   *regexp.Regexp
}

// ParseRule parses a rule: "word" (the name's first word, the default:
// "node017 mlx5_0" is host node017), "full" (the whole name, which must
// be one word) or "re:REGEXP" (REGEXP's first submatch, or its match
// when it has no group).
func ParseRule(s string) (Rule, error) {
	switch {
	case s == "" || s == "word":
		return Rule{kind: "word"}, nil
	case s == "full":
		return Rule{kind: "full"}, nil
	case strings.HasPrefix(s, "re:"):
		re, err := regexp.Compile(s[3:])
		if err != nil {
			return Rule{}, fmt.Errorf("%w %q: %v", ErrRule, s, err)
		}
		return Rule{kind: "re", re: re}, nil
	}
	return Rule{}, fmt.Errorf("%w %q: want word, full or re:REGEXP", ErrRule, s)
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	switch r.kind {
	case "full":
		return "full"
	case "re":
		return "re:" + r.re.String()
	}
	return "word"
}

// Host returns the host name of a CA named name, and why there is none.
func (r Rule) Host(name string) (string, error) {
	var h string
	switch r.kind {
	case "full":
		h = strings.TrimSpace(name)
	case "re":
		m := r.re.FindStringSubmatch(name)
		if m == nil {
			return "", fmt.Errorf("name %q does not match %s", name, r)
		}
		h = m[0]
		if len(m) > 1 {
			h = m[1]
		}
	default:
		if f := strings.Fields(name); len(f) > 0 {
			h = f[0]
		}
	}
	if h == "" {
		return "", fmt.Errorf("name %q gives no host name", name)
	}
	if !validName(h) {
		return "", fmt.Errorf("host name %q is not a Slurm node name (letters, digits, '.', '-', '_')", h)
	}
	return h, nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// CheckNames refuses a node name map that gives one name to two GUIDs
// (names holds the map's entries; the error names the name of the
// second-lowest GUID that repeats one, and both GUIDs).
func CheckNames(names map[uint64]string) error {
	guids := make([]uint64, 0, len(names))
	for g := range names {
		guids = append(guids, g)
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	first := map[string]uint64{}
	for _, g := range guids {
		n := names[g]
		if f, ok := first[n]; ok {
			return fmt.Errorf("%w: %q is given to 0x%016x and 0x%016x", ErrDuplicateName, n, f, g)
		}
		first[n] = g
	}
	return nil
}

// Options control the output.
type Options struct {
	// Name maps nodes to names (default: the NodeDescription).
	Name func(*model.Node) string
	// Host turns a CA's name into its host name (default: word).
	Host Rule
	// Source is said in the header comment (e.g. "discovery", "cache X").
	Source string
}

// Result is what Write left out, one line per reason.
type Result struct {
	// Switches is the number of switches written; Hosts the host names
	// (each once, in Slurm's order), for slurm.conf's NodeName.
	Switches int
	Hosts    []string
	// Warnings are CAs without a host name and switches with nothing
	// below them, which are not written.
	Warnings []string
}

type sw struct {
	n        *model.Node
	name     string
	level    int
	hosts    []string
	children []*sw
	written  bool
}

// Write writes f as topology.conf. A host whose CAs (or one CA's ports)
// hang off several leaves is listed under each of them, once per leaf;
// a switch is named by its name's first word with characters Slurm does
// not take replaced by '_', and with "-0x" and its GUID appended when
// two switches would share a name.
func Write(w io.Writer, f *model.Fabric, o Options) (Result, error) {
	name := o.Name
	if name == nil {
		name = func(n *model.Node) string { return n.Description() }
	}
	var res Result
	lv := model.Levels(f)
	var sws []*sw
	bySw := map[*model.Node]*sw{}
	count := map[string]int{}
	for _, n := range f.Nodes {
		if !n.IsSwitch() {
			continue
		}
		s := &sw{n: n, name: switchName(name(n)), level: lv[n]}
		count[s.name]++
		sws = append(sws, s)
		bySw[n] = s
	}
	for _, s := range sws {
		if count[s.name] > 1 || s.name == "" {
			if s.name == "" {
				s.name = "switch"
			}
			s.name = fmt.Sprintf("%s-0x%016x", s.name, s.n.GUID())
		}
	}
	hosts := map[string]bool{}
	hostOf := map[*model.Node]string{}
	for _, n := range f.Nodes {
		if n.Type() != smp.NodeCA {
			continue
		}
		h, err := o.Host.Host(name(n))
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("CA 0x%016x left out: %v", n.GUID(), err))
			continue
		}
		hostOf[n] = h
	}
	for _, s := range sws {
		seenH := map[string]bool{}
		seenS := map[*sw]bool{}
		for _, p := range s.n.Ports {
			if p == nil || p.Remote == nil {
				continue
			}
			m := p.Remote.Node
			if h, ok := hostOf[m]; ok && s.level == 1 && !seenH[h] {
				seenH[h] = true
				s.hosts = append(s.hosts, h)
				hosts[h] = true
			}
			if c := bySw[m]; c != nil && c.level == s.level-1 && !seenS[c] {
				seenS[c] = true
				s.children = append(s.children, c)
			}
		}
	}
	// Write the levels bottom up, switches in natural name order; a switch
	// with nothing written below it is left out.
	sort.SliceStable(sws, func(i, j int) bool {
		if sws[i].level != sws[j].level {
			return sws[i].level < sws[j].level
		}
		return natCmp(sws[i].name, sws[j].name) < 0
	})
	bw := bufio.NewWriter(w)
	src := o.Source
	if src == "" {
		src = "discovery"
	}
	levels := 0
	if len(sws) > 0 {
		levels = sws[len(sws)-1].level
	}
	fmt.Fprintf(bw, "# topology.conf for Slurm's topology/tree plugin, written by ibdiscover --slurm\n")
	lvs := "levels"
	if levels == 1 {
		lvs = "level"
	}
	fmt.Fprintf(bw, "# from %s: %d switches in %d %s, %d hosts (host names: rule %s)\n", src, len(sws), levels, lvs, len(hosts), o.Host)
	level := 0
	for _, s := range sws {
		var kids []string
		for _, c := range s.children {
			if c.written {
				kids = append(kids, c.name)
			}
		}
		if len(kids) == 0 && len(s.hosts) == 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("switch %s (0x%016x) left out: no hosts below it", s.name, s.n.GUID()))
			continue
		}
		if s.level != level {
			level = s.level
			what := "leaf switches and their hosts"
			if level > 1 {
				what = "switches and the switches below them"
			}
			fmt.Fprintf(bw, "# level %d: %s\n", level, what)
		}
		s.written = true
		res.Switches++
		line := "SwitchName=" + s.name
		if len(kids) > 0 {
			line += " Switches=" + Compress(kids)
		}
		if len(s.hosts) > 0 {
			line += " Nodes=" + Compress(s.hosts)
		}
		bw.WriteString(line + "\n")
	}
	for h := range hosts {
		res.Hosts = append(res.Hosts, h)
	}
	sort.Slice(res.Hosts, func(i, j int) bool { return less(splitHost(res.Hosts[i]), splitHost(res.Hosts[j])) })
	return res, bw.Flush()
}

// switchName is the first word of name with every character Slurm's
// hostlist syntax would misread replaced by '_'.
func switchName(name string) string {
	f := strings.Fields(name)
	if len(f) == 0 {
		return ""
	}
	b := []byte(f[0])
	for i, c := range b {
		if !validName(string(c)) {
			b[i] = '_'
		}
	}
	return string(b)
}
