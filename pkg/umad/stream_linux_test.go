package umad

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sa"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// saKernel answers an SA GetTable of n PathRecords as an SA whose kernel
// sends RMPP does, through an agent without kernel RMPP: segment 1, then
// the rest of each window once the window is ACKed; it records every MAD
// the device wrote and its header. With stall, it sends segment 1 only.
type saKernel struct {
	mu    sync.Mutex
	n     int
	stall bool
	sent  []Header
	mads  [][]byte
	req   []byte
	next  uint32 // the next segment to send
}

func (s *saKernel) handle(k *fakeKernel, h Header, mad []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, h)
	s.mads = append(s.mads, append([]byte(nil), mad...))
	recs := make([]byte, s.n*sa.PathRecordSize)
	for i := 0; i < s.n; i++ {
		p := sa.PathRecord{DLID: uint16(i + 1), SLID: 9}
		p.MarshalTo(recs[i*sa.PathRecordSize:])
	}
	segs := sa.Segments(len(recs))
	var hdr sa.Header
	hdr.UnmarshalBinary(mad)
	winLast := uint32(1)
	switch {
	case hdr.RMPP.Type == 0: // the request
		s.req, s.next = append([]byte(nil), mad...), 1
	case hdr.RMPP.Type == sa.RMPPTypeAck:
		winLast = hdr.RMPP.Data2
		if s.stall {
			return
		}
	default:
		return
	}
	for ; s.next <= segs && s.next <= winLast; s.next++ {
		out := make([]byte, smp.MADSize)
		sa.MarshalSegment(out, s.req, sa.PathRecordSize, recs, s.next)
		k.mu.Lock()
		hl := k.hdrLen
		k.mu.Unlock()
		b := hdrBytes(Header{ID: h.ID, Length: uint32(hl + smp.MADSize), QPN: 1, LID: h.LID}, hl)
		k.write(append(b, out...))
	}
}

// TestStreamRMPP: the SA client's GetTable through the kernel device
// reassembles a 30-record answer (10 segments), the ACKs going out on the
// SA agent to the SA's LID with the request's TID, without a kernel
// response timeout; an SA that stops after segment 1 is a truncated
// transfer, ended by the idle timeout.
func TestStreamRMPP(t *testing.T) {
	s := &saKernel{n: 30}
	d, _, err := startKernel(t, kernelOpts{}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sa.NewClient(transport.ReadOnly(d), 7)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := c.GetTable(context.Background(), sa.AttrPathRecord, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 30 || tab.Segments != 10 {
		t.Fatalf("%d records in %d segments", tab.Len(), tab.Segments)
	}
	for i := 0; i < 30; i++ {
		var p sa.PathRecord
		p.UnmarshalBinary(tab.Record(i))
		if p.DLID != uint16(i+1) {
			t.Fatalf("record %d: %+v", i, p)
		}
	}
	// The request, the ACK of segment 1, the ACK of the last (written
	// before GetTable returned; the fake kernel reads it on its own time).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.sent)
		s.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d MADs reached the kernel in 10s, want 3", n)
		}
	}
	s.mu.Lock()
	if len(s.sent) != 3 {
		t.Fatalf("%d MADs sent", len(s.sent))
	}
	for i, h := range s.sent {
		wantTimeout := h.TimeoutMS > 0
		if h.ID != d.agents[3] || h.LID != 7 || h.QPN != 1 || h.QKey != QP1QKey || wantTimeout != (i == 0) {
			t.Errorf("MAD %d: header %+v", i, h)
		}
		if string(s.mads[i][8:16]) != string(s.mads[0][8:16]) {
			t.Errorf("MAD %d: TID % x, request % x", i, s.mads[i][8:16], s.mads[0][8:16])
		}
	}
	s.mu.Unlock()

	s2 := &saKernel{n: 30, stall: true}
	d2, _, err := startKernel(t, kernelOpts{}, s2.handle)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := sa.NewClient(transport.ReadOnly(d2), 7)
	c2.Timeout = 100 * time.Millisecond
	start := time.Now()
	if _, err := c2.GetTable(context.Background(), sa.AttrPathRecord, 0, nil); !errors.Is(err, sa.ErrTruncated) {
		t.Fatalf("stalled SA: %v", err)
	}
	if dt := time.Since(start); dt > 30*time.Second {
		t.Fatalf("stalled SA: %v to give up", dt)
	}
}
