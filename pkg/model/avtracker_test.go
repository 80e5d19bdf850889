package model

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

type destroyLog struct {
	mu   sync.Mutex
	seen map[*AV]int
	list []*AV
}

func (d *destroyLog) fn(av *AV) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[*AV]int{}
	}
	d.seen[av]++
	d.list = append(d.list, av)
}

func (d *destroyLog) count(av *AV) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[av]
}

func TestAVTracker(t *testing.T) {
	var log destroyLog
	var tr AVTracker
	tr.Init(log.fn)
	a := &AV{DLID: 1, MTU: 5, Rate: 16, HopCount: 2}
	b := &AV{DLID: 1, MTU: 4, Rate: 7, HopCount: 3}

	if _, ok := tr.GetCurrent(true); ok {
		t.Fatal("GetCurrent on an empty tracker")
	}
	if err := tr.IncRef(a); !errors.Is(err, ErrAVUnknown) {
		t.Errorf("IncRef unknown: %v", err)
	}
	if err := tr.SetCurrent(nil); !errors.Is(err, ErrAVUnknown) {
		t.Errorf("SetCurrent(nil): %v", err)
	}

	type want struct {
		refsA, refsB int // -1: not in tracker
		destroyedA   int
		destroyedB   int
		retired      []*AV
		current      *AV
	}
	refs := func(av *AV) int {
		c, ok := tr.Refs(av)
		if !ok {
			return -1
		}
		return int(c)
	}
	steps := []struct {
		name string
		do   func() error
		err  error
		want want
	}{
		{"set a", func() error { return tr.SetCurrent(a) }, nil, want{1, -1, 0, 0, nil, a}},
		{"set a again (no-op)", func() error { return tr.SetCurrent(a) }, nil, want{1, -1, 0, 0, nil, a}},
		{"get+ref", func() error { tr.GetCurrent(true); return nil }, nil, want{2, -1, 0, 0, nil, a}},
		{"get no ref", func() error { tr.GetCurrent(false); return nil }, nil, want{2, -1, 0, 0, nil, a}},
		{"incref", func() error { return tr.IncRef(a) }, nil, want{3, -1, 0, 0, nil, a}},
		{"decref own ref refused", func() error { return tr.SubRef(a, 3) }, ErrAVRefUnderflow, want{3, -1, 0, 0, nil, a}},
		{"set b retires a", func() error { return tr.SetCurrent(b) }, nil, want{2, 1, 0, 0, []*AV{a}, b}},
		{"decref a", func() error { return tr.DecRef(a) }, nil, want{1, 1, 0, 0, []*AV{a}, b}},
		{"subref a too much", func() error { return tr.SubRef(a, 2) }, ErrAVRefUnderflow, want{1, 1, 0, 0, []*AV{a}, b}},
		{"decref b own refused", func() error { return tr.DecRef(b) }, ErrAVRefUnderflow, want{1, 1, 0, 0, []*AV{a}, b}},
		{"decref a destroys", func() error { return tr.DecRef(a) }, nil, want{-1, 1, 1, 0, nil, b}},
		{"decref a gone", func() error { return tr.DecRef(a) }, ErrAVUnknown, want{-1, 1, 1, 0, nil, b}},
		{"incref b", func() error { return tr.IncRef(b) }, nil, want{-1, 2, 1, 0, nil, b}},
		{"clear keeps referenced b", func() error { tr.ClearCurrent(); return nil }, nil, want{-1, 1, 1, 0, []*AV{b}, nil}},
		{"clear again no-op", func() error { tr.ClearCurrent(); return nil }, nil, want{-1, 1, 1, 0, []*AV{b}, nil}},
		{"set b again: own ref back", func() error { return tr.SetCurrent(b) }, nil, want{-1, 2, 1, 0, nil, b}},
		{"subref b 1", func() error { return tr.SubRef(b, 1) }, nil, want{-1, 1, 1, 0, nil, b}},
		{"clear destroys b", func() error { tr.ClearCurrent(); return nil }, nil, want{-1, -1, 1, 1, nil, nil}},
		{"a comes back as new", func() error { return tr.SetCurrent(a) }, nil, want{1, -1, 1, 1, nil, a}},
		{"set b destroys a", func() error { return tr.SetCurrent(b) }, nil, want{-1, 1, 2, 1, nil, b}},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.err) {
			t.Errorf("%s: err %v, want %v", st.name, err, st.err)
		}
		w := st.want
		got := want{refs(a), refs(b), log.count(a), log.count(b), tr.Retired(), nil}
		got.current, _ = tr.GetCurrent(false)
		if got.refsA != w.refsA || got.refsB != w.refsB || got.destroyedA != w.destroyedA ||
			got.destroyedB != w.destroyedB || got.current != w.current || len(got.retired) != len(w.retired) {
			t.Fatalf("%s: got %+v, want %+v", st.name, got, w)
		}
		for i := range w.retired {
			if got.retired[i] != w.retired[i] {
				t.Fatalf("%s: retired %v, want %v", st.name, got.retired, w.retired)
			}
		}
	}

	// Destroy takes the current AV and referenced retired ones.
	c := &AV{DLID: 3}
	_ = tr.IncRef(b)
	_ = tr.SetCurrent(c) // b retired with 1 ref
	tr.Destroy()
	if log.count(b) != 2 || log.count(c) != 1 {
		t.Errorf("Destroy: b %d c %d, want 2 1", log.count(b), log.count(c))
	}
	if err := tr.SetCurrent(a); !errors.Is(err, ErrTrackerDestroyed) {
		t.Errorf("SetCurrent after Destroy: %v", err)
	}
	if _, ok := tr.GetCurrent(true); ok {
		t.Error("GetCurrent after Destroy")
	}
	tr.Destroy() // idempotent
	if log.count(b) != 2 {
		t.Error("second Destroy destroyed again")
	}
	tr.InitState()
	if err := tr.SetCurrent(a); err != nil {
		t.Errorf("after InitState: %v", err)
	}
}

// TestAVTrackerStorm: readers take and drop references on the current AV
// while a writer keeps replacing it. Every AV must be destroyed exactly
// once, and only when no reader holds it (-race).
func TestAVTrackerStorm(t *testing.T) {
	const readers, avs = 6, 3000
	var (
		tr      AVTracker
		inUse   sync.Map // *AV -> *atomic.Int32 held by readers
		bad     atomic.Int32
		log     destroyLog
		created []*AV
	)
	tr.Init(func(av *AV) {
		if n, _ := inUse.Load(av); n.(*atomic.Int32).Load() != 0 {
			bad.Add(1)
		}
		log.fn(av)
	})
	newAV := func(i int) *AV {
		av := &AV{DLID: uint16(i + 1)}
		inUse.Store(av, new(atomic.Int32))
		created = append(created, av)
		return av
	}
	if err := tr.SetCurrent(newAV(0)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; !stop.Load() || i < 100; i++ {
				av, ok := tr.GetCurrent(true)
				if !ok {
					continue
				}
				n, _ := inUse.Load(av)
				cnt := n.(*atomic.Int32)
				cnt.Add(1)
				if i%3 == 0 && tr.IncRef(av) == nil { // a second reference
					if tr.DecRef(av) != nil {
						bad.Add(1)
					}
				}
				cnt.Add(-1)
				if err := tr.DecRef(av); err != nil {
					bad.Add(1)
				}
			}
		}(r)
	}
	for i := 1; i < avs; i++ {
		if err := tr.SetCurrent(newAV(i)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			tr.ClearCurrent()
		}
	}
	stop.Store(true)
	wg.Wait()
	tr.ClearCurrent()
	if bad.Load() != 0 {
		t.Errorf("%d AVs destroyed while held or refused a DecRef", bad.Load())
	}
	if r := tr.Retired(); len(r) != 0 {
		t.Errorf("%d AVs still retired after all references dropped", len(r))
	}
	for _, av := range created {
		if n := log.count(av); n != 1 {
			t.Errorf("AV %d destroyed %d times", av.DLID, n)
		}
	}
}

func BenchmarkAVTrackerGetDec(b *testing.B) {
	var tr AVTracker
	tr.Init(nil)
	_ = tr.SetCurrent(&AV{DLID: 1})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			av, _ := tr.GetCurrent(true)
			_ = tr.DecRef(av)
		}
	})
}
