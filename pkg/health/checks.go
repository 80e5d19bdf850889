package health

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// Finding kinds.
const (
	KindWidth         = "width"          // a link narrower than both ends allow, or ends that disagree
	KindSpeed         = "speed"          // a link slower than both ends allow, or ends that disagree
	KindStateMismatch = "state-mismatch" // one end of a link down while the other is up
	KindStuck         = "stuck"          // a port in Initialize or Armed
	KindDuplicateGUID = "duplicate-guid"
	KindDuplicateLID  = "duplicate-lid" // two ports with LID ranges that overlap
	KindNoLID         = "lid-0"         // an active port without a LID
	KindLMC           = "lmc"           // an LMC unlike the others', or a base LID not aligned to it
	KindContradiction = "contradiction" // discovery found the fabric contradicting itself
	KindCounter       = "counter"       // an error counter beyond its threshold
	KindCreditLoop    = "credit-loop"
	KindAdded         = "added"   // baseline: in the fabric, not in the baseline
	KindRemoved       = "removed" // baseline: in the baseline, not in the fabric
	KindChanged       = "changed" // baseline: present in both, different
)

// links: widths and speeds below what both ends support (pkg/pathav's
// link check), ends that disagree on them or on the port state, and
// ports stuck in Initialize or Armed.
func (c *checker) links() []Finding {
	var out []Finding
	for _, l := range c.linkChecks(true) {
		for _, p := range l.Problems {
			var kind string
			switch p.Kind {
			case pathav.Width:
				kind = KindWidth
			case pathav.Speed:
				kind = KindSpeed
			default:
				continue // mtu-vl's; no-portinfo is reported by discovery
			}
			sev := Warning
			if strings.HasPrefix(p.Msg, "ends disagree") {
				sev = Error
			}
			out = append(out, Finding{Kind: kind, Severity: sev, Place: c.portPlace(l.A), Peer: c.peerPlace(l.B), Message: p.Msg,
				Evidence: []string{
					fmt.Sprintf("active %s %s, supported by both %s %s, enabled on both %s %s",
						smp.WidthToken(l.Width), l.Speed, smp.WidthToken(l.SupportedWidth), l.SupportedSpeed, smp.WidthToken(l.EnabledWidth), l.EnabledSpeed),
				}})
		}
		a, b := l.A, l.B
		if a.HasInfo && b.HasInfo {
			sa, sb := a.Info.PortState, b.Info.PortState
			if (sa == smp.PortStateDown) != (sb == smp.PortStateDown) || (a.Info.PortPhysicalState == smp.PhysPolling) != (b.Info.PortPhysicalState == smp.PhysPolling) {
				out = append(out, Finding{Kind: KindStateMismatch, Severity: Error, Place: c.portPlace(a), Peer: c.peerPlace(b),
					Message:  "one end of the link is down while the other is up",
					Evidence: []string{stateText(a) + " here, " + stateText(b) + " at the peer"}})
			}
		}
	}
	for _, n := range c.f.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo || (pp.Num == 0 && !routing.PortActive(pp) && n.IsSwitch() && !(n.HasSwitchInfo && n.SwitchInfo.EnhancedPort0)) {
				continue
			}
			if pp.Num == 0 && n.IsSwitch() && !(n.HasSwitchInfo && n.SwitchInfo.EnhancedPort0) {
				continue // base port 0 has no state of its own
			}
			st := pp.Info.PortState
			if st != smp.PortStateInit && st != smp.PortStateArmed {
				continue
			}
			out = append(out, Finding{Kind: KindStuck, Severity: Error, Place: c.portPlace(pp), Peer: c.peerPlace(pp.Remote),
				Message:  fmt.Sprintf("port is %s, not Active: it passes no data (no subnet manager, or the SM failed to bring it up)", smp.PortStateText(st)),
				Evidence: []string{stateText(pp)}})
		}
	}
	return out
}

func stateText(pp *model.PhysPort) string {
	return fmt.Sprintf("PortState %s, PhysicalState %s", smp.PortStateText(pp.Info.PortState), smp.PhysStateText(pp.Info.PortPhysicalState))
}

// lport is a logical port with its LID range, for the ids check.
type lport struct {
	pp     *model.PhysPort
	lo, hi uint16
	lmc    uint8
}

// ids: duplicate GUIDs and contradictions discovery found, LID ranges
// that overlap, LID 0 on an active port, LMCs unlike the others' or base
// LIDs not aligned to their LMC.
func (c *checker) ids() []Finding {
	var out []Finding
	for _, p := range c.in.Result.Problems {
		kind := ""
		switch p.Kind {
		case discover.ProblemDuplicateGUID:
			kind = KindDuplicateGUID
		case discover.ProblemContradiction:
			if strings.Contains(p.Msg, "already belongs to port") {
				continue // a LID overlap (model.Fabric.RegisterPort): duplicate-lid below says it with both ports
			}
			kind = KindContradiction
		default:
			continue
		}
		pl := Place{Port: -1, Node: "?", Type: "node"}
		if len(p.Paths) > 0 {
			pl.DRPath = p.Paths[0].String()
			for _, n := range c.f.Nodes {
				if n.Path == p.Paths[0] {
					pl = c.nodePlace(n)
					break
				}
			}
		}
		var ev []string
		for _, q := range p.Paths {
			ev = append(ev, "DR path "+q.String())
		}
		out = append(out, Finding{Kind: kind, Severity: Critical, Place: pl, Message: p.Msg, Evidence: ev})
	}
	var ports []lport
	lmcs := map[uint8]int{}
	for _, n := range c.f.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo {
				continue
			}
			if n.IsSwitch() && pp.Num != 0 {
				continue // a switch's LID is its port 0's
			}
			base, lmc := pp.BaseLID(), pp.LMC()
			active := routing.PortActive(pp)
			if n.IsSwitch() {
				active = false
				for _, q := range n.Ports {
					if q != nil && q.Num != 0 && q.HasInfo && q.Info.PortState == smp.PortStateActive {
						active = true
					}
				}
			}
			if base == 0 {
				if active {
					out = append(out, Finding{Kind: KindNoLID, Severity: Error, Place: c.portPlace(pp),
						Message: "active port has no LID: nothing can reach it", Evidence: []string{"LID 0, " + stateText(pp)}})
				}
				continue
			}
			lo, hi := base, base+uint16(1)<<lmc-1
			ports = append(ports, lport{pp, lo, hi, lmc})
			if !n.IsSwitch() {
				lmcs[lmc]++
			}
			if base&(uint16(1)<<lmc-1) != 0 {
				out = append(out, Finding{Kind: KindLMC, Severity: Error, Place: c.portPlace(pp),
					Message:  fmt.Sprintf("base LID %d is not a multiple of 2^LMC (%d)", base, 1<<lmc),
					Evidence: []string{fmt.Sprintf("LID %d, LMC %d", base, lmc)}})
			}
		}
	}
	slices.SortFunc(ports, func(a, b lport) int { return int(a.lo) - int(b.lo) })
	// open holds the earlier ranges still open at b.lo (in order): the
	// others end before it, and before every later range
	var open []lport
	for _, b := range ports {
		k := 0
		for _, a := range open {
			if a.hi >= b.lo {
				open[k] = a
				k++
			}
		}
		open = open[:k]
		for j := len(open) - 1; j >= 0; j-- {
			a := open[j]
			pl := c.peerPlace(a.pp)
			out = append(out, Finding{Kind: KindDuplicateLID, Severity: Critical, Place: c.portPlace(b.pp), Peer: pl,
				Message:  fmt.Sprintf("LIDs %d-%d overlap LIDs %d-%d of another port", b.lo, b.hi, a.lo, a.hi),
				Evidence: []string{fmt.Sprintf("LID %d LMC %d here, LID %d LMC %d there", b.lo, b.lmc, a.lo, a.lmc)}})
		}
		open = append(open, b)
	}
	// the LMC most CAs have is the SM's; a CA with another disagrees
	var common uint8
	best := -1
	for l, k := range lmcs {
		if k > best || (k == best && l < common) {
			common, best = l, k
		}
	}
	if len(lmcs) > 1 {
		for _, p := range ports {
			if !p.pp.Node.IsSwitch() && p.lmc != common {
				out = append(out, Finding{Kind: KindLMC, Severity: Warning, Place: c.portPlace(p.pp),
					Message:  fmt.Sprintf("LMC %d, while %d other CA ports have LMC %d", p.lmc, best, common),
					Evidence: []string{fmt.Sprintf("LID %d LMC %d", p.lo, p.lmc)}})
			}
		}
	}
	return out
}

// mtuVL: each link's NeighborMTU and OperationalVLs against what OpenSM
// computes (the seed's link calculation, pkg/model's linkcalc through
// pkg/pathav): a value other than the SM's is an error, capabilities
// that differ (the link runs at the lower one) are information.
func (c *checker) mtuVL(cr *CheckResult) []Finding {
	if why := routing.NothingToCheck(c.f, false); why != "" {
		cr.Status, cr.Reason = Nothing, why
		return nil
	}
	var out []Finding
	for _, l := range c.linkChecks(false) {
		for _, p := range l.Problems {
			sev := Error
			switch p.Kind {
			case pathav.NeighborMTU, pathav.OperationalVLs:
			case pathav.MTUCapMismatch, pathav.VLCapMismatch:
				sev = Info
			case pathav.NoPortInfo:
				cr.Where = append(cr.Where, "link "+l.A.String()+" - "+l.B.String()+": "+p.Msg)
				continue
			default:
				continue
			}
			out = append(out, Finding{Kind: string(p.Kind), Severity: sev, Place: c.portPlace(l.A), Peer: c.peerPlace(l.B), Message: p.Msg,
				Evidence: []string{"MTU here " + l.MTUA.String(), "MTU at the peer " + l.MTUB.String(),
					"VLs here " + l.VLsA.String(), "VLs at the peer " + l.VLsB.String()}})
		}
	}
	return out
}

// counters: the PerfMgt error counters of every port against the
// thresholds (ibqueryerrors' defaults, or a threshold file's), as
// ibavtrack errors reads them.
func (c *checker) counters(ctx context.Context, cr *CheckResult) ([]Finding, error) {
	if c.in.Querier == nil {
		cr.Status, cr.Reason = NotRun, "the fabric is not live (a loaded cache has no counters)"
		return nil, nil
	}
	if why := routing.NothingToCheck(c.f, false); why != "" {
		cr.Status, cr.Reason = NotRun, "PerfMgt queries are LID-routed: "+why
		return nil, nil
	}
	cfg := c.in.Counters
	cfg.Querier = c.in.Querier
	cfg.ClearErrors, cfg.ClearCounts = false, false
	rep, err := portcounters.Read(ctx, cfg, c.f)
	if err != nil {
		return nil, err
	}
	c.rep.MADs += rep.MADs
	c.rep.Counters = rep
	for _, e := range rep.Failures {
		cr.Where = append(cr.Where, e.Error())
	}
	var out []Finding
	th := &rep.Thresholds
	for i := range rep.Nodes {
		nr := &rep.Nodes[i]
		for k := range nr.Ports {
			s := &nr.Ports[k]
			if s.Err != nil || !s.Over {
				continue
			}
			pp := nr.Node.Port(s.Port)
			var pl Place
			if pp != nil {
				pl = c.portPlace(pp)
			} else {
				pl = c.nodePlace(nr.Node)
				pl.Port = s.Port
			}
			var ev, names []string
			for j, v := range s.Errors {
				if th.Over(j, v) {
					names = append(names, pma.ErrorNames[j])
					ev = append(ev, fmt.Sprintf("%s %d (threshold %d)", pma.ErrorNames[j], v, th.Limit[j]))
				}
			}
			var peer *Place
			if pp != nil {
				peer = c.peerPlace(pp.Remote)
			}
			out = append(out, Finding{Kind: KindCounter, Severity: Warning, Place: pl, Peer: peer,
				Message: "error counters beyond their thresholds: " + strings.Join(names, ", "), Evidence: ev})
		}
	}
	return out, nil
}

// routes: every switch-to-LID route through the forwarding tables, as
// ibhops --check-routes (pkg/routing.Check).
func (c *checker) routes(ctx context.Context, cr *CheckResult) ([]Finding, error) {
	if err := c.readTables(ctx); err != nil {
		return nil, err
	}
	if !c.tablesStatus(cr) {
		return nil, nil
	}
	h, _ := routing.CheckHops(c.f, c.in.Engine, c.tabs)
	res := routing.Check(c.f, c.tabs, h)
	var out []Finding
	for i := range res.Findings {
		fd := &res.Findings[i]
		sev := Error
		switch fd.Kind {
		case routing.KindLoop, routing.KindBlackHole:
			sev = Critical
		case routing.KindLonger:
			sev = Warning
		case routing.KindNoTable:
			if len(c.tabsWhere) > 0 {
				continue // already in Where: a table not read is not a problem found
			}
		}
		pl := c.nodePlace(fd.At)
		if fd.Kind != routing.KindNoTable && fd.Kind != routing.KindLonger {
			pl.Port = int(fd.Port)
		}
		dest := c.nodePlace(fd.Dest.Node)
		dest.Port, dest.PortGUID, dest.LID = int(fd.Dest.Phys.Num), fd.Dest.GUID, fd.DLID
		ev := []string{fmt.Sprintf("to LID %d (%s %q port %d): %d route(s) affected", fd.DLID, dest.Type, dest.Node, dest.Port, fd.Routes)}
		msg := fd.Kind
		switch fd.Kind {
		case routing.KindLoop:
			var s []string
			for _, n := range fd.Cycle {
				s = append(s, fmt.Sprintf("%q", c.name(n)))
			}
			s = append(s, s[0])
			msg = "routing loop through switches " + strings.Join(s, " -> ")
		case routing.KindBlackHole:
			msg = fmt.Sprintf("black hole: the switch has no usable route (entry %d)", fd.Port)
		case routing.KindLonger:
			msg = fmt.Sprintf("route of %d hops, %s has %d", fd.Hops, c.in.Engine, fd.MinHops)
		case routing.KindDownPort:
			msg = fmt.Sprintf("routed to port %d, which has no link", fd.Port)
		case routing.KindTransitCA:
			msg = fmt.Sprintf("routed to port %d, to a CA that does not own the LID", fd.Port)
		case routing.KindNotActive:
			msg = fmt.Sprintf("routed to port %d, whose link is not Active", fd.Port)
		case routing.KindNoTable:
			msg = "the switch has no forwarding table"
		}
		if fd.Err != nil && fd.Kind == routing.KindNotActive {
			ev = append(ev, fd.Err.Error())
		}
		out = append(out, Finding{Kind: fd.Kind, Severity: sev, Place: pl, Peer: &dest, Message: msg, Evidence: ev})
	}
	return out, nil
}

// baseline: what changed against a known-good fabric, as ibdiscover
// --diff prints it (pkg/topology.WriteDiff), one finding per line.
func (c *checker) baseline(cr *CheckResult) ([]Finding, error) {
	if c.in.Baseline == nil {
		cr.Status, cr.Reason = NotRun, "no baseline given"
		return nil, nil
	}
	var buf bytes.Buffer
	keys := c.in.BaselineKeys
	if keys == 0 {
		keys = topology.DiffDefault
	}
	namer := topology.Namer(topology.DescName)
	if c.in.Name != nil {
		namer = c.in.Name
	}
	if err := topology.WriteDiff(&buf, c.in.Baseline, c.f, keys, namer); err != nil {
		return nil, err
	}
	// one finding per node: WriteDiff writes each node's header
	// (vendid=..., the GUID line, the node line) and then its ports
	var blocks [][]string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		body := strings.TrimPrefix(strings.TrimPrefix(line, "< "), "> ")
		if strings.HasPrefix(body, "vendid=") || len(blocks) == 0 {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], line)
	}
	var out []Finding
	for _, b := range blocks {
		old, cur := false, false
		var g uint64
		for _, line := range b {
			old = old || strings.HasPrefix(line, "< ")
			cur = cur || strings.HasPrefix(line, "> ")
			if g == 0 {
				g = guidIn(line)
			}
		}
		kind, msg := KindChanged, "differs from the baseline"
		switch {
		case old && !cur:
			kind, msg = KindRemoved, "in the baseline, not in the fabric"
		case cur && !old:
			kind, msg = KindAdded, "in the fabric, not in the baseline"
		}
		pl := Place{Port: -1, Type: "node", NodeGUID: g}
		if n := c.f.NodeByGUID(g); n != nil {
			pl = c.nodePlace(n)
		} else if n := c.in.Baseline.NodeByGUID(g); n != nil {
			pl = c.nodePlace(n)
			pl.DRPath = "" // the baseline's route, not one that leads there now
		}
		out = append(out, Finding{Kind: kind, Severity: Warning, Place: pl, Message: msg, Evidence: b})
	}
	return out, nil
}

// guidIn is the node GUID of a topology header line
// ("switchguid=0x...", "caguid=0x...", "routerguid=0x..."), 0 for others.
func guidIn(s string) uint64 {
	for _, pre := range []string{"switchguid=0x", "caguid=0x", "routerguid=0x"} {
		i := strings.Index(s, pre)
		if i < 0 || len(s) < i+len(pre)+16 {
			continue
		}
		i += len(pre) - 2
		var g uint64
		if _, err := fmt.Sscanf(s[i+2:i+18], "%016x", &g); err == nil {
			return g
		}
	}
	return 0
}
