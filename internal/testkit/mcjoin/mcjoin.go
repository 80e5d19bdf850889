// Package mcjoin is a test-only helper that joins a CA port to a
// multicast group, and makes it leave, by sending an SA Set (join) or
// Delete (leave) of an MCMemberRecord, as an IPoIB driver does. The tools
// never send either (they are read-only on a fabric): only tests on their
// private simulated fabrics use this package.
package mcjoin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/mad"
	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// BroadcastMGID is OpenSM's IPoIB broadcast group of the default
// partition (ff12:401b:ffff::ffff:ffff).
var BroadcastMGID = [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}

// ErrStatus: the SA answered the join or leave with a non-zero status.
var ErrStatus = errors.New("mcjoin: SA error status")

// LocalPortGUID reads the PortGUID of the port tr is attached at
// (NodeInfo over an empty directed route).
func LocalPortGUID(ctx context.Context, tr transport.Transport) (uint64, error) {
	var req, resp [mad.Size]byte
	if err := smp.MarshalGet(req[:], smp.DRPath{}, smp.AttrNodeInfo, 0, 0); err != nil {
		return 0, err
	}
	if err := tr.Exchange(ctx, 0xFFFF, req[:], resp[:]); err != nil {
		return 0, err
	}
	var m smp.MAD
	if err := m.UnmarshalBinary(resp[:]); err != nil {
		return 0, err
	}
	var ni smp.NodeInfo
	if err := ni.UnmarshalBinary(m.Data[:]); err != nil {
		return 0, err
	}
	return ni.PortGUID, nil
}

// Join makes port portGUID a full member of group mgid, asking the SA at
// smLID through tr (which must not be read-only). It returns the SA's
// record of the membership.
func Join(ctx context.Context, tr transport.Transport, smLID uint16, portGUID uint64, mgid [16]byte) (sa.MCMemberRecord, error) {
	return send(ctx, tr, smLID, sa.MethodSet, portGUID, mgid)
}

// Leave ends the full membership of port portGUID in group mgid.
func Leave(ctx context.Context, tr transport.Transport, smLID uint16, portGUID uint64, mgid [16]byte) error {
	_, err := send(ctx, tr, smLID, sa.MethodDelete, portGUID, mgid)
	return err
}

// CreateMask is the component mask OpenSM requires of a join that
// creates a group (MGID, PortGID, Q_Key, TClass, P_Key, FlowLabel, SL
// and JoinState), with the MTU and rate selectors and values.
const CreateMask = sa.MCRMGID | sa.MCRPortGID | 1<<2 | 1<<6 | 1<<7 | 1<<13 | 1<<12 | sa.MCRJoinState |
	1<<4 | 1<<5 | 1<<8 | 1<<9

// Create makes port portGUID a full member of the group rec describes
// (rec.MGID; its Q_Key, P_Key, SL, TClass, FlowLabel, MTU and rate with
// their selectors), creating the group when it does not exist, as an
// application's first join does.
func Create(ctx context.Context, tr transport.Transport, smLID uint16, portGUID uint64, rec sa.MCMemberRecord) (sa.MCMemberRecord, error) {
	rec.JoinState = 1
	return sendRec(ctx, tr, smLID, sa.MethodSet, portGUID, rec, CreateMask)
}

var tid atomic.Uint64

func send(ctx context.Context, tr transport.Transport, smLID uint16, method uint8, portGUID uint64, mgid [16]byte) (sa.MCMemberRecord, error) {
	rec := sa.MCMemberRecord{MGID: mgid, JoinState: 1}
	return sendRec(ctx, tr, smLID, method, portGUID, rec, sa.MCRMGID|sa.MCRPortGID|sa.MCRJoinState)
}

func sendRec(ctx context.Context, tr transport.Transport, smLID uint16, method uint8, portGUID uint64, rec sa.MCMemberRecord, mask uint64) (sa.MCMemberRecord, error) {
	binary.BigEndian.PutUint64(rec.PortGID[0:], 0xfe80000000000000)
	binary.BigEndian.PutUint64(rec.PortGID[8:], portGUID)
	var body [sa.MCMemberRecordSize]byte
	rec.MarshalTo(body[:])
	var req, resp [sa.MADSize]byte
	id := tid.Add(1) | 0x6d636a0000000000
	h := sa.Header{
		Header: mad.Header{BaseVersion: mad.BaseVersion, Class: sa.Class, ClassVersion: sa.ClassVersion,
			Method: method, TID: id, AttrID: sa.AttrMCMemberRecord},
		AttributeOffset: uint16((sa.MCMemberRecordSize + 7) / 8),
		ComponentMask:   mask,
	}
	h.MarshalTo(req[:])
	copy(req[sa.DataOffset:], body[:])
	if err := tr.Exchange(ctx, smLID, req[:], resp[:]); err != nil {
		return sa.MCMemberRecord{}, err
	}
	var rh sa.Header
	if err := rh.UnmarshalBinary(resp[:]); err != nil {
		return sa.MCMemberRecord{}, err
	}
	if st := rh.Status; st != 0 {
		return sa.MCMemberRecord{}, fmt.Errorf("%w 0x%04x (%s)", ErrStatus, st, sa.StatusText(st))
	}
	var out sa.MCMemberRecord
	err := out.UnmarshalBinary(resp[sa.DataOffset:])
	return out, err
}
