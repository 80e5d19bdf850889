package attach

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// SummaryListed is how many failed SMPs a summary lists one by one.
const SummaryListed = 5

// summaryTop is how many nodes a summary counts by name.
const summaryTop = 5

// ReportProblems writes the problems a discovery found to w, one line
// each: "<tool>: <problem>" for one that left part of the fabric unseen,
// "<tool>: warning: <problem>" for an inconsistency. bad and warn paint
// those prefixes (termout), or are nil.
func ReportProblems(w io.Writer, tool string, problems []discover.Problem, bad, warn func(string) string) {
	for _, p := range problems {
		if p.Incomplete() {
			fmt.Fprintf(w, "%s %v\n", paint(bad, tool+":"), p)
		} else {
			fmt.Fprintf(w, "%s %v\n", paint(warn, tool+": warning:"), p)
		}
	}
}

func paint(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// ReportSMPErrors writes the failed SMPs to w. With -e, -v or -d every one
// is a line "<tool>: SMP failed: <error>"; otherwise the first
// SummaryListed are, followed by a summary: how many more, and the counts
// per attribute and per node (the node the SMP was addressed to; for a
// NodeInfo probe, the node it was sent through). f, if not nil, names the
// nodes. prefix paints the line prefix (termout), or is nil.
func (s Settings) ReportSMPErrors(w io.Writer, tool string, errs []*discover.SMPError, f *model.Fabric, prefix func(string) string) {
	if prefix == nil {
		prefix = func(s string) string { return s }
	}
	all := s.ShowErrors || s.Verbose > 0 || len(errs) <= SummaryListed
	// the order SMPs failed in depends on timing: print them by DR path
	errs = append([]*discover.SMPError(nil), errs...)
	sort.SliceStable(errs, func(i, j int) bool { return lessSMP(errs[i], errs[j]) })
	for i, e := range errs {
		if !all && i == SummaryListed {
			break
		}
		fmt.Fprintf(w, "%s %v\n", prefix(tool+": SMP failed:"), e)
	}
	if all {
		return
	}
	fmt.Fprintf(w, "%s %d more SMPs failed (-e or -v lists every one); %d in all:\n", prefix(tool+":"), len(errs)-SummaryListed, len(errs))
	type count struct {
		key string
		n   int
	}
	tally := func(key func(*discover.SMPError) string) []count {
		m := map[string]int{}
		for _, e := range errs {
			m[key(e)]++
		}
		out := make([]count, 0, len(m))
		for k, n := range m {
			out = append(out, count{k, n})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].n != out[j].n {
				return out[i].n > out[j].n
			}
			return out[i].key < out[j].key
		})
		return out
	}
	join := func(cs []count, top int) string {
		var b strings.Builder
		for i, c := range cs {
			if i == top {
				fmt.Fprintf(&b, ", %d more", len(cs)-top)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", c.key, c.n)
		}
		return b.String()
	}
	byAttr := tally(func(e *discover.SMPError) string { return smp.AttrName(e.Attr) })
	fmt.Fprintf(w, "%s   by attribute: %s\n", prefix(tool+":"), join(byAttr, len(byAttr)))
	names := map[string]string{}
	if f != nil {
		for _, n := range f.Nodes {
			names[n.Path.String()] = n.Description()
		}
	}
	byNode := tally(func(e *discover.SMPError) string {
		p := e.Path
		if e.Attr == smp.AttrNodeInfo && p.Len() > 0 {
			p = p.Retract()
		}
		k := "DR path " + p.String()
		if n, ok := names[p.String()]; ok {
			k += fmt.Sprintf(" (%q)", n)
		}
		return k
	})
	fmt.Fprintf(w, "%s   by node: %s\n", prefix(tool+":"), join(byNode, summaryTop))
}

// Note writes "<tool>: <msg>" to w with -v (or -d).
func (s Settings) Note(w io.Writer, tool, msg string) {
	if s.Verbose > 0 {
		fmt.Fprintf(w, "%s: %s\n", tool, msg)
	}
}

// DiscoveryErr describes Result.Err (why a discovery stopped early) for
// the user, naming the limit that stopped it.
func (s Settings) DiscoveryErr(err error) string {
	if errors.Is(err, discover.ErrTooManyNodes) {
		return fmt.Sprintf("discovery stopped at the --max-nodes limit of %d nodes (the fabric has more)", s.MaxNodes)
	}
	return err.Error()
}

// lessSMP orders failed SMPs by DR path (port numbers compared as
// numbers), then attribute and modifier.
func lessSMP(a, b *discover.SMPError) bool {
	for i := 0; i <= int(a.Path.Len()) && i <= int(b.Path.Len()); i++ {
		if pa, pb := a.Path.Port(i), b.Path.Port(i); pa != pb {
			return pa < pb
		}
	}
	if a.Path.Len() != b.Path.Len() {
		return a.Path.Len() < b.Path.Len()
	}
	if a.Attr != b.Attr {
		return a.Attr < b.Attr
	}
	return a.Mod < b.Mod
}
