package model

import (
	"errors"
	"sync"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/smp"
)

func TestMADPool(t *testing.T) {
	var p MADPool
	a := p.Get()
	b := p.Get()
	if p.Outstanding() != 2 || a == b {
		t.Fatalf("Outstanding = %d", p.Outstanding())
	}
	a.DLID, a.Attr, a.Retries = 7, smp.AttrPortInfo, 3
	a.Buf[0] = 1
	a.Context = "node"
	var other MADPool
	tests := []struct {
		name string
		pool *MADPool
		w    *MADWrapper
		err  error
		out  int
	}{
		{"put a", &p, a, nil, 1},
		{"put a again", &p, a, ErrMADNotOutstanding, 1},
		{"foreign pool", &other, b, ErrMADForeign, 1},
		{"not from a pool", &p, &MADWrapper{}, ErrMADForeign, 1},
		{"nil", &p, nil, ErrMADForeign, 1},
		{"put b", &p, b, nil, 0},
		{"put b again", &p, b, ErrMADNotOutstanding, 0},
	}
	for _, tt := range tests {
		if err := tt.pool.Put(tt.w); !errors.Is(err, tt.err) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.err)
		}
		if p.Outstanding() != tt.out {
			t.Errorf("%s: Outstanding %d, want %d", tt.name, p.Outstanding(), tt.out)
		}
	}
	if other.Outstanding() != 0 {
		t.Errorf("other pool Outstanding %d", other.Outstanding())
	}
	// Reused wrappers come back zeroed.
	for i := 0; i < 4; i++ {
		w := p.Get()
		if w.DLID != 0 || w.Attr != 0 || w.Retries != 0 || w.Buf[0] != 0 || w.Context != nil || !w.Sent.IsZero() {
			t.Fatalf("Get returned a dirty wrapper: %+v", w)
		}
		w.DLID, w.Buf[0] = 9, 9
		if err := p.Put(w); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMADPoolStorm hammers the pool from many goroutines, including
// double and foreign puts; the count must come back to zero (-race).
func TestMADPoolStorm(t *testing.T) {
	var p, q MADPool
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			held := make([]*MADWrapper, 0, 8)
			for i := 0; i < rounds; i++ {
				w := p.Get()
				w.DLID = uint16(g)
				w.Buf[255] = byte(i)
				held = append(held, w)
				if len(held) == cap(held) || i == rounds-1 {
					for _, h := range held {
						if h.DLID != uint16(g) {
							errs <- errors.New("wrapper shared between goroutines")
							return
						}
						if err := q.Put(h); !errors.Is(err, ErrMADForeign) {
							errs <- err
							return
						}
						if err := p.Put(h); err != nil {
							errs <- err
							return
						}
					}
					held = held[:0]
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p.Outstanding() != 0 || q.Outstanding() != 0 {
		t.Errorf("Outstanding = %d / %d after storm, want 0", p.Outstanding(), q.Outstanding())
	}
}

// Concurrent double puts of one wrapper: exactly one wins.
func TestMADPoolRacingPut(t *testing.T) {
	var p MADPool
	for i := 0; i < 200; i++ {
		w := p.Get()
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.Put(w) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if ok != 1 {
			t.Fatalf("%d puts succeeded, want 1", ok)
		}
	}
	if p.Outstanding() != 0 {
		t.Errorf("Outstanding = %d", p.Outstanding())
	}
}

func BenchmarkMADPool(b *testing.B) {
	var p MADPool
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := p.Get()
			w.DLID = 1
			if err := p.Put(w); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
