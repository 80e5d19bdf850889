package health

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// SM states of SMInfo.
const (
	SMNotActive   = 0
	SMDiscovering = 1
	SMStandby     = 2
	SMMaster      = 3
)

var smStates = [...]string{"not-active", "discovering", "standby", "master"}

// SMStateText names an SMInfo SMState.
func SMStateText(s uint8) string {
	if int(s) < len(smStates) {
		return smStates[s]
	}
	return fmt.Sprintf("state %d", s)
}

// SMAnswer is one port's SMInfo.
type SMAnswer struct {
	Port     *model.PhysPort
	GUID     uint64
	ActCount uint32
	Priority uint8
	State    uint8
}

// Finding kinds of the sm check.
const (
	KindNoSM          = "no-sm"         // no port advertises a subnet manager
	KindNoMaster      = "no-master"     // SMs answer, none is master
	KindMasters       = "masters"       // more than one SM says it is master
	KindPriority      = "priority"      // a standby outranks the master
	KindMasterSMLID   = "master-sm-lid" // ports that name another LID as their SM's
	KindSMInformation = "sm"            // one SM, its state and priority (information)
)

// smPath is the directed route to port pp itself (a CA's other port is
// reached through its peer switch).
func (c *checker) smPath(pp *model.PhysPort) (smp.DRPath, bool) {
	n := pp.Node
	if n.IsSwitch() || (n == c.f.From && pp.Num == c.f.FromPort) {
		return n.Path, true
	}
	if r := pp.Remote; r != nil && r.Node.IsSwitch() {
		p, err := r.Node.Path.Extend(r.Num)
		return p, err == nil
	}
	return smp.DRPath{}, false
}

// sm: which ports run a subnet manager (PortInfo's IsSM), their SMInfo
// (SubnGet SMInfo): how many answer, which is master, their priorities,
// more than one master, and ports that name another SM LID than the
// master's.
func (c *checker) sm(ctx context.Context, cr *CheckResult) ([]Finding, error) {
	if c.in.NoSMInfo != "" {
		cr.Status, cr.Reason = Nothing, c.in.NoSMInfo
		return nil, nil
	}
	if c.in.Querier == nil {
		cr.Status, cr.Reason = NotRun, "the fabric is not live (a loaded cache has no SMInfo)"
		return nil, nil
	}
	var cands []*model.PhysPort
	for _, n := range c.f.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo || (n.IsSwitch() && pp.Num != 0) {
				continue
			}
			if pp.Info.CapabilityMask&smp.CapIsSM != 0 {
				cands = append(cands, pp)
			}
		}
	}
	answers := make([]*SMAnswer, len(cands))
	errs := make([]error, len(cands))
	err := discover.Parallel(ctx, c.in.Workers, len(cands), func(ctx context.Context, i int) error {
		pp := cands[i]
		path, ok := c.smPath(pp)
		if !ok {
			errs[i] = fmt.Errorf("no directed route to the port")
			return nil
		}
		var buf [smp.DataSize]byte
		if err := c.in.Querier.Get(ctx, path, smp.AttrSMInfo, 0, buf[:]); err != nil {
			if discover.IsStop(err) {
				return err
			}
			errs[i] = err
			return nil
		}
		answers[i] = &SMAnswer{Port: pp, GUID: binary.BigEndian.Uint64(buf[0:]), ActCount: binary.BigEndian.Uint32(buf[16:]),
			Priority: buf[20] >> 4, State: buf[20] & 0x0f}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var got []SMAnswer
	for i, e := range errs {
		if e != nil {
			p := c.portPlace(cands[i])
			cr.Where = append(cr.Where, fmt.Sprintf("SMInfo of %s: %v", p, e))
		} else if answers[i] != nil {
			got = append(got, *answers[i])
		}
	}
	return c.judgeSM(got, len(cands)), nil
}

// judgeSM turns the SMInfo answers (of advertised SM ports, of which
// asked were asked) into findings.
func (c *checker) judgeSM(got []SMAnswer, asked int) []Finding {
	var out []Finding
	named := map[uint16][]*model.PhysPort{} // MasterSMLID -> the active ports naming it
	for _, n := range c.f.Nodes {
		for _, pp := range n.Ports {
			if pp == nil || !pp.HasInfo || (n.IsSwitch() && pp.Num != 0) || pp.BaseLID() == 0 {
				continue
			}
			if !n.IsSwitch() && pp.Info.PortState != smp.PortStateActive {
				continue
			}
			named[pp.Info.MasterSMLID] = append(named[pp.Info.MasterSMLID], pp)
		}
	}
	lids := make([]uint16, 0, len(named))
	for l := range named {
		lids = append(lids, l)
	}
	slices.Sort(lids)
	if asked == 0 {
		f := Finding{Kind: KindNoSM, Severity: Critical, Place: c.nodePlace(c.f.From),
			Message: "no subnet manager: no port advertises one (IsSM in PortInfo's CapabilityMask)"}
		for _, l := range lids {
			if l == 0 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%d ports name no SM (MasterSMLID 0)", len(named[l])))
				continue
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("%d ports name LID %d as their SM's (MasterSMLID)", len(named[l]), l))
		}
		if c.f.From == nil {
			f.Place = Place{Port: -1, Type: "node"}
		}
		return append(out, f)
	}
	var masters []SMAnswer
	for _, a := range got {
		if a.State == SMMaster {
			masters = append(masters, a)
		}
		out = append(out, Finding{Kind: KindSMInformation, Severity: Info, Place: c.portPlace(a.Port),
			Message:  fmt.Sprintf("subnet manager 0x%016x: %s, priority %d", a.GUID, SMStateText(a.State), a.Priority),
			Evidence: []string{fmt.Sprintf("SMInfo GUID 0x%016x, SM_Key hidden, ActCount %d, Priority %d, SMState %d (%s)", a.GUID, a.ActCount, a.Priority, a.State, SMStateText(a.State))}})
	}
	smText := func(a SMAnswer) string {
		return fmt.Sprintf("0x%016x at %s: %s, priority %d, ActCount %d", a.GUID, c.portPlace(a.Port), SMStateText(a.State), a.Priority, a.ActCount)
	}
	switch {
	case len(got) == 0:
		return out // none answered: the check is incomplete (Where)
	case len(masters) == 0:
		f := Finding{Kind: KindNoMaster, Severity: Critical, Place: c.portPlace(got[0].Port),
			Message: fmt.Sprintf("%d subnet managers answer, none is master", len(got))}
		for _, a := range got {
			f.Evidence = append(f.Evidence, smText(a))
		}
		return append(out, f)
	case len(masters) > 1:
		f := Finding{Kind: KindMasters, Severity: Critical, Place: c.portPlace(masters[1].Port),
			Message: fmt.Sprintf("%d subnet managers say they are master", len(masters))}
		for _, a := range masters {
			f.Evidence = append(f.Evidence, smText(a))
		}
		return append(out, f)
	}
	m := masters[0]
	for _, a := range got {
		if a.State != SMMaster && a.Priority > m.Priority {
			out = append(out, Finding{Kind: KindPriority, Severity: Warning, Place: c.portPlace(a.Port),
				Message:  fmt.Sprintf("%s SM has priority %d, above the master's %d: it should have taken over", SMStateText(a.State), a.Priority, m.Priority),
				Evidence: []string{"this: " + smText(a), "master: " + smText(m)}})
		}
	}
	ml := m.Port.BaseLID()
	for _, l := range lids {
		if l == ml {
			continue
		}
		ps := named[l]
		ev := []string{fmt.Sprintf("%d ports name LID %d, the master is at LID %d", len(ps), l, ml)}
		for i, pp := range ps {
			if i == 5 {
				ev = append(ev, fmt.Sprintf("... %d more", len(ps)-5))
				break
			}
			ev = append(ev, c.portPlace(pp).String())
		}
		out = append(out, Finding{Kind: KindMasterSMLID, Severity: Error, Place: c.portPlace(ps[0]),
			Message: fmt.Sprintf("ports name LID %d as their SM's, not the master's LID %d", l, ml), Evidence: ev})
	}
	return out
}
