package transport

import (
	"context"
	"errors"
	"testing"
	"time"
)

type countT struct{ n int }

func (c *countT) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	c.n++
	return nil
}
func (c *countT) Close() error { return nil }

func TestReadOnlyRefusesSets(t *testing.T) {
	inner := &countT{}
	tr := ReadOnly(inner)
	if ReadOnly(tr) != tr || Unwrap(tr) != Transport(inner) {
		t.Fatal("wrapping twice or unwrapping")
	}
	req := make([]byte, 256)
	resp := make([]byte, 256)
	for _, tc := range []struct {
		class, method uint8
		refused       bool
	}{
		{0x81, 0x01, false}, {0x81, 0x02, true}, {0x01, 0x02, true},
		{0x04, 0x01, false}, {0x04, 0x02, true}, {0x03, 0x12, false}, {0x04, 0x81, false},
		{0x03, 0x02, true}, {0x03, 0x15, true}, {0x04, 0x15, false}, {0x03, 0x01, false},
	} {
		req[1], req[3] = tc.class, tc.method
		before := inner.n
		err := tr.Exchange(context.Background(), 1, req, resp)
		if got := errors.Is(err, ErrReadOnly); got != tc.refused {
			t.Errorf("class %#x method %#x: err %v", tc.class, tc.method, err)
		}
		if sent := inner.n != before; sent == tc.refused {
			t.Errorf("class %#x method %#x: sent %v", tc.class, tc.method, sent)
		}
	}
}

type streamT struct {
	countT
	sent [][]byte
}

func (s *streamT) Stream(ctx context.Context, dlid uint16, req []byte, idle time.Duration, recv func([]byte) ([]byte, bool, error)) error {
	s.sent = append(s.sent, req)
	resp := make([]byte, 256)
	for {
		reply, done, err := recv(resp)
		if err != nil {
			return err
		}
		if reply != nil {
			s.sent = append(s.sent, reply)
		}
		if done {
			return nil
		}
	}
}

// TestStreamerOfReadOnly: the read-only wrapper passes a Streamer through
// and keeps refusing Sets (an SA Delete too), in the request and in the
// MADs sent within the transaction; a plain transport is no Streamer.
func TestStreamerOfReadOnly(t *testing.T) {
	if _, ok := StreamerOf(ReadOnly(&countT{})); ok {
		t.Fatal("a transport without Stream taken for a Streamer")
	}
	inner := &streamT{}
	s, ok := StreamerOf(ReadOnly(inner))
	if !ok {
		t.Fatal("Streamer not found through the read-only wrapper")
	}
	get := []byte{1, 0x03, 2, 0x12}
	del := []byte{1, 0x03, 2, 0x15}
	n := 0
	err := s.Stream(context.Background(), 1, get, time.Second, func([]byte) ([]byte, bool, error) {
		n++
		if n == 2 {
			return del, false, nil
		}
		return get, false, nil
	})
	if !errors.Is(err, ErrReadOnly) || len(inner.sent) != 2 {
		t.Fatalf("err %v, %d sent", err, len(inner.sent))
	}
	if err := s.Stream(context.Background(), 1, del, time.Second, nil); !errors.Is(err, ErrReadOnly) || len(inner.sent) != 2 {
		t.Fatalf("a Delete request: err %v, %d sent", err, len(inner.sent))
	}
}
