package transport

import (
	"context"
	"errors"
	"testing"
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
