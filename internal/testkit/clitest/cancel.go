package clitest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

// CancelAfter returns tr with a hook: once n of its exchanges have been
// answered, cancel is called (once). Tests use it to interrupt a
// discovery that is certainly under way (the start node answered)
// without guessing a delay.
func CancelAfter(tr transport.Transport, n int64, cancel func()) transport.Transport {
	return &cancelAfter{Transport: tr, n: n, cancel: cancel}
}

type cancelAfter struct {
	transport.Transport
	n      int64
	count  atomic.Int64
	once   sync.Once
	cancel func()
}

func (c *cancelAfter) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := c.Transport.Exchange(ctx, dlid, req, resp)
	if err == nil && c.count.Add(1) >= c.n {
		c.once.Do(c.cancel)
	}
	return err
}
