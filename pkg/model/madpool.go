package model

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Errors of MADPool.Put.
var (
	// ErrMADNotOutstanding: the wrapper was already returned to the pool.
	ErrMADNotOutstanding = errors.New("MAD wrapper already returned to the pool")
	// ErrMADForeign: the wrapper did not come from this pool.
	ErrMADForeign = errors.New("MAD wrapper from another pool")
)

// MADWrapper is a 256-byte MAD buffer with the metadata of one request in
// flight (osm_madw_t).
type MADWrapper struct {
	// Buf is the wire MAD; Resp receives the response.
	Buf  [smp.MADSize]byte
	Resp [smp.MADSize]byte
	// DLID is the destination LID (smp.PermissiveLID for directed route).
	DLID uint16
	// Path is the directed route, for directed-route SMPs.
	Path smp.DRPath
	// Attr and AttrMod are the attribute ID and modifier requested.
	Attr    uint16
	AttrMod uint32
	// Sent is when the MAD was last sent, for a caller that tracks it (the
	// discovery engine's Querier keeps its own monotonic stamps and
	// leaves it zero); Retries how often it was resent.
	Sent    time.Time
	Retries int
	// Context is free for the caller (e.g. the node or port being read).
	Context any

	pool *MADPool
	out  atomic.Bool
}

// MADPool hands out MAD wrappers and counts those outstanding
// (osm_mad_pool). The zero value is ready to use; a MADPool is safe for
// concurrent use and must not be copied after first use.
type MADPool struct {
	free sync.Pool
	out  atomic.Int64
}

// Get returns a zeroed wrapper owned by p and counts it outstanding.
func (p *MADPool) Get() *MADWrapper {
	w, _ := p.free.Get().(*MADWrapper)
	if w == nil {
		w = &MADWrapper{pool: p}
	} else {
		w.reset()
	}
	w.out.Store(true)
	p.out.Add(1)
	return w
}

// Put returns w to p. It fails, changing nothing, with ErrMADForeign for
// a wrapper from another pool (or not from a pool) and with
// ErrMADNotOutstanding for one already put back (detected as long as the
// pool has not handed the same wrapper out again).
func (p *MADPool) Put(w *MADWrapper) error {
	if w == nil || w.pool != p {
		return ErrMADForeign
	}
	if !w.out.CompareAndSwap(true, false) {
		return ErrMADNotOutstanding
	}
	p.out.Add(-1)
	w.Context = nil // drop references while pooled
	p.free.Put(w)
	return nil
}

// Outstanding returns the number of wrappers handed out and not yet put
// back.
func (p *MADPool) Outstanding() int { return int(p.out.Load()) }

func (w *MADWrapper) reset() {
	w.Buf = [smp.MADSize]byte{}
	w.Resp = [smp.MADSize]byte{}
	w.DLID, w.Path, w.Attr, w.AttrMod = 0, smp.DRPath{}, 0, 0
	w.Sent, w.Retries, w.Context = time.Time{}, 0, nil
}
