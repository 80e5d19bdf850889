package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// afterSweep, when set (tests), runs after each sweep's report.
var afterSweep func(sweep int, fab *attach.Fabric)

func watchCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "re-resolve the AV to each DST every interval and print one line per change",
		UsageText: "ibavtrack watch [--interval D] [--count N] [--hold N] [--src SRC] [--counters] [--json] [fabric options] DST...\n" +
			"   (DST, SRC: LID, port or node GUID, or node name; SRC defaults to the local port;\n" +
			"   with --counters DST may be omitted)",
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "interval", Value: 10 * time.Second, Usage: "time `D` between sweeps (at least 1s)"},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` sweeps (0: until interrupted)"},
			&cli.IntFlag{Name: "hold", Value: 1, Usage: "each sweep takes a reference on the current AV and keeps it `N` sweeps, as a consumer with sends in flight (0: none)"},
			&cli.StringFlag{Name: "src", Usage: "source port `SRC` (default: the port the tool is attached at)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per change"},
			&cli.BoolFlag{Name: "counters", Usage: "also read every port's PerfMgt error counters each sweep and print a line for each link whose counters went up"},
		}, commonFlags()...),
		Action: func(c *cli.Context) error { return watchCmd(c, stdout, stderr) },
	}
}

// target is one watched destination.
type target struct {
	spec string
	tr   model.AVTracker
	// routes holds the route text of every AV still in the tracker.
	routes map[*model.AV]string
	// held[i] is the AV referenced by sweep i (nil: none).
	held []*model.AV
	// last is the last AV resolved (also after it was cleared).
	last      *model.AV
	lastRoute string
	lastErr   string
}

type watcher struct {
	w       io.Writer
	json    bool
	hold    int
	targets []*target
	now     func() time.Time
}

// MinInterval is the shortest --interval: a sweep rediscovers the whole
// fabric and reads every forwarding table, so shorter would only load
// the fabric's management network (and the SM's) in a tight loop.
const MinInterval = time.Second

// minInterval is MinInterval; tests lower it to watch many sweeps fast.
var minInterval = MinInterval

func watchCmd(c *cli.Context, stdout, stderr io.Writer) error {
	withCounters := c.Bool("counters")
	if c.NArg() == 0 && !withCounters {
		return cliapp.Usage("watch", "at least one DST is required (or --counters)")
	}
	interval, count, hold := c.Duration("interval"), c.Int("count"), c.Int("hold")
	switch {
	case interval <= 0:
		return cliapp.Usage("--interval "+interval.String(), "must be positive")
	case interval < minInterval:
		return cliapp.Usage("--interval "+interval.String(), "must be at least "+minInterval.String()+" (every sweep rediscovers the fabric)")
	case count < 0:
		return cliapp.Usage("--count "+strconv.Itoa(count), "must be 0 or more")
	case hold < 0 || hold > 1000:
		return cliapp.Usage("--hold "+strconv.Itoa(hold), "must be 0..1000")
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	wt := &watcher{w: stdout, json: c.Bool("json"), hold: hold, now: time.Now}
	for _, spec := range c.Args().Slice() {
		t := &target{spec: spec, routes: make(map[*model.AV]string)}
		t.tr.Init(func(av *model.AV) { delete(t.routes, av) })
		wt.targets = append(wt.targets, t)
	}
	defer func() {
		for _, t := range wt.targets {
			t.tr.Destroy()
		}
	}()
	checked := false
	var prev *portcounters.Snapshot
	for sweep := 0; count == 0 || sweep < count; sweep++ {
		if sweep > 0 {
			select {
			case <-c.Context.Done():
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted"))
			case <-time.After(interval):
			}
		}
		if err := s.sweep(c.Context, len(wt.targets) > 0); err != nil {
			if cliapp.Code(err) == exitcode.Interrupted {
				return err
			}
			fmt.Fprintf(stderr, "ibavtrack: sweep %d: %v\n", sweep+1, err)
			continue
		}
		if sweep == 0 {
			if why := routing.NothingToCheck(s.res.Fabric, true); why != "" {
				s.partial(stderr)
				return nothingToCheck(why)
			}
		}
		if !checked && s.complete() {
			// The first complete sweep decides whether the ports named
			// exist: a typo is bad input, not a port that went away.
			if err := checkSpecs(s.res.Fabric, c.String("src"), c.Args().Slice()); err != nil {
				return err
			}
			checked = true
		}
		s.partial(stderr)
		if withCounters {
			rep, err := s.readCounters(c.Context)
			if err != nil {
				if cliapp.Code(err) == exitcode.Interrupted {
					return err
				}
				fmt.Fprintf(stderr, "ibavtrack: sweep %d: %v\n", sweep+1, err)
			} else {
				for _, f := range rep.Failures {
					fmt.Fprintf(stderr, "ibavtrack: sweep %d: PMA %v\n", sweep+1, f)
				}
				snap := rep.Snapshot(wt.now())
				if prev != nil {
					for _, l := range portcounters.LinkIncreases(s.res.Fabric, *prev, snap) {
						if err := wt.printCounters(&l); err != nil {
							return cliapp.Exit(exitcode.Fatal, err)
						}
					}
				}
				prev = &snap
			}
		}
		src, slid, srcErr := sourcePort(s.res.Fabric, c.String("src"))
		for _, t := range wt.targets {
			if err := wt.update(t, sweep, s, src, slid, srcErr); err != nil {
				return cliapp.Exit(exitcode.Fatal, err)
			}
		}
		if afterSweep != nil {
			afterSweep(sweep, s.fab)
		}
	}
	return nil
}

// checkSpecs resolves --src (if given) and every DST: one that is not in
// the fabric is a usage error naming it.
func checkSpecs(f *model.Fabric, src string, dsts []string) error {
	if src != "" {
		if _, err := resolve(f, "--src", src); err != nil {
			return err
		}
	}
	for _, d := range dsts {
		if _, err := resolve(f, "DST", d); err != nil {
			return err
		}
	}
	return nil
}

// sourcePort is the watch's source port and SLID: --src (the LID given,
// else the port's base LID) or the local port (its base LID).
func sourcePort(f *model.Fabric, spec string) (*model.Port, uint16, error) {
	if spec == "" {
		if p := localPort(f); p != nil && p.BaseLID() != 0 {
			return p, p.BaseLID(), nil
		}
		return nil, 0, errors.New("the local port has no LID")
	}
	p, lid, err := f.ResolveLID(spec, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("SRC %v", err)
	}
	return p, lid, nil
}

// routeText names a route by the ports it leaves through.
func routeText(p *pathav.Path) string {
	parts := make([]string, len(p.Hops))
	for i, h := range p.Hops {
		parts[i] = pathav.PortName(h.Out)
	}
	if len(parts) == 0 {
		return "(local)"
	}
	return strings.Join(parts, " ")
}

// update resolves one target after a sweep, updates its tracker and
// prints a line when something changed.
func (wt *watcher) update(t *target, sweep int, s *session, src *model.Port, slid uint16, srcErr error) error {
	var av *model.AV
	var route, fail string
	if srcErr != nil {
		fail = srcErr.Error()
	} else if dst, dlid, err := s.res.Fabric.ResolveLID(t.spec, nil); err != nil {
		fail = err.Error()
	} else if p, err := pathav.ResolveLIDs(s.res.Fabric, s.tables, src, slid, dst, dlid); err != nil {
		fail = err.Error()
	} else {
		a := p.AV
		av, route = &a, routeText(p)
	}

	var err error
	cur, _ := t.tr.GetCurrent(false)
	switch {
	case av == nil:
		if fail != t.lastErr || cur != nil {
			t.tr.ClearCurrent()
			err = wt.print(t, "unreachable", fail, nil, t.retired())
		}
		t.lastErr = fail
	case cur == nil || changes(cur, t.routes[cur], av, route) != nil:
		t.routes[av] = route
		if e := t.tr.SetCurrent(av); e != nil {
			return e
		}
		kind, diff := "new", []change(nil)
		if t.last != nil {
			kind, diff = "change", changes(t.last, t.lastRoute, av, route)
		}
		if kind == "new" || len(diff) > 0 || t.lastErr != "" {
			err = wt.print(t, kind, "", diff, t.retired())
		}
		t.last, t.lastRoute, t.lastErr = av, route, ""
	}

	// This sweep's reference on the current AV; release the one taken
	// hold sweeps ago.
	var ref *model.AV
	if wt.hold > 0 {
		ref, _ = t.tr.GetCurrent(true)
	}
	t.held = append(t.held, ref)
	if i := sweep - wt.hold; i >= 0 && i < len(t.held) {
		if old := t.held[i]; old != nil {
			if e := t.tr.DecRef(old); e != nil {
				return fmt.Errorf("%s: releasing AV: %w", t.spec, e)
			}
			t.held[i] = nil
		}
	}
	return err
}

// retiredAV is an AV no longer current but still referenced.
type retiredAV struct {
	av   *model.AV
	refs uint32
}

func (t *target) retired() []retiredAV {
	var out []retiredAV
	for _, av := range t.tr.Retired() {
		n, ok := t.tr.Refs(av)
		if ok {
			out = append(out, retiredAV{av, n})
		}
	}
	return out
}

// change is one field of an AV that changed.
type change struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

func rateText(code uint8) string { return pathav.GbpsText(code) + " Gb/s" }

// changes lists the fields that differ between two AVs (nil: none).
func changes(a *model.AV, aRoute string, b *model.AV, bRoute string) []change {
	var out []change
	add := func(field, x, y string) {
		if x != y {
			out = append(out, change{field, x, y})
		}
	}
	num := func(v int) string { return strconv.Itoa(v) }
	add("dlid", num(int(a.DLID)), num(int(b.DLID)))
	add("slid", num(int(a.SLID)), num(int(b.SLID)))
	add("sl", num(int(a.SL)), num(int(b.SL)))
	add("mtu", smp.MTUText(a.MTU), smp.MTUText(b.MTU))
	add("rate", rateText(a.Rate), rateText(b.Rate))
	add("hops", num(int(a.HopCount)), num(int(b.HopCount)))
	add("mtu set by", a.MTULimit, b.MTULimit)
	add("rate set by", a.RateLimit, b.RateLimit)
	add("route", aRoute, bRoute)
	return out
}

func avText(av *model.AV) string {
	return fmt.Sprintf("dlid %d slid %d sl %d mtu %s rate %s hops %d", av.DLID, av.SLID, av.SL,
		smp.MTUText(av.MTU), rateText(av.Rate), av.HopCount)
}

type retiredJSON struct {
	AV   avJSON `json:"av"`
	Refs uint32 `json:"refs"`
}

type eventJSON struct {
	Schema  string        `json:"schema"`
	Time    string        `json:"time"`
	Target  string        `json:"target"` // the DST as given
	Event   string        `json:"event"`
	Error   string        `json:"error,omitempty"`
	Changes []change      `json:"changes,omitempty"`
	AV      *avJSON       `json:"av,omitempty"`
	Route   string        `json:"route,omitempty"`
	Retired []retiredJSON `json:"retired"`
}

// print writes one event line.
func (wt *watcher) print(t *target, kind, fail string, diff []change, retired []retiredAV) error {
	now := wt.now().Format("2006-01-02T15:04:05.000Z07:00")
	cur, _ := t.tr.GetCurrent(false)
	if wt.json {
		ev := eventJSON{Schema: "ibdiag.av-event/v1", Time: now, Target: t.spec, Event: kind, Error: fail, Changes: diff, Retired: []retiredJSON{}}
		if cur != nil {
			j := avJSONOf(cur)
			ev.AV, ev.Route = &j, t.routes[cur]
		}
		for _, r := range retired {
			ev.Retired = append(ev.Retired, retiredJSON{avJSONOf(r.av), r.refs})
		}
		return writeJSONLine(wt.w, ev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", now, t.spec)
	switch kind {
	case "new":
		fmt.Fprintf(&b, "AV %s via %s", avText(cur), t.routes[cur])
	case "unreachable":
		fmt.Fprintf(&b, "unreachable: %s", fail)
	default:
		if len(diff) == 0 {
			fmt.Fprintf(&b, "reachable again: AV %s", avText(cur))
		}
		for i, d := range diff {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s → %s", d.Field, d.Old, d.New)
		}
	}
	if len(retired) > 0 {
		b.WriteString("; retired, still referenced:")
		for _, r := range retired {
			fmt.Fprintf(&b, " [%s: %d ref]", avText(r.av), r.refs)
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(wt.w, b.String())
	return err
}

// counterPortJSON names one end of a link in a counter event (a and b:
// objects, as a and b are in links's JSON).
type counterPortJSON struct {
	Node     string `json:"node"`
	NodeGUID string `json:"node_guid"`
	Port     int    `json:"port"`
}

func counterPortOf(p *model.PhysPort) counterPortJSON {
	return counterPortJSON{Node: p.Node.Description(), NodeGUID: fmt.Sprintf("0x%016x", p.Node.GUID()), Port: int(p.Num)}
}

type counterEndJSON struct {
	counterPortJSON
	Delta map[string]uint64 `json:"delta"`
}

// counterEventSchema names the JSON form of a counter-increase event
// (docs/counter-event.schema.json).
const counterEventSchema = "ibdiag.counter-event/v1"

type counterEventJSON struct {
	Schema   string           `json:"schema"`
	Time     string           `json:"time"`
	Event    string           `json:"event"`
	A        counterPortJSON  `json:"a"`
	B        counterPortJSON  `json:"b"`
	Interval float64          `json:"interval_s"`
	Ends     []counterEndJSON `json:"ends"`
}

// printCounters writes one line for a link whose error counters went up.
func (wt *watcher) printCounters(l *portcounters.LinkIncrease) error {
	now := wt.now().Format("2006-01-02T15:04:05.000Z07:00")
	if !wt.json {
		_, err := fmt.Fprintf(wt.w, "%s %s\n", now, l.Text())
		return err
	}
	ev := counterEventJSON{Schema: counterEventSchema, Time: now, Event: "counters", A: counterPortOf(l.A), B: counterPortOf(l.B), Interval: l.Interval.Seconds()}
	for _, e := range l.Ends {
		d := map[string]uint64{}
		for i, v := range e.Delta {
			if v != 0 {
				d[pma.ErrorNames[i]] = v
			}
		}
		ev.Ends = append(ev.Ends, counterEndJSON{counterPortJSON: counterPortOf(e.Port), Delta: d})
	}
	return writeJSONLine(wt.w, ev)
}

func writeJSONLine(w io.Writer, v any) error {
	var b strings.Builder
	if err := writeJSONCompact(&b, v); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
