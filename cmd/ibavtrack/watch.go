package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/avwatch"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
)

// afterSweep, when set (tests), runs after each sweep's report.
var afterSweep func(sweep int, fab *attach.Fabric)

func watchCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "re-resolve the AV to each DST every interval and print one line per change",
		UsageText: "ibavtrack watch [--interval D] [--full-interval D] [--count N] [--hold N] [--src SRC] [--counters] [--json] [fabric options] DST...\n" +
			"   ibavtrack watch --mcast MGID|MLID [--interval D] [--count N] [--hold N] [--json] [fabric options]\n" +
			"   (DST, SRC: LID, port or node GUID, or node name; SRC defaults to the local port;\n" +
			"   with --counters DST may be omitted)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "interval", Value: "10s", Usage: "time `D` between sweeps (seconds, or a duration such as 1m30s; at least 1s)"},
			&cli.StringFlag{Name: "full-interval", Value: "5m", Usage: "longest time `D` between full sweeps; the sweeps between are light (every switch's SwitchInfo and the watched routes) and, where those show a change, rediscover only what changed (0: every sweep full)"},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` sweeps (0: until interrupted)"},
			&cli.IntFlag{Name: "hold", Value: 1, Usage: "each sweep takes a reference on the current AV and keeps it `N` sweeps, as a consumer with sends in flight (0: none)"},
			&cli.StringFlag{Name: "src", Usage: "source port `SRC` (default: the port the tool is attached at)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per change"},
			&cli.BoolFlag{Name: "counters", Usage: "also read every port's PerfMgt error counters each sweep and print a line for each link whose counters went up"},
			&cli.StringSliceFlag{Name: "mcast", Usage: "instead of DSTs, track the AV of the multicast group `MGID|MLID` (from the SA's MCMemberRecord; repeatable)"},
		}, commonFlags()...),
		Action: func(c *cli.Context) error { return watchCmd(c, stdout, stderr) },
	}
}

type watcher struct {
	w    io.Writer
	json bool
	now  func() time.Time
}

// MinInterval is the shortest --interval: a full sweep rediscovers the
// whole fabric and reads every forwarding table, and even a light one
// reads every switch, so shorter would only load the fabric's
// management network (and the SM's) in a tight loop.
const MinInterval = time.Second

// minInterval is MinInterval; tests lower it to watch many sweeps fast.
var minInterval = MinInterval

func watchCmd(c *cli.Context, stdout, stderr io.Writer) error {
	withCounters := c.Bool("counters")
	groups := c.StringSlice("mcast")
	if len(groups) > 0 && (c.NArg() > 0 || withCounters || c.String("src") != "") {
		return cliapp.Usage("--mcast", "watches multicast groups only: not with DST, --counters or --src")
	}
	if c.NArg() == 0 && !withCounters && len(groups) == 0 {
		return cliapp.Usage("watch", "at least one DST is required (or --counters)")
	}
	interval, err := parseInterval(c.String("interval"))
	if err != nil {
		return cliapp.Usage("--interval "+c.String("interval"), err.Error())
	}
	fullInterval, err := parseInterval(c.String("full-interval"))
	if err != nil {
		return cliapp.Usage("--full-interval "+c.String("full-interval"), err.Error())
	}
	count, hold := c.Int("count"), c.Int("hold")
	switch {
	case interval <= 0:
		return cliapp.Usage("--interval "+c.String("interval"), "must be positive")
	case interval < minInterval:
		return cliapp.Usage("--interval "+c.String("interval"), "must be at least "+minInterval.String()+" (every sweep reads every switch)")
	case fullInterval < 0:
		return cliapp.Usage("--full-interval "+c.String("full-interval"), "must be 0 (every sweep full) or more")
	case count < 0:
		return cliapp.Usage("--count "+strconv.Itoa(count), "must be 0 or more")
	case hold < 0 || hold > 1000:
		return cliapp.Usage("--hold "+strconv.Itoa(hold), "must be 0..1000")
	}
	if len(groups) > 0 {
		return watchMcast(c, stdout, stderr, groups, interval, count, hold)
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	wt := &watcher{w: stdout, json: c.Bool("json"), now: time.Now}
	avw := avwatch.New(hold, c.Args().Slice())
	defer avw.Close()
	checked := false
	sched := avwatch.Schedule{FullInterval: fullInterval}
	if fullInterval > 0 {
		// Full sweeps keep their answers for incremental ones.
		s.cfg.Memo = &discover.Memo{}
	}
	var prev *portcounters.Snapshot
	for sweep := 0; count == 0 || sweep < count; sweep++ {
		if sweep > 0 {
			select {
			case <-c.Context.Done():
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted"))
			case <-time.After(interval):
			}
		}
		now := time.Now()
		light := !sched.Full(now, avw, !s.complete())
		if light {
			lr, err := s.lightSweep(c.Context, avw)
			if cliapp.Code(err) == exitcode.Interrupted {
				return err
			}
			light = err == nil && !lr.Changed
			if err == nil && lr.Changed {
				// Rediscover what changed; a full sweep where that
				// cannot be trusted.
				err = s.incremental(c.Context, avw, lr, c.String("src"))
				if cliapp.Code(err) == exitcode.Interrupted {
					return err
				}
				light = err == nil
			}
		}
		var err error
		if !light {
			err = s.sweep(c.Context, avw.Len() > 0)
			sched.Ran(now)
		}
		if s.fab.PeerGone() && cliapp.Code(err) != exitcode.Interrupted {
			// ibsim ended or restarted: the client will never work
			// again. Attach anew and sweep on the new one.
			if rerr := s.reattach(c.Context); rerr != nil {
				if cliapp.Code(rerr) == exitcode.Interrupted {
					return rerr
				}
				fmt.Fprintf(stderr, "ibavtrack: sweep %d: ibsim went away, and attaching again failed: %v\n", sweep+1, rerr)
				continue
			}
			fmt.Fprintf(stderr, "ibavtrack: sweep %d: ibsim went away (ended or restarted); attached again: %s\n", sweep+1, s.fab.Desc)
			err = s.sweep(c.Context, avw.Len() > 0)
			sched.Ran(time.Now())
		}
		if err != nil {
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
		src, slid, srcErr := avwatch.SourcePort(s.res.Fabric, c.String("src"), localPort(s.res.Fabric))
		avw.PathRecord = s.pathRecords(c.Context)
		err = avw.Update(sweep, s.res.Fabric, s.tables, src, slid, srcErr, func(ev *avwatch.Event) error {
			if c.Context.Err() != nil {
				// An SA query cut by the interrupt is not a change.
				return c.Context.Err()
			}
			return wt.print(ev)
		})
		if c.Context.Err() != nil {
			return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while asking the SA"))
		}
		if err != nil {
			return cliapp.Exit(exitcode.Fatal, err)
		}
		if afterSweep != nil {
			afterSweep(sweep, s.fab)
		}
	}
	return nil
}

// lightSweep runs a light sweep over the last sweep's fabric (see
// discover.LightSweep); an error (other than an interrupt) means a full
// sweep should say what it is.
func (s *session) lightSweep(ctx context.Context, avw *avwatch.Watcher) (*discover.LightResult, error) {
	q := s.settings.Querier(s.fab)
	var local *model.PhysPort
	if p := localPort(s.res.Fabric); p != nil {
		local = p.Phys
	}
	res, err := discover.LightSweep(ctx, q, s.res.Fabric, avw.Probes(s.tables, local), q.Window.Max())
	if err != nil {
		if ctx.Err() != nil {
			return nil, cliapp.Exit(exitcode.Interrupted, errors.New("interrupted during a light sweep"))
		}
		return nil, err
	}
	return res, nil
}

// incremental rediscovers what the light sweep lr found changed
// (discover.Rediscover: the changed switches' ports, what is new behind
// them, without what they cut off) and reads the forwarding table blocks
// of the watched routes from src (avwatch.RouteTables); an error (other
// than an interrupt) means a full sweep should run: the rediscovery
// cannot be trusted (discover.ErrUntrusted says why) or failed.
func (s *session) incremental(ctx context.Context, avw *avwatch.Watcher, lr *discover.LightResult, src string) error {
	interrupted := func() error {
		return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted during an incremental rediscovery"))
	}
	res, _, err := discover.Rediscover(ctx, s.fab, s.cfg, lr)
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		return err
	}
	q := s.settings.Querier(s.fab)
	p, _, _ := avwatch.SourcePort(res.Fabric, src, localPort(res.Fabric))
	t, err := avw.RouteTables(ctx, q, res.Fabric, p)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return err
	}
	s.res, s.tables, s.lftErrors = res, t, len(q.Errors())
	return nil
}

// pathRecords returns the sweep's PathRecord function: it asks the SA at
// the local port's MasterSMLID (looked up at its first call). Once no SA
// answers (no SM, a timeout), it fails at once for the rest of the sweep,
// so that a silent SA costs one timeout a sweep, not one a destination.
func (s *session) pathRecords(ctx context.Context) avwatch.PathRecordFunc {
	var c *sa.Client
	var noSA error
	looked := false
	return func(slid, dlid uint16) (sa.PathRecord, error) {
		if !looked {
			looked = true
			lid, err := sa.MasterSMLID(ctx, s.fab, s.settings.Timeout)
			if err == nil {
				c, err = sa.NewClient(s.fab, lid)
			}
			if err != nil {
				noSA = err
			} else {
				if s.settings.Timeout > 0 {
					c.Timeout = s.settings.Timeout
				}
				c.Retries = s.settings.Retries
			}
		}
		if noSA != nil {
			return sa.PathRecord{}, noSA
		}
		pr, err := pathav.QueryPathRecord(ctx, c, slid, dlid)
		if err != nil && pathav.NoSA(err) {
			noSA = err
		}
		return pr, err
	}
}

// parseInterval reads --interval: a number of seconds (10, 2.5) or a Go
// duration (10s, 1m30s, 500ms).
func parseInterval(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
			return 0, errors.New("not a usable number of seconds")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New("not a time: give seconds (10) or a duration (10s, 1m30s)")
	}
	return d, nil
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

type retiredJSON struct {
	AV   avJSON `json:"av"`
	Refs uint32 `json:"refs"`
}

type eventJSON struct {
	Schema  string           `json:"schema"`
	Time    string           `json:"time"`
	Target  string           `json:"target"` // the DST as given
	Event   string           `json:"event"`
	Error   string           `json:"error,omitempty"`
	Changes []avwatch.Change `json:"changes,omitempty"`
	Was     string           `json:"was,omitempty"`
	AV      *avJSON          `json:"av,omitempty"`
	Route   string           `json:"route,omitempty"`
	// AVSource is where av comes from ("sa" or "computed"), with the
	// reason the SA gave none (AVSourceNote), as path's JSON says.
	AVSource     string        `json:"av_source,omitempty"`
	AVSourceNote string        `json:"av_source_note,omitempty"`
	Retired      []retiredJSON `json:"retired"`
}

// print writes one event line.
func (wt *watcher) print(ev *avwatch.Event) error {
	now := wt.now().Format("2006-01-02T15:04:05.000Z07:00")
	if wt.json {
		j := eventJSON{Schema: "ibdiag.av-event/v1", Time: now, Target: ev.Target, Event: string(ev.Kind), Error: ev.Err, Changes: ev.Changes, Was: ev.Was, Retired: []retiredJSON{}}
		if ev.AV != nil {
			a := avJSONOf(ev.AV)
			j.AV, j.Route = &a, ev.Route
			j.AVSource, j.AVSourceNote = ev.Source, ev.SourceNote
		}
		for _, r := range ev.Retired {
			j.Retired = append(j.Retired, retiredJSON{avJSONOf(r.AV), r.Refs})
		}
		return writeJSONLine(wt.w, j)
	}
	_, err := fmt.Fprintf(wt.w, "%s %s: %s\n", now, ev.Target, ev.Text())
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
