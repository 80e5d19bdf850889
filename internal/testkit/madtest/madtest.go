// Package madtest holds what the MAD codecs' tests (pkg/smp, pkg/pma)
// share: the captured test vectors in their testdata/*.hex files and the
// decode -> encode -> decode fuzz check of an attribute codec.
package madtest

import (
	"bufio"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// MADSize is the size of every captured MAD.
const MADSize = 256

// Vector is one captured response MAD from a testdata/*.hex file (written
// by the package's testdata/capture.sh, which notes in the file where the
// bytes came from): the 256 bytes and the text the real tool printed.
type Vector struct {
	Name string
	MAD  []byte
	Out  []string // tool output, without the "> " prefix
}

// Load reads one vector file: "#" lines are comments, "> " lines the
// tool's output, the other lines the MAD in hex.
func Load(t testing.TB, path string) Vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := Vector{Name: strings.TrimSuffix(filepath.Base(path), ".hex")}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "> "):
			v.Out = append(v.Out, line[2:])
		case line == ">":
			v.Out = append(v.Out, "")
		default:
			b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v.MAD = append(v.MAD, b...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(v.MAD) != MADSize {
		t.Fatalf("%s: %d MAD bytes, want %d", path, len(v.MAD), MADSize)
	}
	return v
}

// LoadAll reads every testdata/*.hex file of the package under test.
func LoadAll(t testing.TB) []Vector {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.hex")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test vectors: %v", err)
	}
	vs := make([]Vector, 0, len(paths))
	for _, p := range paths {
		vs = append(vs, Load(t, p))
	}
	return vs
}

// Must reads testdata/name.hex.
func Must(t testing.TB, name string) Vector {
	t.Helper()
	return Load(t, filepath.Join("testdata", name+".hex"))
}

// Codec is what every attribute value type implements.
type Codec interface {
	UnmarshalBinary([]byte) error
	MarshalTo([]byte) error
}

// FuzzAttr fuzzes the attribute codec *T with the corpus f was seeded
// with: decode -> encode (into a data area of size bytes) -> decode gives
// the same value, and a decoder fails only with errShort.
func FuzzAttr[T any, P interface {
	*T
	Codec
}](f *testing.F, size int, errShort error) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var v1 T
		if err := P(&v1).UnmarshalBinary(b); err != nil {
			if !errors.Is(err, errShort) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out := make([]byte, size)
		if err := P(&v1).MarshalTo(out); err != nil {
			t.Fatal(err)
		}
		var v2 T
		if err := P(&v2).UnmarshalBinary(out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("round trip\n got %+v\nwant %+v", v2, v1)
		}
	})
}

// BenchDecode reports the time and allocations of c.UnmarshalBinary(b)
// (SetBytes(len(b)) when perByte).
func BenchDecode(tb *testing.B, c interface{ UnmarshalBinary([]byte) error }, b []byte, perByte bool) {
	tb.Helper()
	if perByte {
		tb.SetBytes(int64(len(b)))
	}
	tb.ReportAllocs()
	for tb.Loop() {
		if err := c.UnmarshalBinary(b); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchEncode reports the time and allocations of c.MarshalTo(out)
// (SetBytes(len(out)) when perByte).
func BenchEncode(tb *testing.B, c interface{ MarshalTo([]byte) error }, out []byte, perByte bool) {
	tb.Helper()
	if perByte {
		tb.SetBytes(int64(len(out)))
	}
	tb.ReportAllocs()
	for tb.Loop() {
		if err := c.MarshalTo(out); err != nil {
			tb.Fatal(err)
		}
	}
}
