package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// --- --check-mcast ---

type jsonMCastCheck struct {
	Schema   string             `json:"schema"` // "ibdiag.mcast-check/v1"
	Summary  jsonMCastSummary   `json:"summary"`
	Groups   []jsonMCastGroup   `json:"groups"`
	Findings []jsonMCastFinding `json:"findings"`
}

type jsonMCastSummary struct {
	Clean bool `json:"clean"`
	// Reason says why nothing was checked (then Clean is false).
	Reason string `json:"reason,omitempty"`
	// SMLID is the LID of the SM whose SA listed the groups (0: none).
	SMLID   uint16 `json:"sm_lid"`
	Groups  int    `json:"groups"`
	Checked int    `json:"checked"`
	// MembersFrom is "sa" (the SA listed the members: --smkey) or "tree"
	// (the SA listed none: members are the end ports the trees reach).
	MembersFrom   string `json:"members_from"`
	Findings      int    `json:"findings"`
	MFTReadErrors int    `json:"mft_read_errors"`
}

type jsonMCastGroup struct {
	MGID     string  `json:"mgid"`
	MLID     uint16  `json:"mlid"`
	MTU      uint8   `json:"mtu"`  // MTU code (4: 2048)
	Rate     uint8   `json:"rate"` // rate code (3: 10 Gb/s)
	RateGbps float64 `json:"rate_gbps"`
	Switches int     `json:"switches"`
	Links    int     `json:"links"`
	Members  int     `json:"members"`
	Reached  int     `json:"reached"`
	Unknown  int     `json:"unknown_members"`
}

type jsonMCastFinding struct {
	Kind    string     `json:"kind"`
	MGID    string     `json:"mgid"`
	MLID    uint16     `json:"mlid"`
	Switch  *jsonPort  `json:"switch,omitempty"`
	Port    *int       `json:"port,omitempty"`
	Member  *jsonPort  `json:"member,omitempty"`
	Cycle   []jsonPort `json:"cycle,omitempty"`
	Message string     `json:"message"`
}

func mgidText(g [16]byte) string { return net.IP(g[:]).String() }

// mcastGroups asks the SA for every MCMemberRecord and returns the
// groups by MLID, with their members when the SA lists them (a record
// with a PortGID). When the answer spans several MADs and the transport
// carries only one (ibsim's), or fills one MAD without RMPP sizing (as
// OpenSM's answer under libumad2sim, cut to one MAD), the SA is asked
// port by port (each CA or
// router port with a LID, each switch's port 0: the groups it is a
// member of), with a note; groups without a member are then not seen.
func (t *tool) mcastGroups(c *sa.Client) ([]routing.MCastGroup, error) {
	byMGID := map[[16]byte]int{}
	var out []routing.MCastGroup
	add := func(tab sa.Table) error {
		for i := 0; i < tab.Len(); i++ {
			var r sa.MCMemberRecord
			if err := r.UnmarshalBinary(tab.Record(i)); err != nil {
				return fmt.Errorf("MCMemberRecord %d: %w", i, err)
			}
			k, ok := byMGID[r.MGID]
			if !ok {
				k = len(out)
				byMGID[r.MGID] = k
				out = append(out, routing.MCastGroup{MGID: r.MGID, MLID: r.MLID, MTU: r.MTU, Rate: r.Rate})
			}
			if r.PortGID != (sa.GID{}) {
				g := &out[k]
				g.MembersKnown = true
				if guid := binary.BigEndian.Uint64(r.PortGID[8:]); !slices.Contains(g.Members, guid) {
					g.Members = append(g.Members, guid)
				}
			}
		}
		return nil
	}
	tmpl := make([]byte, sa.MCMemberRecordSize)
	tab, err := c.GetTable(t.ctx, sa.AttrMCMemberRecord, 0, tmpl)
	switch {
	case errors.Is(err, sa.ErrNoRecords):
		return nil, nil
	case errors.Is(err, sa.ErrMultiSegment), err == nil && tab.Unsized && tab.Stride > 0 && tab.Len() == sa.DataSize/tab.Stride:
		if err != nil {
			t.note("--check-mcast: the SA's answer spans several MADs, which this transport cannot receive: asked port by port (groups without a member are not seen)")
		} else {
			// OpenSM under libumad2sim: its answer cut to one MAD.
			t.note("--check-mcast: the SA's answer fills one MAD without RMPP, as one cut short does: asked port by port (groups without a member are not seen)")
		}
		for _, n := range t.f.Nodes {
			for _, pp := range n.Ports {
				if pp == nil || (n.IsSwitch() && pp.Num != 0) || (!n.IsSwitch() && pp.BaseLID() == 0) {
					continue
				}
				rec := sa.MCMemberRecord{}
				binary.BigEndian.PutUint64(rec.PortGID[:], pp.Info.GIDPrefix)
				binary.BigEndian.PutUint64(rec.PortGID[8:], pp.GUID)
				rec.MarshalTo(tmpl)
				tab, err := c.GetTable(t.ctx, sa.AttrMCMemberRecord, sa.MCRPortGID, tmpl)
				if errors.Is(err, sa.ErrNoRecords) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("%s's: %w", t.endText(pp), err)
				}
				if err := add(tab); err != nil {
					return nil, err
				}
			}
		}
	case err != nil:
		return nil, err
	default:
		if err := add(tab); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b routing.MCastGroup) int { return int(a.MLID) - int(b.MLID) })
	return out, nil
}

// endText names an end port: `CA "h1" port 1 (0x...)`.
func (t *tool) endText(pp *model.PhysPort) string {
	typ := nodeType(pp.Node)
	if typ == "ca" {
		typ = "CA"
	}
	return fmt.Sprintf("%s %q port %d (0x%016x)", typ, t.name(pp.Node), pp.Num, pp.GUID)
}

// mcastMessage is a finding's text (without its kind).
func (t *tool) mcastMessage(fd *routing.MCastFinding) string {
	g := fd.Group
	head := fmt.Sprintf("group 0x%04x (%s): ", g.MLID, mgidText(g.MGID))
	switch fd.Kind {
	case routing.MCastNoTable:
		return head + fmt.Sprintf("%s: its MFT entry could not be read (%v); checked without it", t.swText(fd.At), fd.Err)
	case routing.MCastNoTree:
		return head + "no switch forwards it; its members hear nothing"
	case routing.MCastMissing:
		if fd.At == nil || fd.At == fd.Member.Node {
			return head + fmt.Sprintf("member %s is not reached", t.endText(fd.Member))
		}
		return head + fmt.Sprintf("member %s is not reached: %s does not forward it to port %d", t.endText(fd.Member), t.swText(fd.At), fd.Port)
	case routing.MCastNonMember:
		if fd.Port == 0 {
			return head + fmt.Sprintf("%s forwards it to its own port 0, which is not a member", t.swText(fd.At))
		}
		return head + fmt.Sprintf("%s forwards it to port %d, to %s, which is not a member", t.swText(fd.At), fd.Port, t.endText(fd.Member))
	case routing.MCastDownPort:
		if fd.Err != nil {
			return head + fmt.Sprintf("%s forwards it to port %d, whose link is not Active (%v)", t.swText(fd.At), fd.Port, fd.Err)
		}
		return head + fmt.Sprintf("%s forwards it to port %d, which has no link", t.swText(fd.At), fd.Port)
	case routing.MCastOneWay:
		r := fd.At.Port(int(fd.Port)).Remote
		return head + fmt.Sprintf("%s forwards it to port %d, to switch %q, whose entry lacks port %d back", t.swText(fd.At), fd.Port, t.name(r.Node), r.Num)
	case routing.MCastLoop:
		var s []string
		for _, c := range fd.Cycle {
			s = append(s, fmt.Sprintf("%q", t.name(c)))
		}
		s = append(s, fmt.Sprintf("%q", t.name(fd.Cycle[0])))
		return head + fmt.Sprintf("switches %s forward it in a circle (closed by port %d of %q)", strings.Join(s, " -> "), fd.Port, t.name(fd.At))
	case routing.MCastSplit:
		return head + fmt.Sprintf("its switches form %d separate trees", fd.Parts)
	case routing.MCastMTU:
		return head + fmt.Sprintf("%s port %d: the link's MTU %s is below the group's %s", t.swText(fd.At), fd.Port, smp.MTUText(fd.Have), smp.MTUText(g.MTU))
	case routing.MCastRate:
		return head + fmt.Sprintf("%s port %d: the link's rate %g Gb/s is below the group's %g Gb/s", t.swText(fd.At), fd.Port, smp.RateGbps(fd.Have), smp.RateGbps(g.Rate))
	}
	return head + fd.Kind
}

// checkMCast reads the groups from the SA and their MLIDs' MFT entries
// from every switch, and checks each group's tree (pkg/routing.CheckMCast).
func (t *tool) checkMCast(w io.Writer) error {
	sum := jsonMCastSummary{MembersFrom: "tree"}
	var groups []routing.MCastGroup
	res := &routing.MCastResult{}
	readErrs := 0
	smLID, err := sa.MasterSMLID(t.ctx, t.fab.Transport, t.settings.Timeout)
	switch {
	case t.ctx.Err() != nil:
		return t.ctx.Err()
	case errors.Is(err, sa.ErrNoSM):
		t.nothing = "no SM (the local port has no MasterSMLID, or is not Active): no SA to list the groups"
	case err != nil:
		return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--check-mcast: finding the SM: %w", err))
	default:
		sum.SMLID = smLID
		c, err := sa.NewClient(t.fab.Transport, smLID)
		if err != nil {
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--check-mcast: %w", err))
		}
		if t.settings.Timeout > 0 {
			c.Timeout = t.settings.Timeout
		}
		c.Retries, c.SMKey = t.settings.Retries, t.smKey
		groups, err = t.mcastGroups(c)
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		if err != nil {
			return cliapp.Exit(exitcode.Fatal, fmt.Errorf("--check-mcast: MCMemberRecords from the SA at LID %d: %w", smLID, err))
		}
		if len(groups) == 0 {
			t.nothing = fmt.Sprintf("no multicast group (the SA at LID %d lists none)", smLID)
			break
		}
		mlids := make([]uint16, len(groups))
		for i, g := range groups {
			mlids[i] = g.MLID
			if g.MembersKnown {
				sum.MembersFrom = "sa"
			}
		}
		var buf [smp.DataSize]byte
		mfts, err := routing.ReadMFTs(t.ctx, t.f, mlids, func(_ context.Context, sw *model.Node, block uint16, pos uint8) (smp.MulticastForwardingTable, error) {
			var tab smp.MulticastForwardingTable
			if err := t.q.Get(t.ctx, sw.Path, smp.AttrMulticastFwdTable, smp.MFTModifier(block, pos), buf[:]); err != nil {
				return tab, err
			}
			return tab, tab.UnmarshalBinary(buf[:])
		})
		if err != nil {
			return err
		}
		readErrs = len(t.q.Errors())
		res = routing.CheckMCast(t.f, groups, mfts)
		if res.Checked == 0 {
			t.nothing = "no MFT programmed for the group and no member listed"
			if len(groups) > 1 {
				t.nothing = fmt.Sprintf("no MFT programmed for any of the %d groups and no member listed", len(groups))
			}
		}
		if !res.Clean() {
			t.problem = true
		}
	}
	sum.Groups, sum.Checked, sum.Findings, sum.MFTReadErrors = len(groups), res.Checked, res.Count(""), readErrs
	sum.Clean = res.Clean() && t.nothing == ""
	if t.nothing != "" {
		sum.Reason = "nothing to check: " + t.nothing
	}
	if t.json {
		jc := jsonMCastCheck{Schema: "ibdiag.mcast-check/v1", Summary: sum, Groups: []jsonMCastGroup{}, Findings: []jsonMCastFinding{}}
		for _, gr := range res.Groups {
			g := gr.Group
			jc.Groups = append(jc.Groups, jsonMCastGroup{MGID: mgidText(g.MGID), MLID: g.MLID, MTU: g.MTU, Rate: g.Rate, RateGbps: smp.RateGbps(g.Rate),
				Switches: gr.Switches, Links: gr.Links, Members: gr.Members, Reached: gr.Reached, Unknown: gr.Unknown})
			for i := range gr.Findings {
				fd := &gr.Findings[i]
				jf := jsonMCastFinding{Kind: fd.Kind, MGID: mgidText(g.MGID), MLID: g.MLID, Message: t.mcastMessage(fd)}
				if fd.At != nil {
					s := t.nodePort(fd.At)
					p := int(fd.Port)
					jf.Switch, jf.Port = &s, &p
				}
				if fd.Member != nil {
					m := t.jport(fd.Member)
					jf.Member = &m
				}
				for _, c := range fd.Cycle {
					jf.Cycle = append(jf.Cycle, t.nodePort(c))
				}
				jc.Findings = append(jc.Findings, jf)
			}
		}
		return writeJSON(w, jc)
	}
	shown := map[string]int{}
	for _, gr := range res.Groups {
		for i := range gr.Findings {
			fd := &gr.Findings[i]
			shown[fd.Kind]++
			if t.limit > 0 && shown[fd.Kind] > t.limit {
				continue
			}
			fmt.Fprintf(w, "%s: %s\n", fd.Kind, t.mcastMessage(fd))
		}
	}
	for _, k := range []string{routing.MCastNoTable, routing.MCastNoTree, routing.MCastMissing, routing.MCastNonMember, routing.MCastDownPort,
		routing.MCastOneWay, routing.MCastLoop, routing.MCastSplit, routing.MCastMTU, routing.MCastRate} {
		if t.limit > 0 && shown[k] > t.limit {
			fmt.Fprintf(w, "%s: ... %d more not shown (--limit 0 shows all)\n", k, shown[k]-t.limit)
		}
	}
	for _, gr := range res.Groups {
		g := gr.Group
		fmt.Fprintf(w, "Group 0x%04x %s: MTU %s, rate %g Gb/s; %s, %s; %d of %s reached", g.MLID, mgidText(g.MGID), smp.MTUText(g.MTU), smp.RateGbps(g.Rate),
			plural(gr.Switches, "switch", "switches"), plural(gr.Links, "tree link", "tree links"), gr.Reached, plural(gr.Members, "member", "members"))
		if gr.Unknown > 0 {
			fmt.Fprintf(w, " (%d not in the fabric)", gr.Unknown)
		}
		fmt.Fprintln(w)
	}
	if sum.SMLID != 0 && len(groups) > 0 {
		from := "the SA's MCMemberRecords"
		if sum.MembersFrom == "tree" {
			from = "the end ports the trees reach (the SA listed none: --smkey)"
		}
		fmt.Fprintf(w, "Groups checked: %d of %d (SM at LID %d; members from %s)\n", res.Checked, len(groups), sum.SMLID, from)
	}
	if readErrs > 0 {
		fmt.Fprintf(w, "MFT blocks not read: %d\n", readErrs)
	}
	fmt.Fprintf(w, "Problems: %d\n", sum.Findings)
	status := "clean"
	switch {
	case t.nothing != "":
		status = sum.Reason
	case !res.Clean():
		status = "PROBLEMS FOUND"
	}
	_, err = fmt.Fprintf(w, "Result: %s\n", status)
	return err
}
