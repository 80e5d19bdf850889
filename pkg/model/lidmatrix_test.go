package model

import (
	"errors"
	"sync"
	"testing"
)

func TestLIDMatrix(t *testing.T) {
	m := NewLIDMatrix(4)
	if m.NumPorts() != 4 || m.MaxLID() != 0 || m.NumRows() != 0 {
		t.Fatalf("new: ports %d maxlid %d rows %d", m.NumPorts(), m.MaxLID(), m.NumRows())
	}
	if got := m.Get(1, 1); got != NoPath {
		t.Errorf("empty Get = %#x", got)
	}
	type op struct {
		lid  uint16
		port int
		hops uint8
	}
	ops := []op{
		{10, 3, 5},
		{10, 1, 2}, // lowers column 0
		{10, 2, 7}, // does not raise it
		{3, 0, 0},  // own LID
		{3, 4, 2},
		{10, 1, 9}, // raising an entry leaves column 0 alone (OpenSM)
		{700, 4, 1},
	}
	for _, o := range ops {
		if err := m.Set(o.lid, o.port, o.hops); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		lid  uint16
		port int
		want uint8
	}{
		{10, 0, 2}, {10, 1, 9}, {10, 2, 7}, {10, 3, 5}, {10, 4, NoPath},
		{3, 0, 0}, {3, 4, 2}, {3, 1, NoPath},
		{700, 0, 1}, {700, 4, 1},
		{4, 0, NoPath}, {699, 2, NoPath}, {701, 0, NoPath}, {0xFFFF, 0, NoPath},
		{10, 5, NoPath}, {10, -1, NoPath},
	}
	for _, tt := range tests {
		if got := m.Get(tt.lid, tt.port); got != tt.want {
			t.Errorf("Get(%d, %d) = %#x, want %#x", tt.lid, tt.port, got, tt.want)
		}
	}
	if m.LeastHops(10) != 2 || m.LeastHops(11) != NoPath {
		t.Errorf("LeastHops: %d %d", m.LeastHops(10), m.LeastHops(11))
	}
	if m.MaxLID() != 700 || m.NumRows() != 3 {
		t.Errorf("MaxLID %d rows %d, want 700 3", m.MaxLID(), m.NumRows())
	}
	if row := m.Row(3); len(row) != 5 || row[0] != 0 || row[4] != 2 {
		t.Errorf("Row(3) = %v", row)
	}
	if m.Row(4) != nil || m.Row(5000) != nil {
		t.Error("Row of a LID without row is not nil")
	}
	if err := m.Set(1, 5, 1); !errors.Is(err, ErrPortRange) {
		t.Errorf("Set port 5: %v, want ErrPortRange", err)
	}
	m.SetMinLIDSize(2000)
	if m.MaxLID() != 2000 || m.NumRows() != 3 || m.Get(10, 3) != 5 {
		t.Errorf("after SetMinLIDSize: maxlid %d rows %d", m.MaxLID(), m.NumRows())
	}
	m.SetMinLIDSize(5) // never shrinks
	if m.MaxLID() != 2000 {
		t.Errorf("SetMinLIDSize shrank to %d", m.MaxLID())
	}
	m.Reset()
	if m.Get(3, 0) != NoPath || m.NumRows() != 3 {
		t.Error("Reset did not clear")
	}
	m.Init(2)
	if m.NumPorts() != 2 || m.NumRows() != 0 || m.MaxLID() != 0 {
		t.Error("Init did not empty")
	}
	if err := m.Set(0xFFFF, 2, 3); err != nil || m.Get(0xFFFF, 2) != 3 || m.MaxLID() != 0xFFFF {
		t.Errorf("LID 0xffff: %v %d", err, m.Get(0xFFFF, 2))
	}
}

func TestLIDMatrixInitClamp(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{-3, 0}, {0, 0}, {36, 36}, {254, 254}, {300, 254}} {
		if got := NewLIDMatrix(tt.in).NumPorts(); got != tt.want {
			t.Errorf("NewLIDMatrix(%d).NumPorts() = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// Matrices from ComputeHops share their row index until one of them gets
// a new row; that must not disturb the others.
func TestLIDMatrixSharedIndex(t *testing.T) {
	f, s1, s2, _, _, _, _ := line(t)
	h := ComputeHops(f)
	m1, m2 := h.Matrix(s1), h.Matrix(s2)
	if err := m1.Set(6, 3, 1); err != nil { // CA C's LID: a new row
		t.Fatal(err)
	}
	if m1.Get(6, 3) != 1 || m1.Get(3, 2) != 2 {
		t.Errorf("m1 after new row: %d %d", m1.Get(6, 3), m1.Get(3, 2))
	}
	if m2.Get(6, 0) != NoPath || m2.NumRows() != 3 || m2.Get(3, 2) != 1 {
		t.Errorf("m2 disturbed: %d rows %d", m2.Get(6, 0), m2.NumRows())
	}
	if err := m2.Set(9000, 1, 4); err != nil {
		t.Fatal(err)
	}
	if m1.MaxLID() != 6 || m2.MaxLID() != 9000 {
		t.Errorf("MaxLID m1 %d m2 %d", m1.MaxLID(), m2.MaxLID())
	}
}

// Built matrices are read concurrently (run with -race).
func TestLIDMatrixConcurrentRead(t *testing.T) {
	f := fatTree(t, 8, 8)
	h := ComputeHops(f)
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for g := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, sw := range h.Switches() {
				for lid := uint16(0); lid <= h.MaxLID(); lid++ {
					sums[g] += int(h.LeastHopsTo(sw, lid))
				}
			}
		}()
	}
	wg.Wait()
	for g := 1; g < len(sums); g++ {
		if sums[g] != sums[0] {
			t.Fatalf("reader %d saw %d, reader 0 %d", g, sums[g], sums[0])
		}
	}
}

// FuzzLIDMatrix checks the matrix against a map model: Get returns what
// Set stored, column 0 is the running minimum, out-of-range is NoPath.
func FuzzLIDMatrix(f *testing.F) {
	f.Add(uint8(4), []byte{0, 10, 3, 5, 0, 10, 1, 2, 2, 188, 4, 1})
	f.Add(uint8(36), []byte{0xFF, 0xFF, 36, 0, 0, 0, 0, 0})
	f.Add(uint8(0), []byte{0, 1, 0, 0, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, nports uint8, ops []byte) {
		m := NewLIDMatrix(int(nports))
		ref := map[uint16][]uint8{} // reference rows
		for len(ops) >= 4 {
			lid := uint16(ops[0])<<8 | uint16(ops[1])
			port := int(ops[2])
			hops := ops[3]
			ops = ops[4:]
			err := m.Set(lid, port, hops)
			if port > m.NumPorts() {
				if !errors.Is(err, ErrPortRange) {
					t.Fatalf("Set port %d of %d: %v", port, m.NumPorts(), err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			row, ok := ref[lid]
			if !ok {
				row = make([]uint8, m.NumPorts()+1)
				for i := range row {
					row[i] = NoPath
				}
				ref[lid] = row
			}
			row[port] = hops
			if hops < row[0] {
				row[0] = hops
			}
		}
		if m.NumRows() != len(ref) {
			t.Fatalf("%d rows, want %d", m.NumRows(), len(ref))
		}
		for lid, row := range ref {
			for p, v := range row {
				if got := m.Get(lid, p); got != v {
					t.Fatalf("Get(%d, %d) = %d, want %d", lid, p, got, v)
				}
			}
			if m.Get(lid, len(row)) != NoPath {
				t.Fatal("column past NumPorts is not NoPath")
			}
		}
	})
}

func BenchmarkLIDMatrixSet(b *testing.B) {
	m := NewLIDMatrix(36)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		lid := uint16(i % 1000)
		_ = m.Set(lid, i%37, uint8(i))
	}
}
