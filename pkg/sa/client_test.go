package sa

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

// fakeSA answers GetTable with n PathRecords (DLID 1..n) in RMPP segments
// and records what the client sent. fault changes what it sends.
type fakeSA struct {
	n       int
	fault   string
	status  uint16
	stream  bool // implements Stream
	sent    [][]byte
	timeout bool
}

func (f *fakeSA) records() []byte {
	b := make([]byte, f.n*PathRecordSize)
	for i := 0; i < f.n; i++ {
		p := PathRecord{DLID: uint16(i + 1), SLID: 7, SL: uint8(i % 16), MTU: 4, MTUSelector: 2, Rate: 3, RateSelector: 2, Reversible: true}
		p.MarshalTo(b[i*PathRecordSize:])
	}
	return b
}

// note records a MAD the client sent (the fake is used from one
// goroutine at a time).
func (f *fakeSA) note(b []byte) {
	f.sent = append(f.sent, append([]byte(nil), b...))
}

func (f *fakeSA) Close() error { return nil }

func (f *fakeSA) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	f.note(req)
	if f.timeout {
		<-ctx.Done()
		return fmt.Errorf("fake: %w", transport.ErrTimeout)
	}
	if f.status != 0 {
		copy(resp, req[:HeaderSize])
		resp[3] |= 0x80
		binary.BigEndian.PutUint16(resp[4:], f.status)
		return nil
	}
	return MarshalSegment(resp, req, PathRecordSize, f.records(), 1)
}

// streamT wraps fakeSA with Stream.
type streamT struct{ *fakeSA }

func (s streamT) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	f := s.fakeSA
	f.note(req)
	if f.timeout {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(idle):
			return fmt.Errorf("fake: %w", transport.ErrTimeout)
		}
	}
	var b [MADSize]byte
	if f.status != 0 {
		copy(b[:], req[:HeaderSize])
		b[3] |= 0x80
		binary.BigEndian.PutUint16(b[4:], f.status)
		_, _, err := recv(b[:])
		return err
	}
	recs := f.records()
	n := Segments(len(recs))
	order := make([]uint32, 0, n)
	for i := uint32(1); i <= n; i++ {
		order = append(order, i)
	}
	switch f.fault {
	case "swap":
		order[1], order[2] = order[2], order[1]
	case "drop-last":
		order = order[:n-1]
	case "dup":
		order = append(order[:2], append([]uint32{2}, order[2:]...)...)
	}
	for _, seg := range order {
		MarshalSegment(b[:], req, PathRecordSize, recs, seg)
		switch {
		case f.fault == "abort" && seg == 2:
			b[25] = RMPPTypeAbort
		case f.fault == "badlast" && seg == n:
			binary.BigEndian.PutUint32(b[32:], 40)
		}
		reply, done, err := recv(b[:])
		if reply != nil {
			f.note(reply)
		}
		if err != nil || done {
			return err
		}
	}
	select { // the transfer stalls: nothing more comes
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idle):
		return fmt.Errorf("fake: %w", transport.ErrTimeout)
	}
}

func newTest(t *testing.T, tr transport.Transport) *Client {
	t.Helper()
	c, err := NewClient(transport.ReadOnly(tr), 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 50 * time.Millisecond
	return c
}

// TestGetTableRMPP: a 40-record answer (13 segments) is reassembled in
// order, and the client ACKs segment 1 (the sender's first window), the
// end of each window after it and the last segment, every ACK carrying
// the GetTable method (never a Set) with RMPP type ACK.
func TestGetTableRMPP(t *testing.T) {
	f := &fakeSA{n: 40, stream: true}
	c := newTest(t, streamT{f})
	tab, err := c.GetTable(context.Background(), AttrPathRecord, PRSLID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 40 || tab.Segments != 13 || tab.Unsized {
		t.Fatalf("%d records in %d segments (unsized %v)", tab.Len(), tab.Segments, tab.Unsized)
	}
	for i := 0; i < tab.Len(); i++ {
		var p PathRecord
		if err := p.UnmarshalBinary(tab.Record(i)); err != nil || p.DLID != uint16(i+1) || p.SL != uint8(i%16) {
			t.Fatalf("record %d: %+v %v", i, p, err)
		}
	}
	var acks []string
	for _, m := range f.sent[1:] {
		var h Header
		if err := h.UnmarshalBinary(m); err != nil {
			t.Fatal(err)
		}
		if h.Method != MethodGetTable || h.RMPP.Type != RMPPTypeAck || !h.RMPP.Active() {
			t.Errorf("sent %+v", h)
		}
		acks = append(acks, fmt.Sprintf("%d/%d", h.RMPP.Data1, h.RMPP.Data2))
	}
	if got, want := fmt.Sprint(acks), "[1/17 13/17]"; got != want {
		t.Errorf("ACKs (segment/new window last) %s, want %s", got, want)
	}
}

// TestGetTableErrors: each broken transfer is one sentinel error, and
// none waits past its timeout.
func TestGetTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    fakeSA
		want error
	}{
		{"out of order", fakeSA{n: 20, fault: "swap"}, ErrOutOfOrder},
		{"truncated: the SA stops", fakeSA{n: 20, fault: "drop-last"}, ErrTruncated},
		{"truncated: last length", fakeSA{n: 20, fault: "badlast"}, ErrTruncated},
		{"abort", fakeSA{n: 20, fault: "abort"}, ErrRMPP},
		{"status", fakeSA{n: 20, status: StatusNoResources}, ErrStatus},
		{"no records", fakeSA{n: 20, status: StatusNoRecords}, ErrNoRecords},
		{"never answers", fakeSA{n: 20, timeout: true}, ErrNoAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			c := newTest(t, streamT{&f})
			start := time.Now()
			_, err := c.GetTable(context.Background(), AttrPathRecord, 0, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	// A duplicate segment (our ACK was lost) is ACKed again, not an error.
	f := fakeSA{n: 20, fault: "dup"}
	if tab, err := newTest(t, streamT{&f}).GetTable(context.Background(), AttrPathRecord, 0, nil); err != nil || tab.Len() != 20 {
		t.Fatalf("duplicate segment: %d records, %v", tab.Len(), err)
	}
}

// TestOneMADTransport: through a transport without Stream a one-segment
// answer is read, a longer one is ErrMultiSegment, a status an error,
// and an SA that never answers ErrNoAnswer (and transport.ErrTimeout)
// after Retries+1 attempts.
func TestOneMADTransport(t *testing.T) {
	f := &fakeSA{n: 3}
	tab, err := newTest(t, f).GetTable(context.Background(), AttrPathRecord, 0, nil)
	if err != nil || tab.Len() != 3 || tab.Unsized {
		t.Fatalf("%d records (unsized %v), %v", tab.Len(), tab.Unsized, err)
	}
	f = &fakeSA{n: 4}
	if _, err := newTest(t, f).GetTable(context.Background(), AttrPathRecord, 0, nil); !errors.Is(err, ErrMultiSegment) {
		t.Fatalf("4 records through one MAD: %v", err)
	}
	f = &fakeSA{timeout: true}
	c := newTest(t, f)
	if _, err := c.GetTable(context.Background(), AttrPathRecord, 0, nil); !errors.Is(err, ErrNoAnswer) || !errors.Is(err, transport.ErrTimeout) || len(f.sent) != c.Retries+1 {
		t.Fatalf("err %v after %d sends", err, len(f.sent))
	}
	f = &fakeSA{status: StatusReqInvalid}
	var out [PathRecordSize]byte
	err = newTest(t, f).Get(context.Background(), AttrPathRecord, 0, nil, out[:])
	var se *StatusError
	if !errors.As(err, &se) || se.Status != StatusReqInvalid || errors.Is(err, ErrNoRecords) {
		t.Fatalf("Get: %v", err)
	}
}

// TestCancel: a cancelled context ends a GetTable the SA never answers at
// once, with the context's error.
func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := &fakeSA{timeout: true}
		var tr transport.Transport = f
		if stream {
			tr = streamT{f}
		}
		c := newTest(t, tr)
		c.Timeout = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := c.GetTable(ctx, AttrNodeRecord, 0, nil); done <- err }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("stream %v: %v", stream, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %v: GetTable still running 10s after cancel", stream)
		}
	}
}

// TestNoSM: MasterSMLID 0 is ErrNoSM.
func TestNoSM(t *testing.T) {
	if _, err := NewClient(&fakeSA{}, 0); !errors.Is(err, ErrNoSM) {
		t.Fatal(err)
	}
}

// TestRequestsReadOnly: the request builder makes only Get and GetTable.
func TestRequestsReadOnly(t *testing.T) {
	var b [MADSize]byte
	for _, m := range []uint8{MethodSet, MethodDelete, 0x14, MethodGetResp} {
		if err := MarshalRequest(b[:], m, AttrMCMemberRecord, 0, nil, 0); !errors.Is(err, ErrRequest) {
			t.Errorf("method 0x%02x: %v", m, err)
		}
	}
}
