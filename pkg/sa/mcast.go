package sa

import (
	"context"
	"encoding/binary"
	"errors"
)

// MCMemberRecords returns every MCMemberRecord the SA lists to a
// GetTable with an empty template (component mask 0), as saquery -g and
// -m ask: with an SM_Key of 0 OpenSM gives one record per group (its
// PortGID zero), with its SM_Key one per member. No records is an empty
// list, not an error. cut reports an answer cut to one MAD with records
// missing (see Table.Cut).
func (c *Client) MCMemberRecords(ctx context.Context) (recs []MCMemberRecord, cut bool, err error) {
	t, err := c.GetTable(ctx, AttrMCMemberRecord, 0, nil)
	if errors.Is(err, ErrNoRecords) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if t.Stride < MCMemberRecordSize && t.Len() > 0 {
		return nil, false, ErrBadAnswer
	}
	recs = make([]MCMemberRecord, t.Len())
	for i := range recs {
		recs[i].UnmarshalBinary(t.Record(i)) // cannot fail: stride checked
	}
	return recs, t.Cut, nil
}

// NodeRecords returns every NodeRecord the SA lists to a GetTable with
// an empty template, as saquery asks for the names it prints beside
// multicast members. cut: see MCMemberRecords.
func (c *Client) NodeRecords(ctx context.Context) (recs []NodeRecord, cut bool, err error) {
	t, err := c.GetTable(ctx, AttrNodeRecord, 0, nil)
	if errors.Is(err, ErrNoRecords) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if t.Stride < NodeRecordSize && t.Len() > 0 {
		return nil, false, ErrBadAnswer
	}
	recs = make([]NodeRecord, t.Len())
	for i := range recs {
		recs[i].UnmarshalBinary(t.Record(i)) // cannot fail: stride checked
	}
	return recs, t.Cut, nil
}

// InterfaceID is the low 64 bits of a GID: a port GUID for a port GID.
func (g *GID) InterfaceID() uint64 { return binary.BigEndian.Uint64(g[8:]) }

// IsZero reports whether every byte of g is 0.
func (g *GID) IsZero() bool { return *g == GID{} }

// NodeRecordByPortGUID returns the NodeRecord of the port whose GUID is
// guid (a Get with the PortGUID component).
func (c *Client) NodeRecordByPortGUID(ctx context.Context, guid uint64) (NodeRecord, error) {
	var tmpl, out NodeRecord
	tmpl.NodeInfo.PortGUID = guid
	var rec [NodeRecordSize]byte
	tmpl.MarshalTo(rec[:])
	var b [NodeRecordSize]byte
	if err := c.Get(ctx, AttrNodeRecord, NRPortGUID, rec[:], b[:]); err != nil {
		return out, err
	}
	out.UnmarshalBinary(b[:])
	return out, nil
}
