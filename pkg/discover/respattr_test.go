package discover_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// swapAttr sends every SMP for attribute from as one for attribute to
// (a peer that answers another question than the one asked), or, with
// noResp, clears the response bit of every answer.
type swapAttr struct {
	transport.Transport
	from, to uint16
	noResp   bool
}

func (s *swapAttr) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	r := append([]byte(nil), req...)
	if binary.BigEndian.Uint16(r[16:]) == s.from {
		binary.BigEndian.PutUint16(r[16:], s.to)
	}
	err := s.Transport.Exchange(ctx, dlid, r, resp)
	if err == nil && s.noResp {
		resp[3] &^= smp.MethodResponseFlag
	}
	return err
}

// TestResponseForAnotherAttribute: an answer that is not a GetResp of
// the attribute asked for is an error, not the answer: a NodeDescription
// answered to a NodeInfo Get, a SwitchInfo answered to a PortInfo Get
// (at sw2, through port 2 of sw1, where the simulator attaches), a
// response without the response bit.
func TestResponseForAnotherAttribute(t *testing.T) {
	_, tr := attach(t, fabrics+"loop.net", "")
	for _, c := range []struct {
		name string
		sw   *swapAttr
		attr uint16
		path smp.DRPath
	}{
		{"NodeDescription for NodeInfo", &swapAttr{Transport: tr, from: smp.AttrNodeInfo, to: smp.AttrNodeDescription}, smp.AttrNodeInfo, smp.DRPath{}},
		{"SwitchInfo for PortInfo", &swapAttr{Transport: tr, from: smp.AttrPortInfo, to: smp.AttrSwitchInfo}, smp.AttrPortInfo, mustPath(t, "0,2")},
		{"no response bit", &swapAttr{Transport: tr, noResp: true}, smp.AttrNodeInfo, smp.DRPath{}},
	} {
		// The same Get through the plain transport answers.
		var want [smp.DataSize]byte
		q := &discover.Querier{Transport: tr, Timeout: time.Second}
		if err := q.Get(context.Background(), c.path, c.attr, 0, want[:]); err != nil {
			t.Fatalf("%s: plain Get: %v", c.name, err)
		}
		var out [smp.DataSize]byte
		q = &discover.Querier{Transport: c.sw, Timeout: time.Second, Retries: 1}
		if err := q.Get(context.Background(), c.path, c.attr, 0, out[:]); err == nil {
			t.Errorf("%s: Get took the answer (data %x), want an error", c.name, out[:8])
		}
		if errs := q.Errors(); len(errs) != 1 || errs[0].Attr != c.attr || errs[0].Path != c.path {
			t.Errorf("%s: errors recorded %v, want the Get's", c.name, errs)
		}
	}
}

func mustPath(t *testing.T, s string) smp.DRPath {
	t.Helper()
	p, err := smp.ParseDRPath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
