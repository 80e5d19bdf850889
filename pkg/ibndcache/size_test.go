package ibndcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeros is an endless stream of zero bytes that counts what was read.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// Endless and oversized inputs are refused without being read to the end.
func TestSizeLimits(t *testing.T) {
	good := readCaches(t)["2sw2path4hca.osm.cache"]

	// /dev/zero: bad magic after the header.
	if _, err := Load("/dev/zero"); !errors.Is(err, ErrMagic) || !strings.Contains(err.Error(), "/dev/zero") {
		t.Errorf("/dev/zero: %v", err)
	}
	// A valid header followed by endless data stops at what the counts allow.
	z := &zeros{}
	if _, err := Read(io.MultiReader(bytes.NewReader(good[:HeaderLen]), z)); err == nil {
		t.Error("header + zeros loaded")
	}
	if max := int64(6*(NodeLen+255*PortKeyLen) + 32*PortLen); z.n > max+64<<10 {
		t.Errorf("read %d bytes of the endless tail, at most %d needed", z.n, max)
	}
	// Trailing bytes are ignored, as ibnetdiscover does.
	if _, err := Read(io.MultiReader(bytes.NewReader(good), &zeros{})); err != nil {
		t.Errorf("cache + trailing zeros: %v", err)
	}
	// Over the limit: by the header's counts, or by the bytes read.
	if _, _, err := read(bytes.NewReader(good), HeaderLen+NodeLen); !errors.Is(err, ErrTooLarge) {
		t.Errorf("counts over the limit: %v", err)
	}
	if _, _, err := read(bytes.NewReader(good), int64(len(good))-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("bytes over the limit: %v", err)
	}
	if _, _, err := read(bytes.NewReader(good), int64(len(good))); err != nil {
		t.Errorf("exactly at the limit: %v", err)
	}
	// 1-3 bytes of the magic are a truncated cache; other short files are
	// not caches.
	for n := 1; n < 4; n++ {
		if _, err := Read(bytes.NewReader(good[:n])); !errors.Is(err, ErrTruncated) {
			t.Errorf("%d bytes of the magic: %v", n, err)
		}
	}
	if _, err := Read(strings.NewReader("ab")); !errors.Is(err, ErrMagic) {
		t.Errorf("2 other bytes: %v", err)
	}
	// A directory is named as such.
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrIsDir) || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: %v", err)
	}
	p := filepath.Join(dir, "x.cache")
	os.WriteFile(p, good, 0o644)
	if _, err := Load(p); err != nil {
		t.Errorf("good file: %v", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// TestLoadMaxReadsHeaderOnly: a header counting more nodes than the limit
// (or more ports than that many nodes can have) is refused with
// ErrTooManyNodes having read the header only, however large the rest.
func TestLoadMaxReadsHeaderOnly(t *testing.T) {
	for _, tc := range []struct {
		nodes, ports uint32
		max          int
		ok           bool
	}{
		{1_000_000, 0, 1000, false},
		{1000, 1000 * 256, 1000, true},
		{1000, 1000*256 + 1, 1000, false},
		{1001, 0, 1000, false},
		{1_000_000, 0, 0, true}, // no limit
	} {
		hdr := make([]byte, HeaderLen)
		le := binary.LittleEndian
		le.PutUint32(hdr, Magic)
		le.PutUint32(hdr[4:], Version)
		le.PutUint32(hdr[8:], tc.nodes)
		le.PutUint32(hdr[12:], tc.ports)
		// 1 MiB after the header: any read past the header shows in r.n,
		// and the accepted cases only need to get past the limit checks
		// (they then fail on the zeros, with another error).
		r := &countingReader{r: io.MultiReader(bytes.NewReader(hdr), io.LimitReader(&zeros{}, 1<<20))}
		_, _, err := readMax(r, MaxSize, tc.max)
		if tc.ok {
			if errors.Is(err, ErrTooManyNodes) {
				t.Errorf("%d nodes, %d ports, limit %d: refused: %v", tc.nodes, tc.ports, tc.max, err)
			}
			continue
		}
		if !errors.Is(err, ErrTooManyNodes) {
			t.Errorf("%d nodes, %d ports, limit %d: err = %v, want %v", tc.nodes, tc.ports, tc.max, err, ErrTooManyNodes)
		}
		if r.n > HeaderLen {
			t.Errorf("%d nodes, limit %d: read %d bytes before refusing, want the %d of the header", tc.nodes, tc.max, r.n, HeaderLen)
		}
	}
}
