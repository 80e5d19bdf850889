package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// mcastSchema names mcast's JSON form (docs/mcast.schema.json).
const mcastSchema = "ibdiag.mcast/v1"

func mcastCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "mcast",
		Usage:     "list the multicast groups the SA knows (as saquery -g), or their members (--members, as saquery -m)",
		UsageText: "ibavtrack mcast [--members [MLID]] [--smkey KEY] [--json] [--output FILE] [fabric options]",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "members", Usage: "list the members (as saquery -m; with MLID, only that group's member GIDs, as saquery -m MLID)"},
			&cli.StringFlag{Name: "smkey", Usage: "the SM_Key `KEY` the SA queries carry (as saquery's; OpenSM lists every member only to its SM_Key; default 0)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			outputFlag(),
		}, commonFlags()...),
		Action: withOutput(stdout, stderr, mcastCmd),
	}
}

// parseSMKey reads an SM_Key as saquery does (strtoull base 0: decimal,
// 0x hex or 0 octal).
func parseSMKey(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	k, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return 0, cliapp.Usage("--smkey "+v, "not a number (decimal, or hex with 0x)")
	}
	return k, nil
}

// parseMLID reads a multicast LID (0xc000-0xfffe).
func parseMLID(v string) (uint16, error) {
	n, err := strconv.ParseUint(v, 0, 16)
	if err != nil || n < 0xc000 || n > 0xfffe {
		return 0, cliapp.Usage(v, "not a multicast LID (0xc000-0xfffe)")
	}
	return uint16(n), nil
}

// saClient finds the SM (the local port's MasterSMLID) and returns a
// client of its SA with the session's timeout, retries and key.
func (s *session) saClient(ctx context.Context, key uint64) (*sa.Client, error) {
	smLID, err := sa.MasterSMLID(ctx, s.fab, s.settings.Timeout)
	if ctx.Err() != nil {
		return nil, cliapp.Exit(exitcode.Interrupted, errors.New("interrupted while looking for the SM"))
	}
	if errors.Is(err, sa.ErrNoSM) {
		return nil, cliapp.Exit(exitcode.NothingChecked, err)
	}
	if err != nil {
		return nil, cliapp.Exit(exitcode.Fatal, fmt.Errorf("looking for the SM: %w", err))
	}
	c, err := sa.NewClient(s.fab, smLID)
	if err != nil {
		return nil, cliapp.Exit(exitcode.NothingChecked, err)
	}
	if s.settings.Timeout > 0 {
		c.Timeout = s.settings.Timeout
	}
	c.Retries = s.settings.Retries
	c.SMKey = key
	return c, nil
}

// saFail is the exit error of an SA query that failed.
func saFail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return cliapp.Exit(exitcode.Interrupted, fmt.Errorf("interrupted while asking the SA for %s", what))
	}
	return cliapp.Exit(exitcode.Fatal, fmt.Errorf("asking the SA for %s: %w", what, err))
}

func mcastCmd(c *cli.Context, stdout, stderr io.Writer) error {
	key, err := parseSMKey(c.String("smkey"))
	if err != nil {
		return err
	}
	members := c.Bool("members")
	var mlid uint16
	switch {
	case c.NArg() > 1:
		return cliapp.Usage(strings.Join(c.Args().Slice(), " "), "mcast takes at most one MLID")
	case c.NArg() == 1 && !members:
		return cliapp.Usage(c.Args().First(), "an MLID is taken with --members only")
	case c.NArg() == 1:
		if mlid, err = parseMLID(c.Args().First()); err != nil {
			return err
		}
	}
	s, err := openSession(c)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := c.Context
	cl, err := s.saClient(ctx, key)
	if err != nil {
		return err
	}
	recs, cut, err := cl.MCMemberRecords(ctx)
	if err != nil {
		return saFail(ctx, "its MCMemberRecords", err)
	}
	l := mcastList{members: members, mlid: mlid, smLID: cl.SMLID(), recs: recs}
	if cut {
		l.partial = "the SA's MCMemberRecord table came in one MAD without RMPP sizing (under libumad2sim): records past the MAD are missing"
	}
	if members {
		// Names as saquery finds them: a GetTable of every NodeRecord,
		// the member's port GUID matched against NodeInfo.PortGUID.
		nodes, ncut, err := cl.NodeRecords(ctx)
		if errors.Is(err, sa.ErrMultiSegment) {
			// A transport without RMPP (the embedded simulator's
			// Exchange): each member's NodeRecord on its own.
			nodes, ncut, err = memberNodes(ctx, cl, recs)
		}
		if err != nil {
			return saFail(ctx, "its NodeRecords", err)
		}
		l.names = map[uint64]string{}
		for i := range nodes {
			n := &nodes[i]
			if _, ok := l.names[n.NodeInfo.PortGUID]; !ok {
				l.names[n.NodeInfo.PortGUID] = n.NodeDescription.String()
			}
		}
		if ncut {
			l.namesCut = true
		}
	}
	if mlid != 0 && !l.hasMLID() && key != 0 {
		// Under an SM_Key a group without members lists nothing: the
		// groups are what the SA lists to the key 0.
		cl.SMKey = 0
		groups, _, err := cl.MCMemberRecords(ctx)
		if err != nil {
			return saFail(ctx, "its multicast groups", err)
		}
		l.known = groups
	}
	if mlid != 0 && !l.hasMLID() {
		return cliapp.Exit(exitcode.Usage, fmt.Errorf("MLID 0x%04x: no such multicast group (the SA lists %s)", mlid, l.mlids()))
	}
	if c.Bool("json") {
		err = writeJSON(stdout, l.json())
	} else {
		err = l.writeText(stdout)
	}
	if err != nil {
		return cliapp.Exit(exitcode.Fatal, err)
	}
	if n := l.unnamed(); n > 0 && l.namesCut {
		fmt.Fprintf(stderr, "ibavtrack: the SA's NodeRecord table came in one MAD without RMPP sizing: %d members named <unknown> (as saquery names them)\n", n)
	}
	if l.partial != "" {
		return cliapp.Exit(exitcode.Partial, errors.New("partial result printed: "+l.partial))
	}
	return nil
}

// mcastList is what mcast prints.
type mcastList struct {
	members  bool
	mlid     uint16 // only this group's members (0: all)
	smLID    uint16
	recs     []sa.MCMemberRecord
	known    []sa.MCMemberRecord // the groups, when recs are members under an SM_Key
	names    map[uint64]string   // port GUID → NodeDescription
	namesCut bool
	partial  string
}

func (l *mcastList) hasMLID() bool {
	for _, rs := range [][]sa.MCMemberRecord{l.recs, l.known} {
		for i := range rs {
			if rs[i].MLID == l.mlid {
				return true
			}
		}
	}
	return false
}

// memberNodes reads the NodeRecord of each member port, one Get each.
func memberNodes(ctx context.Context, cl *sa.Client, recs []sa.MCMemberRecord) ([]sa.NodeRecord, bool, error) {
	var out []sa.NodeRecord
	for i := range recs {
		if recs[i].PortGID.IsZero() {
			continue
		}
		n, err := cl.NodeRecordByPortGUID(ctx, recs[i].PortGID.InterfaceID())
		if errors.Is(err, sa.ErrNoRecords) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, n)
	}
	return out, false, nil
}

// mlids lists the groups' MLIDs, for the line about an unknown one.
func (l *mcastList) mlids() string {
	var out []string
	seen := map[uint16]bool{}
	for i := range l.known {
		if m := l.known[i].MLID; !seen[m] {
			seen[m] = true
			out = append(out, fmt.Sprintf("0x%04x", m))
		}
	}
	for i := range l.recs {
		if m := l.recs[i].MLID; !seen[m] {
			seen[m] = true
			out = append(out, fmt.Sprintf("0x%04x", m))
		}
	}
	if len(out) == 0 {
		return "no group"
	}
	return strings.Join(out, ", ")
}

// name is a member's NodeDescription, "<unknown>" as saquery prints it
// when no NodeRecord has its port GUID.
func (l *mcastList) name(r *sa.MCMemberRecord) (string, bool) {
	n, ok := l.names[r.PortGID.InterfaceID()]
	if !ok {
		return "<unknown>", false
	}
	return n, true
}

func (l *mcastList) unnamed() int {
	if !l.members {
		return 0
	}
	n := 0
	for i := range l.recs {
		if _, ok := l.name(&l.recs[i]); !ok && !l.recs[i].PortGID.IsZero() {
			n++
		}
	}
	return n
}

// writeText prints the records as saquery -g, -m or -m MLID does.
func (l *mcastList) writeText(w io.Writer) error {
	var b []byte
	for i := range l.recs {
		r := &l.recs[i]
		switch {
		case !l.members:
			b = fmt.Appendf(b, "MCMemberRecord group dump:\n"+
				"\t\tMGID....................%s\n"+
				"\t\tMlid....................0x%X\n"+
				"\t\tMtu.....................0x%X\n"+
				"\t\tpkey....................0x%X\n"+
				"\t\tRate....................0x%X\n"+
				"\t\tSL......................0x%X\n",
				gidText(r.MGID), r.MLID, r.MTUSelector<<6|r.MTU, r.PKey, r.RateSelector<<6|r.Rate, r.SL)
		case l.mlid != 0:
			if r.MLID == l.mlid {
				name, _ := l.name(r)
				b = fmt.Appendf(b, "\t\tPortGid.................%s (%s)\n", gidText(r.PortGID), name)
			}
		default:
			name, _ := l.name(r)
			proxy := 0
			if r.ProxyJoin {
				proxy = 1
			}
			b = fmt.Appendf(b, "MCMemberRecord member dump:\n"+
				"\t\tMGID....................%s\n"+
				"\t\tMlid....................0x%X\n"+
				"\t\tPortGid.................%s\n"+
				"\t\tScopeState..............0x%X\n"+
				"\t\tProxyJoin...............0x%X\n"+
				"\t\tNodeDescription.........%s\n",
				gidText(r.MGID), r.MLID, gidText(r.PortGID), r.Scope<<4|r.JoinState, proxy, name)
		}
	}
	_, err := w.Write(b)
	return err
}

// mcastRecordJSON is one MCMemberRecord, every field.
type mcastRecordJSON struct {
	MGID               string  `json:"mgid"`
	MLID               uint16  `json:"mlid"`
	PortGID            string  `json:"port_gid"`
	Node               *string `json:"node,omitempty"`
	QKey               string  `json:"qkey"`
	MTUSelector        uint8   `json:"mtu_selector"`
	MTU                uint8   `json:"mtu"`
	MTUBytes           int     `json:"mtu_bytes"`
	TClass             uint8   `json:"tclass"`
	PKey               string  `json:"pkey"`
	RateSelector       uint8   `json:"rate_selector"`
	Rate               uint8   `json:"rate"`
	RateGbps           float64 `json:"rate_gbps"`
	PacketLifeSelector uint8   `json:"packet_life_selector"`
	PacketLife         uint8   `json:"packet_life"`
	SL                 uint8   `json:"sl"`
	FlowLabel          uint32  `json:"flow_label"`
	HopLimit           uint8   `json:"hop_limit"`
	Scope              uint8   `json:"scope"`
	JoinState          uint8   `json:"join_state"`
	ProxyJoin          bool    `json:"proxy_join"`
}

func mcastRecordJSONOf(r *sa.MCMemberRecord) mcastRecordJSON {
	return mcastRecordJSON{
		MGID: gidText(r.MGID), MLID: r.MLID, PortGID: gidText(r.PortGID), QKey: fmt.Sprintf("0x%08x", r.QKey),
		MTUSelector: r.MTUSelector, MTU: r.MTU, MTUBytes: smp.MTUBytes(r.MTU), TClass: r.TClass,
		PKey: fmt.Sprintf("0x%04x", r.PKey), RateSelector: r.RateSelector, Rate: r.Rate, RateGbps: smp.RateGbps(r.Rate),
		PacketLifeSelector: r.PacketLifeSelector, PacketLife: r.PacketLife, SL: r.SL, FlowLabel: r.FlowLabel,
		HopLimit: r.HopLimit, Scope: r.Scope, JoinState: r.JoinState, ProxyJoin: r.ProxyJoin,
	}
}

func (l *mcastList) json() any {
	out := struct {
		Schema  string            `json:"schema"`
		Kind    string            `json:"kind"`
		SMLID   uint16            `json:"sm_lid"`
		MLID    *uint16           `json:"mlid"`
		Partial bool              `json:"partial"`
		Why     string            `json:"partial_reason,omitempty"`
		Records []mcastRecordJSON `json:"records"`
	}{Schema: mcastSchema, Kind: "groups", SMLID: l.smLID, Partial: l.partial != "", Why: l.partial, Records: []mcastRecordJSON{}}
	if l.members {
		out.Kind = "members"
	}
	if l.mlid != 0 {
		out.MLID = &l.mlid
	}
	for i := range l.recs {
		r := &l.recs[i]
		if l.mlid != 0 && r.MLID != l.mlid {
			continue
		}
		j := mcastRecordJSONOf(r)
		if l.members {
			name, _ := l.name(r)
			j.Node = &name
		}
		out.Records = append(out.Records, j)
	}
	return out
}

// gidText prints a GID as glibc's inet_ntop prints an IPv6 address:
// the longest run of two or more zero words as "::" (the first of equal
// runs), lowercase hex words, and the last 32 bits as a dotted quad
// after six zero words or five and ffff.
func gidText(g sa.GID) string {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(g[2*i])<<8 | uint16(g[2*i+1])
	}
	best, bestLen, cur, curLen := -1, 0, -1, 0
	for i := 0; i < 8; i++ {
		if w[i] == 0 {
			if cur < 0 {
				cur, curLen = i, 0
			}
			curLen++
			if curLen > bestLen {
				best, bestLen = cur, curLen
			}
		} else {
			cur = -1
		}
	}
	if bestLen < 2 {
		best = -1
	}
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if best >= 0 && i >= best && i < best+bestLen {
			if i == best {
				b.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			b.WriteByte(':')
		}
		if i == 6 && best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff) {
			fmt.Fprintf(&b, "%d.%d.%d.%d", g[12], g[13], g[14], g[15])
			break
		}
		fmt.Fprintf(&b, "%x", w[i])
	}
	if best >= 0 && best+bestLen == 8 {
		b.WriteByte(':')
	}
	return b.String()
}
