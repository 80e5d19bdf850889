package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/avwatch"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// mcastEventSchema names the JSON form of a multicast group's event
// (docs/mcast-event.schema.json).
const mcastEventSchema = "ibdiag.mcast-event/v1"

// watchMcast is watch --mcast: every interval it asks the SA for its
// multicast groups and follows each group's AV.
func watchMcast(c *cli.Context, stdout, stderr io.Writer, specs []string, interval time.Duration, count, hold int) error {
	var groups []*avwatch.Group
	for _, spec := range specs {
		g, err := avwatch.NewGroup(hold, spec)
		if err != nil {
			return cliapp.Usage("--mcast "+spec, avwatch.ErrGroupSpec.Error())
		}
		defer g.Close()
		groups = append(groups, g)
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := c.Context
	wt := &watcher{w: stdout, json: c.Bool("json"), now: time.Now}
	for sweep := 0; count == 0 || sweep < count; sweep++ {
		if sweep > 0 {
			select {
			case <-ctx.Done():
				return cliapp.Exit(exitcode.Interrupted, errors.New("interrupted"))
			case <-time.After(interval):
			}
		}
		recs, err := s.mcastGroups(ctx)
		if err != nil && sweep > 0 && s.fab.PeerGone() && cliapp.Code(err) != exitcode.Interrupted {
			// ibsim ended or restarted: attach anew, as watch does.
			if rerr := s.reattach(ctx); rerr != nil {
				if cliapp.Code(rerr) == exitcode.Interrupted {
					return rerr
				}
				fmt.Fprintf(stderr, "ibavtrack: sweep %d: ibsim went away, and attaching again failed: %v\n", sweep+1, rerr)
				continue
			}
			fmt.Fprintf(stderr, "ibavtrack: sweep %d: ibsim went away (ended or restarted); attached again: %s\n", sweep+1, s.fab.Desc)
			recs, err = s.mcastGroups(ctx)
		}
		if err != nil {
			if sweep == 0 || cliapp.Code(err) == exitcode.Interrupted {
				return err
			}
			fmt.Fprintf(stderr, "ibavtrack: sweep %d: %v\n", sweep+1, errors.Unwrap(err))
			continue
		}
		if sweep == 0 {
			// A group the SA does not list at the start is bad input,
			// not a group that went away.
			for _, g := range groups {
				if g.Find(recs) == nil {
					l := mcastList{known: recs}
					return cliapp.Exit(exitcode.Usage, fmt.Errorf("--mcast %s: no such multicast group (the SA lists %s)", g.Spec(), l.mlids()))
				}
			}
		}
		for _, g := range groups {
			if err := g.Update(sweep, recs, wt.printGroup); err != nil {
				return cliapp.Exit(exitcode.Fatal, err)
			}
		}
		if afterSweep != nil {
			afterSweep(sweep, s.fab)
		}
	}
	return nil
}

// mcastGroups asks the SA (at the local port's MasterSMLID, looked up
// again each sweep: the SM may move) for every group, with an SM_Key of
// 0: one record per group.
func (s *session) mcastGroups(ctx context.Context) ([]sa.MCMemberRecord, error) {
	cl, err := s.saClient(ctx, 0)
	if err != nil {
		return nil, err
	}
	recs, _, err := cl.MCMemberRecords(ctx)
	if err != nil {
		return nil, saFail(ctx, "its multicast groups", err)
	}
	return recs, nil
}

// groupAVJSON is a multicast group's AV.
type groupAVJSON struct {
	MGID     string  `json:"mgid"`
	MLID     uint16  `json:"mlid"`
	MTU      uint8   `json:"mtu"`
	MTUBytes int     `json:"mtu_bytes"`
	Rate     uint8   `json:"rate"`
	RateGbps float64 `json:"rate_gbps"`
	SL       uint8   `json:"sl"`
	QKey     string  `json:"qkey"`
	PKey     string  `json:"pkey"`
	HopLimit uint8   `json:"hop_limit"`
	Scope    uint8   `json:"scope"`
}

func groupAVJSONOf(g *avwatch.GroupAV) groupAVJSON {
	return groupAVJSON{MGID: gidText(g.MGID), MLID: g.MLID, MTU: g.MTU, MTUBytes: smp.MTUBytes(g.MTU), Rate: g.Rate,
		RateGbps: smp.RateGbps(g.Rate), SL: g.SL, QKey: fmt.Sprintf("0x%08x", g.QKey), PKey: fmt.Sprintf("0x%04x", g.PKey),
		HopLimit: g.HopLimit, Scope: g.Scope}
}

type groupRetiredJSON struct {
	AV   groupAVJSON `json:"av"`
	Refs uint32      `json:"refs"`
}

type groupEventJSON struct {
	Schema    string             `json:"schema"`
	Time      string             `json:"time"`
	Target    string             `json:"target"`
	Event     string             `json:"event"`
	Recreated bool               `json:"recreated"`
	Changes   []avwatch.Change   `json:"changes"`
	AV        *groupAVJSON       `json:"av,omitempty"`
	Retired   []groupRetiredJSON `json:"retired"`
}

// printGroup writes one multicast group event line.
func (wt *watcher) printGroup(ev *avwatch.GroupEvent) error {
	now := wt.now().Format("2006-01-02T15:04:05.000Z07:00")
	if !wt.json {
		_, err := fmt.Fprintf(wt.w, "%s %s: %s\n", now, ev.Target, ev.Text())
		return err
	}
	j := groupEventJSON{Schema: mcastEventSchema, Time: now, Target: ev.Target, Event: string(ev.Kind), Recreated: ev.Recreated,
		Changes: append([]avwatch.Change{}, ev.Changes...), Retired: []groupRetiredJSON{}}
	if ev.AV != nil {
		a := groupAVJSONOf(ev.AV)
		j.AV = &a
	}
	for _, r := range ev.Retired {
		j.Retired = append(j.Retired, groupRetiredJSON{groupAVJSONOf(r.AV), r.Refs})
	}
	return writeJSONLine(wt.w, j)
}
