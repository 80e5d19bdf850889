package routing

import "errors"

// errNueReplay is returned where OpenSM's nue would fail (or crash) and
// the replay gives up.
var errNueReplay = errors.New("nue replay: OpenSM's nue would not route this fabric")

// nueHeapItem is an element of a dHeap: it is told its index whenever the
// heap moves it (cl_heap's index update callback).
type nueHeapItem interface{ setHeapIndex(int) }

// dHeap is complib's cl_heap (OpenSM 3.3.23, complib/cl_heap.c): a d-ary
// min-heap of uint64 keys with a fixed capacity, ported move for move,
// because which of two equal keys comes out first decides nue's routes.
type dHeap struct {
	d     int
	keys  []uint64
	items []nueHeapItem
	size  int
}

func newDHeap(d, capacity int) *dHeap {
	return &dHeap{d: d, keys: make([]uint64, capacity), items: make([]nueHeapItem, capacity)}
}

func (h *dHeap) set(i int, key uint64, it nueHeapItem) {
	h.keys[i], h.items[i] = key, it
	it.setHeapIndex(i)
}

func (h *dHeap) down(index int) {
	tk, ti := h.keys[index], h.items[index]
	swapped := false
	parent := index
	for parent*h.d+1 < h.size {
		first := parent*h.d + 1
		swap := first
		for c := first + 1; c < first+h.d && c < h.size; c++ {
			if h.keys[c] <= h.keys[swap] {
				swap = c
			}
		}
		if tk > h.keys[swap] {
			h.set(parent, h.keys[swap], h.items[swap])
			parent = swap
			swapped = true
		} else {
			break
		}
	}
	if swapped {
		h.set(parent, tk, ti)
	}
}

func (h *dHeap) up(index int) {
	if index == 0 {
		return
	}
	tk, ti := h.keys[index], h.items[index]
	swapped := false
	swap := 0
	parent := index
	for {
		child := parent
		parent = (child - 1) / h.d
		if tk < h.keys[parent] {
			h.set(child, h.keys[parent], h.items[parent])
			swap = parent
			swapped = true
		} else {
			break
		}
		if parent <= 0 {
			break
		}
	}
	if swapped {
		h.set(swap, tk, ti)
	}
}

// insert adds it with key; it fails when the heap is full.
func (h *dHeap) insert(key uint64, it nueHeapItem) error {
	if h.size == len(h.keys) {
		return errNueReplay
	}
	h.set(h.size, key, it)
	h.size++
	h.up(h.size - 1)
	return nil
}

// modifyKey changes the key at index.
func (h *dHeap) modifyKey(key uint64, index int) error {
	if index < 0 || index >= h.size {
		return errNueReplay
	}
	old := h.keys[index]
	h.keys[index] = key
	switch {
	case key < old:
		h.up(index)
	case key > old:
		h.down(index)
	}
	return nil
}

// delete removes whatever is at index (nil when index is out of range)
// and returns it.
func (h *dHeap) delete(index int) nueHeapItem {
	if h.size == 0 || index < 0 || index >= h.size {
		return nil
	}
	if h.size == 1 {
		h.size--
		return h.items[0]
	}
	h.size--
	tk, ti := h.keys[h.size], h.items[h.size]
	h.set(h.size, h.keys[index], h.items[index])
	h.set(index, tk, ti)
	if index == 0 {
		h.down(index)
	} else {
		parent := (index - 1) / h.d
		switch {
		case h.keys[parent] < h.keys[index]:
			h.down(index)
		case h.keys[parent] > h.keys[index]:
			h.up(index)
		}
	}
	return h.items[h.size]
}

// extractRoot removes and returns the least element, nil when empty.
func (h *dHeap) extractRoot() nueHeapItem { return h.delete(0) }
