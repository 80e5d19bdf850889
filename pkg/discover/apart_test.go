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
	const n, workers = 60, 4
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
		err = ParallelApart(context.Background(), workers, n, func(i int) int { return keys[i] }, func(ctx context.Context, i int) error {
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
	// the reference: what should start when a worker is free
	done := make([]bool, n)
	begun := make([]bool, n)
	var running []int
	want := func() int {
		for i := 0; i < n; i++ {
			if begun[i] {
				continue
			}
			free := true
			for _, r := range running {
				if keys[i] >= 0 && keys[r] == keys[i] {
					free = false
				}
			}
			if free {
				return i
			}
		}
		return -1
	}
	start := func() {
		w := want()
		if w < 0 || len(running) == workers {
			return
		}
		got := next()
		if got != w {
			t.Fatalf("started job %d, want %d (running %v)", got, w, running)
		}
		begun[got] = true
		running = append(running, got)
	}
	for range workers {
		start()
	}
	for len(running) > 0 {
		// release the oldest running job, then let the starts it allows
		// happen
		r := running[0]
		running = running[1:]
		done[r] = true
		close(release[r])
		for len(running) < workers && want() >= 0 {
			start()
		}
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
