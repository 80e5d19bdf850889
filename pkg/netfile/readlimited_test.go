package netfile

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"
)

// TestReadLimited: readLimited returns every byte of what it reads, in
// order, when it holds at most the limit, and ErrTooLarge when it holds
// more, whatever the size against its chunks (4 KiB doubling to 1 MiB)
// and however short the reads are.
func TestReadLimited(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 12287, 12288, 12289, 1<<20 - 1, 1 << 20, 3<<20 + 5} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		for _, limit := range []int{size - 1, size, size + 1, size + 4096} {
			if limit < 0 {
				continue
			}
			for _, half := range []bool{false, true} {
				var r io.Reader = bytes.NewReader(data)
				if half {
					r = iotest.HalfReader(r)
				}
				got, err := readLimited(r, int64(limit))
				switch {
				case size > limit:
					if !errors.Is(err, ErrTooLarge) || got != nil {
						t.Errorf("size %d, limit %d, half reads %v: %d bytes, %v; want ErrTooLarge", size, limit, half, len(got), err)
					}
				case err != nil || !bytes.Equal(got, data):
					t.Errorf("size %d, limit %d, half reads %v: %d bytes, %v; want the %d bytes", size, limit, half, len(got), err, size)
				}
			}
		}
	}
	// A read error is returned as it is.
	if _, err := readLimited(iotest.ErrReader(io.ErrClosedPipe), 10); err != io.ErrClosedPipe {
		t.Errorf("read error: %v, want %v", err, io.ErrClosedPipe)
	}
}

// zeros reads as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// BenchmarkReadLimitedTooLarge reads an endless input (/dev/zero) to the
// 64 MiB limit: B/op is what finding it too large costs.
func BenchmarkReadLimitedTooLarge(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := readLimited(zeros{}, DefaultMaxBytes); !errors.Is(err, ErrTooLarge) {
			b.Fatal(err)
		}
	}
}
