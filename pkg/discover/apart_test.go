package discover

import (
	"context"
	"sync"
	"testing"
	"time"
)

// ParallelApart starts, at every step, the first job in order whose key
// no running job holds, never runs two jobs of one key at once, and runs
// every job once. The test holds each job until it releases it, one at a
// time in a fixed order, and compares every start with that rule.
func TestParallelApartOrder(t *testing.T) {
	const n = 60
	keys := make([]int, n)
	for i := range keys {
		switch {
		case i%7 == 3:
			keys[i] = -1
		case i < 20:
			keys[i] = 1000 + i%3 // sparse keys
		default:
			keys[i] = i % 5
		}
	}
	checkApartOrder(t, n, 4, func(i int) (int, int) { return keys[i], -1 }, nil,
		func(ctx context.Context, job func(ctx context.Context, i int) error) error {
			return ParallelApart(ctx, 4, n, func(i int) int { return keys[i] }, job)
		})
}

// The engine's form: two keys per job (either one shared keeps two jobs
// apart), and jobs free to run whatever their keys (a released class of
// probes), which hold no key while they run.
func TestParallelApartTwoKeys(t *testing.T) {
	const n, workers = 80, 5
	keys := func(i int) (int, int) {
		switch {
		case i%9 == 4:
			return -1, -1
		case i%2 == 0:
			return i % 4, 100 + i%3
		default:
			return -1, 100 + i%5
		}
	}
	free := func(i int) bool { return i%11 == 5 }
	checkApartOrder(t, n, workers, keys, free, func(ctx context.Context, job func(ctx context.Context, i int) error) error {
		return parallelApart(ctx, nil, nil, workers, n, keys, free, job)
	})
}

// checkApartOrder runs the n jobs through run with workers workers,
// releasing the oldest running job one at a time, and checks each start
// against the rule: the first job in order not begun that is free or
// shares no key with a running job that holds its keys.
func checkApartOrder(t *testing.T, n, workers int, keys func(i int) (int, int), free func(i int) bool,
	run func(ctx context.Context, job func(ctx context.Context, i int) error) error) {
	t.Helper()
	started := make(chan int)
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var err error
	go func() {
		defer wg.Done()
		err = run(context.Background(), func(ctx context.Context, i int) error {
			started <- i
			<-release[i]
			return nil
		})
	}()
	next := func() int {
		select {
		case i := <-started:
			return i
		case <-time.After(time.Minute):
			t.Fatal("no job started within a minute")
			return -1
		}
	}
	isFree := func(i int) bool { return free != nil && free(i) }
	done := make([]bool, n)
	begun := make([]bool, n)
	var running []int
	want := func() int {
		for i := 0; i < n; i++ {
			if begun[i] {
				continue
			}
			ok := true
			if !isFree(i) {
				a1, a2 := keys(i)
				for _, r := range running {
					if isFree(r) {
						continue
					}
					b1, b2 := keys(r)
					for _, k := range []int{a1, a2} {
						if k >= 0 && (k == b1 || k == b2) {
							ok = false
						}
					}
				}
			}
			if ok {
				return i
			}
		}
		return -1
	}
	// starts takes the starts the rule allows now; several may happen at
	// once (workers were idle, or a job ended and woke others), in any
	// order, so they are compared as a set.
	starts := func() {
		var want1 []int
		for len(running) < workers {
			w := want()
			if w < 0 {
				break
			}
			want1 = append(want1, w)
			begun[w] = true
			running = append(running, w)
		}
		got := map[int]bool{}
		for range want1 {
			got[next()] = true
		}
		for _, w := range want1 {
			if !got[w] {
				t.Fatalf("started %v, want %v (running %v)", got, want1, running)
			}
		}
	}
	starts()
	for len(running) > 0 {
		// release the oldest running job, then take the starts it allows
		r := running[0]
		running = running[1:]
		done[r] = true
		close(release[r])
		starts()
	}
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range done {
		if !d {
			t.Errorf("job %d never ran", i)
		}
	}
}
