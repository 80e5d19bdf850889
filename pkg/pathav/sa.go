package pathav

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Where an AV comes from.
const (
	// SourceSA: the SA's PathRecord for the LID pair.
	SourceSA = "sa"
	// SourceComputed: computed from the forwarding tables and the ports'
	// PortInfo (no SA answered).
	SourceComputed = "computed"
)

// QueryPathRecord asks the SA for the PathRecord slid→dlid (a GetTable
// with the SLID and DLID components, as saquery -p --src-to-dst asks)
// and returns its one record. It fails with the SA's errors (sa.ErrNoSM,
// sa.ErrNoAnswer, a *sa.StatusError, ...) and with sa.ErrNoRecords when
// the SA has none.
func QueryPathRecord(ctx context.Context, c *sa.Client, slid, dlid uint16) (sa.PathRecord, error) {
	tmpl := sa.PathRecord{SLID: slid, DLID: dlid}
	var rec [sa.PathRecordSize]byte
	tmpl.MarshalTo(rec[:])
	tab, err := c.GetTable(ctx, sa.AttrPathRecord, sa.PRSLID|sa.PRDLID, rec[:])
	if err != nil {
		return sa.PathRecord{}, err
	}
	if tab.Len() == 0 {
		return sa.PathRecord{}, fmt.Errorf("PathRecord %d→%d: %w", slid, dlid, sa.ErrNoRecords)
	}
	var p sa.PathRecord
	if tab.Stride < sa.PathRecordSize {
		return p, fmt.Errorf("PathRecord %d→%d: %w: record stride %d", slid, dlid, sa.ErrBadAnswer, tab.Stride)
	}
	p.UnmarshalBinary(tab.Record(0))
	if p.SLID != slid || p.DLID != dlid {
		return p, fmt.Errorf("%w: PathRecord %d→%d asked, %d→%d answered", sa.ErrBadAnswer, slid, dlid, p.SLID, p.DLID)
	}
	return p, nil
}

// NoSA reports whether err says that no SA can be asked or none answered
// (no SM, a local port not Active, an SA that never answers): the AV is
// then computed. Other errors (an SA error status, a broken transfer)
// are worth reporting.
func NoSA(err error) bool {
	return errors.Is(err, sa.ErrNoSM) || errors.Is(err, sa.ErrNoAnswer) || errors.Is(err, transport.ErrTimeout)
}

// ApplyPathRecord makes p's AV the one the SA's PathRecord gives: SLID,
// DLID, SL, MTU and rate (the hop count stays the route's).
func ApplyPathRecord(p *Path, pr *sa.PathRecord) {
	p.AV.SLID, p.AV.DLID, p.AV.SL = pr.SLID, pr.DLID, pr.SL
	p.AV.MTU, p.AV.Rate = pr.MTU, pr.Rate
}

// Finding is a disagreement between the SA's PathRecord and the route
// the forwarding tables give.
type Finding struct {
	// Kind is "mtu", "rate" or "sl2vl".
	Kind string
	// Port is the port where the packets would be lost (sl2vl), or the
	// port that sets the route's limit (mtu, rate).
	Port *model.PhysPort
	// Hop is the link's index (1 = the first link), 0 when none.
	Hop int
	Msg string
}

func (f Finding) String() string { return f.Msg }

// SL2VLReader reads the SLtoVLMappingTable of node (SMP attribute 0x17)
// for packets entering at port in and leaving at port out (both 0 for a
// CA's or router's port, whose table has no ports).
type SL2VLReader func(ctx context.Context, node *model.Node, in, out uint8) (smp.SLtoVLMappingTable, error)

// CheckPathRecord compares the SA's PathRecord pr with the route p: an
// MTU or rate above what the route's ports carry, and the SL mapped, at
// a port that transmits the packets (the source port, each switch's
// egress port), to a VL at or above that port's or its peer's
// OperationalVLs data VLs, or to VL 15 (dropped there). read gives each
// transmitting port's SLtoVLMappingTable; a table that cannot be read is
// an error (the check is then incomplete), returned with the findings
// made.
func CheckPathRecord(ctx context.Context, p *Path, pr *sa.PathRecord, read SL2VLReader) ([]Finding, error) {
	var out []Finding
	lim := &p.Limits
	if pr.MTU > lim.MTU {
		out = append(out, Finding{Kind: "mtu", Port: lim.MTUPort, Msg: fmt.Sprintf("the SA's MTU %s is above the %s the route carries (set by %s)",
			smp.MTUText(pr.MTU), smp.MTUText(lim.MTU), PortName(lim.MTUPort))})
	}
	if smp.CompareRates(pr.Rate, lim.Rate) > 0 {
		out = append(out, Finding{Kind: "rate", Port: lim.RatePort, Msg: fmt.Sprintf("the SA's rate %s Gb/s is above the %s Gb/s the route carries (set by %s)",
			GbpsText(pr.Rate), GbpsText(lim.Rate), PortName(lim.RatePort))})
	}
	var errs []error
	in := uint8(0) // the port the packets entered the node through (a switch source: 0)
	for i, h := range p.Hops {
		tx := h.Out
		if tx == nil {
			continue
		}
		var mi, mo uint8
		if tx.Node.IsSwitch() {
			mi, mo = in, tx.Num
		}
		t, err := read(ctx, tx.Node, mi, mo)
		if h.In != nil {
			in = h.In.Num
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("SLtoVLMappingTable of %s (in %d, out %d): %w", PortName(tx), mi, mo, err))
			continue
		}
		vl := t[pr.SL&0xF]
		n := smp.DataVLs(tx.Info.OperationalVLs)
		at := tx
		if h.In != nil {
			if m := smp.DataVLs(h.In.Info.OperationalVLs); m < n {
				n, at = m, h.In
			}
		}
		switch {
		case vl == smp.VLDrop:
			out = append(out, Finding{Kind: "sl2vl", Port: tx, Hop: i + 1, Msg: fmt.Sprintf("hop %d: %s maps the SA's SL %d to VL 15: packets are dropped there",
				i+1, PortName(tx), pr.SL)})
		case int(vl) >= n:
			out = append(out, Finding{Kind: "sl2vl", Port: tx, Hop: i + 1, Msg: fmt.Sprintf("hop %d: %s maps the SA's SL %d to VL %d, at or above the %d data VLs of %s (OperationalVLs %s): packets are dropped there",
				i+1, PortName(tx), pr.SL, vl, n, PortName(at), smp.OperVLsText(at.Info.OperationalVLs))})
		}
	}
	return out, errors.Join(errs...)
}
