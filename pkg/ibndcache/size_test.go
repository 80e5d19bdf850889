package ibndcache

import (
	"bytes"
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
