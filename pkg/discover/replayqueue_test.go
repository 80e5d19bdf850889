package discover

import "testing"

// TestReplayQueueFIFO checks the replay's block queue against a plain
// slice: pushes and pops interleaved in bursts larger and smaller than a
// block, the queue emptied and refilled, items out in the order in.
func TestReplayQueueFIFO(t *testing.T) {
	var q replayQueue
	var want []replayItem
	next := int32(0)
	for round, burst := range []struct{ push, pop int }{
		{1, 1}, {3, 1}, {queueBlock, 10}, {queueBlock + 5, 2 * queueBlock}, {2, 0},
		{5 * queueBlock, 3 * queueBlock}, {0, 3 * queueBlock}, {queueBlock - 1, queueBlock - 1},
	} {
		for range burst.push {
			it := replayItem{k: kPortInfo, node: next, num: uint8(next), d: next * 3}
			next++
			q.push(it)
			want = append(want, it)
		}
		for range burst.pop {
			if q.len() == 0 {
				break
			}
			got := q.pop()
			if got != want[0] {
				t.Fatalf("round %d: popped %+v, want %+v", round, got, want[0])
			}
			want = want[1:]
		}
		if q.len() != len(want) {
			t.Fatalf("round %d: len %d, want %d", round, q.len(), len(want))
		}
	}
	if q.len() != 0 {
		t.Fatalf("%d items left", q.len())
	}
}
