package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
)

// --- --check-routes ---

type jsonCheck struct {
	Schema   string        `json:"schema"` // "ibdiag.route-check/v1"
	Summary  jsonSummary   `json:"summary"`
	Findings []jsonFinding `json:"findings"`
}

type jsonSummary struct {
	Clean bool `json:"clean"`
	// Reason says why nothing was checked (then Clean is false).
	Reason        string `json:"reason,omitempty"`
	Switches      int    `json:"switches"`
	LIDs          int    `json:"lids"`
	Routes        int    `json:"routes"`
	Broken        int    `json:"broken_routes"`
	Longer        int    `json:"longer_routes"`
	BlackHoles    int    `json:"black_holes"`
	DownPorts     int    `json:"down_ports"`
	Loops         int    `json:"loops"`
	NoTables      int    `json:"no_tables"`
	TransitCAs    int    `json:"transit_cas"`
	NotActive     int    `json:"not_active"`
	LFTReadErrors int    `json:"lft_read_errors"`
	// UnownedLIDs and UnownedRoutes: LIDs no discovered port owns that
	// forwarding tables still route, and the routes to them followed.
	UnownedLIDs   int `json:"unowned_lids,omitempty"`
	UnownedRoutes int `json:"unowned_routes,omitempty"`
	// Unrouted: routes the routing engine's rule leaves out on purpose
	// (unrouted-by-engine findings; not broken).
	Unrouted int `json:"unrouted_by_engine,omitempty"`
}

type jsonFinding struct {
	Kind        string     `json:"kind"`
	LID         uint16     `json:"lid"`
	Destination *jsonPort  `json:"destination"` // null: no discovered port owns the LID
	Switch      jsonPort   `json:"switch"`
	Port        *int       `json:"port,omitempty"` // the switch's LFT entry for the LID
	Cycle       []jsonPort `json:"cycle,omitempty"`
	Routes      int        `json:"routes"`
	Hops        int        `json:"hops,omitempty"`
	MinHops     int        `json:"min_hops,omitempty"`
	Message     string     `json:"message"`
}

// swText is `switch "sw1" (0x...)`.
func (t *tool) swText(n *model.Node) string {
	return fmt.Sprintf("switch %q (0x%016x)", t.name(n), n.GUID())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// message is a finding's text (without its kind).
func (t *tool) message(fd *routing.Finding) string {
	dest := fmt.Sprintf("lid %d, which no discovered port owns", fd.DLID)
	if fd.Dest != nil {
		dest = t.describe(fd.Dest)
	}
	routes := plural(fd.Routes, "route", "routes")
	end, stop := "end", "stop"
	if fd.Routes == 1 {
		end, stop = "ends", "stops"
	}
	switch fd.Kind {
	case routing.KindBlackHole:
		why := fmt.Sprintf("has no route (entry %d)", fd.Port)
		switch {
		case fd.Port == 0:
			why = "routes it to port 0 (itself)"
		case fd.Port != routing.NoRoute:
			why = fmt.Sprintf("routes it to port %d of %d", fd.Port, fd.At.NumPorts())
		}
		return fmt.Sprintf("to %s: %s %s; %s %s there", dest, t.swText(fd.At), why, routes, end)
	case routing.KindUnrouted:
		return fmt.Sprintf("to %s: %s has no route (entry %d): %s; %s %s there (information, not a problem)", dest, t.swText(fd.At), fd.Port, t.unroutedRule, routes, end)
	case routing.KindDownPort:
		return fmt.Sprintf("to %s: %s routes it to port %d, which has no link; %s %s there", dest, t.swText(fd.At), fd.Port, routes, end)
	case routing.KindTransitCA:
		r := fd.At.Port(int(fd.Port)).Remote.Node
		return fmt.Sprintf("to %s: %s routes it to port %d, to %s %q that does not own it; %s %s there", dest, t.swText(fd.At), fd.Port, nodeType(r), t.name(r), routes, end)
	case routing.KindNoTable:
		return fmt.Sprintf("to %s: %s has no forwarding table read; %s %s there", dest, t.swText(fd.At), routes, stop)
	case routing.KindLoop:
		var s []string
		for _, c := range fd.Cycle {
			s = append(s, fmt.Sprintf("%q", t.name(c)))
		}
		s = append(s, fmt.Sprintf("%q", t.name(fd.Cycle[0])))
		return fmt.Sprintf("to %s: switches %s forward it in a circle; %s caught", dest, strings.Join(s, " -> "), routes)
	case routing.KindNotActive:
		return fmt.Sprintf("to %s: %s routes it to port %d, whose link is not Active (%v); %s %s there", dest, t.swText(fd.At), fd.Port, fd.Err, routes, end)
	case routing.KindLonger:
		return fmt.Sprintf("to %s: from %s %d hops (first port %d), %s %d", dest, t.swText(fd.At), fd.Hops, fd.Port, t.leastLabel(), fd.MinHops)
	}
	return fd.Kind
}

// leastLabel names what a route's length is compared with.
func (t *tool) leastLabel() string {
	if t.engine == routing.MinHop {
		return "min-hop"
	}
	return string(t.engine) + " hops"
}

func (t *tool) checkRoutes(w io.Writer) error {
	// A check that checks nothing is not clean: say why (exit 5).
	var res *routing.CheckResult
	readErrs := 0
	if t.nothing = routing.NothingToCheck(t.f, true); t.nothing != "" {
		res = &routing.CheckResult{Switches: len(t.f.Switches())}
	} else {
		tabs, err := t.readTables()
		if err != nil {
			return err
		}
		readErrs = len(t.q.Errors())
		// The least hop counts routes are compared with: min-hop, or the
		// chosen engine's matrix (an engine that routes around min-hop, as
		// updn, has longer routes by design).
		// (nue's routes are judged by the hops they program.)
		h, notes := routing.CheckHops(t.f, t.engine, tabs)
		t.notes = append(t.notes, notes...)
		t.hopsNote(h)
		res = routing.Check(t.f, tabs, h)
		// Routes the engine leaves out by its own rule are information.
		if rule, why := routing.UnroutedRule(t.f, t.engine); rule != nil {
			t.unroutedRule = why
			res.Excuse(rule)
		}
		if !res.Clean() {
			t.problem = true
		}
	}
	clean := res.Clean() && t.nothing == ""
	sum := jsonSummary{
		Clean: clean, Switches: res.Switches, LIDs: res.LIDs, Routes: res.Routes,
		Broken: res.Broken, Longer: res.Longer,
		BlackHoles: res.Count(routing.KindBlackHole), DownPorts: res.Count(routing.KindDownPort),
		Loops: res.Count(routing.KindLoop), NoTables: res.Count(routing.KindNoTable),
		TransitCAs: res.Count(routing.KindTransitCA), NotActive: res.Count(routing.KindNotActive), LFTReadErrors: readErrs,
		UnownedLIDs: res.Unowned, UnownedRoutes: res.UnownedRoutes, Unrouted: res.Unrouted,
	}
	if t.nothing != "" {
		sum.Reason = "nothing to check: " + t.nothing
	}
	if t.json {
		jc := jsonCheck{Schema: "ibdiag.route-check/v1", Summary: sum, Findings: []jsonFinding{}}
		for i := range res.Findings {
			fd := &res.Findings[i]
			jf := jsonFinding{Kind: fd.Kind, LID: fd.DLID, Switch: t.nodePort(fd.At),
				Routes: fd.Routes, Hops: fd.Hops, MinHops: fd.MinHops, Message: t.message(fd)}
			if fd.Dest != nil {
				d := t.jport(fd.Dest.Phys)
				jf.Destination = &d
			}
			if fd.Kind != routing.KindNoTable {
				p := int(fd.Port)
				jf.Port = &p
			}
			for _, c := range fd.Cycle {
				jf.Cycle = append(jf.Cycle, t.nodePort(c))
			}
			jc.Findings = append(jc.Findings, jf)
		}
		return writeJSON(w, jc)
	}
	shown := map[string]int{}
	for i := range res.Findings {
		fd := &res.Findings[i]
		shown[fd.Kind]++
		if t.limit > 0 && shown[fd.Kind] > t.limit {
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", fd.Kind, t.message(fd))
	}
	for _, k := range []string{routing.KindBlackHole, routing.KindDownPort, routing.KindLoop, routing.KindNoTable, routing.KindTransitCA, routing.KindNotActive, routing.KindLonger, routing.KindUnrouted} {
		if t.limit > 0 && shown[k] > t.limit {
			fmt.Fprintf(w, "%s: ... %d more not shown (--limit 0 shows all)\n", k, shown[k]-t.limit)
		}
	}
	fmt.Fprintf(w, "Routes checked: %d (%s x %s)\n", res.Routes, plural(res.Switches, "switch", "switches"), plural(res.LIDs, "LID", "LIDs"))
	fmt.Fprintf(w, "Broken routes: %d (black holes %d, down ports %d, loops %d, missing tables %d, through a CA %d, links not Active %d)\n",
		res.Broken, sum.BlackHoles, sum.DownPorts, sum.Loops, sum.NoTables, sum.TransitCAs, sum.NotActive)
	if res.Unrouted > 0 {
		fmt.Fprintf(w, "Left unrouted by %s on purpose: %s (information)\n", t.engine, plural(res.Unrouted, "route", "routes"))
	}
	if res.Unowned > 0 {
		fmt.Fprintf(w, "Routes to LIDs no port owns: %d (%s still routed)\n", res.UnownedRoutes, plural(res.Unowned, "LID", "LIDs"))
	}
	fmt.Fprintf(w, "Longer than %s: %d\n", t.leastLabel(), res.Longer)
	if readErrs > 0 {
		fmt.Fprintf(w, "LFT blocks not read: %d\n", readErrs)
	}
	status := "clean"
	switch {
	case t.nothing != "":
		status = sum.Reason
	case !res.Clean():
		status = "PROBLEMS FOUND"
	}
	_, err := fmt.Fprintf(w, "Result: %s\n", status)
	return err
}

// nodePort is a node's JSON port: a switch's port 0.
func (t *tool) nodePort(n *model.Node) jsonPort {
	if z := n.Port(0); z != nil {
		return t.jport(z)
	}
	for _, pp := range n.Ports {
		if pp != nil {
			return t.jport(pp)
		}
	}
	return jsonPort{Type: nodeType(n), Name: t.name(n), NodeGUID: hex16(n.GUID()), PortGUID: hex16(n.Info.PortGUID)}
}
