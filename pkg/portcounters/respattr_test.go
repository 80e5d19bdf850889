package portcounters

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// pmaSwap sends every PerfMgt request for attribute from as one for
// attribute to: the PMA answers another question than the one asked.
type pmaSwap struct {
	transport.Transport
	from, to uint16
}

func (s *pmaSwap) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	r := append([]byte(nil), req...)
	if binary.BigEndian.Uint16(r[16:]) == s.from {
		binary.BigEndian.PutUint16(r[16:], s.to)
	}
	return s.Transport.Exchange(ctx, dlid, r, resp)
}

// TestResponseForAnotherAttribute: a PMA answering PortCountersExtended
// to a PortCounters Get gives a failed query for every port, named, and
// no counters (the extended attribute's bytes are not read as the
// 32-bit counters).
func TestResponseForAnotherAttribute(t *testing.T) {
	_, tr, fab := simFabric(t, testNet)
	good, err := Read(context.Background(), Config{Transport: tr, Outstanding: 2}, fab)
	if err != nil || len(good.Failures) != 0 {
		t.Fatalf("plain read: %v %v", err, good.Failures)
	}
	rep, err := Read(context.Background(), Config{Transport: &pmaSwap{Transport: tr, from: pma.AttrPortCounters, to: pma.AttrPortCountersExtended}, Outstanding: 2}, fab)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 {
		t.Fatal("no failure: the answers for another attribute were taken")
	}
	for _, f := range rep.Failures {
		if f.Attr != pma.AttrPortCounters || !strings.Contains(f.Error(), "response for attribute 0x001d") {
			t.Errorf("failure %v (attr %#x), want PortCounters answered with 0x001d", f, f.Attr)
		}
	}
	if _, _, _, bad := rep.Summary(); bad != 0 {
		t.Errorf("%d bad ports from counters that were never read", bad)
	}
}
