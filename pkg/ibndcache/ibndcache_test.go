package ibndcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/topology"
)

// The testdata caches were written by ibnetdiscover 44.0 (--cache) on
// ibsim 0.10 running net.2sw2path4hca from ibsim-utils' net-examples,
// attached at Switch1: *.nolid.cache before any SM ran (all LIDs 0),
// *.osm.cache after one OpenSM 3.3.23 sweep. 2sw2path4hca.osm.topo is
// `ibnetdiscover --load-cache 2sw2path4hca.osm.cache`.
func readCaches(t testing.TB) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.cache")
	if len(files) == 0 {
		t.Fatal("no testdata caches")
	}
	m := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = b
	}
	return m
}

// Loading an ibnetdiscover cache and writing it again gives the same bytes.
func TestRoundTripBytes(t *testing.T) {
	for name, b := range readCaches(t) {
		t.Run(name, func(t *testing.T) {
			f, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Nodes) != 6 || f.From == nil || f.From.GUID() != 0x200000 || f.MaxHops != 2 {
				t.Fatalf("nodes %d from %v maxhops %d", len(f.Nodes), f.From, f.MaxHops)
			}
			out, err := Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("re-marshalled cache differs (len %d vs %d) first at byte %d", len(out), len(b), firstDiff(out, b))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

var dateLine = regexp.MustCompile(`(?m)^# Topology file: generated on .*\n`)

// A loaded cache prints what ibnetdiscover --load-cache prints.
func TestLoadedTopology(t *testing.T) {
	f, err := Load("testdata/2sw2path4hca.osm.cache")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/2sw2path4hca.osm.topo")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := topology.WriteTopology(&got, f, topology.Options{}); err != nil {
		t.Fatal(err)
	}
	g, w := dateLine.ReplaceAllString(got.String(), ""), dateLine.ReplaceAllString(string(want), "")
	if g != w {
		t.Errorf("topology differs:\ngot:\n%s\nwant:\n%s", g, w)
	}
	// Discovery order is restored: the start node comes first.
	if f.Nodes[0] != f.From || f.Nodes[0].Index != 0 {
		t.Errorf("first node %v, from %v", f.Nodes[0], f.From)
	}
	if p := f.PortByLID(4); p == nil || p.GUID != 0x100004 {
		t.Errorf("PortByLID(4) = %v", p)
	}
}

func TestErrors(t *testing.T) {
	good := readCaches(t)["2sw2path4hca.osm.cache"]
	le := binary.LittleEndian
	mod := func(fn func(b []byte) []byte) []byte {
		return fn(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrEmpty},
		{"text file", []byte("#\n# Topology file: generated on ...\n"), ErrMagic},
		{"big-endian magic", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b, Magic); return b }), ErrMagic},
		{"version 2", mod(func(b []byte) []byte { le.PutUint32(b[4:], 2); return b }), ErrVersion},
		{"short header", good[:20], ErrTruncated},
		{"cut in nodes", good[:500], ErrTruncated},
		{"cut in ports", good[:len(good)-1], ErrTruncated},
		{"huge node count", mod(func(b []byte) []byte { le.PutUint32(b[8:], 0xffffffff); return b }), ErrTruncated},
		{"unknown from node", mod(func(b []byte) []byte { le.PutUint64(b[16:], 0xdead); return b }), ErrCorrupt},
		{"port of unknown node", mod(func(b []byte) []byte {
			le.PutUint64(b[len(b)-PortLen+77:], 0xdead)
			return b
		}), ErrCorrupt},
		{"duplicate node", mod(func(b []byte) []byte {
			// second node record (Hca2, 1 key) gets the first's GUID
			le.PutUint64(b[HeaderLen+NodeLen+PortKeyLen+68:], le.Uint64(b[HeaderLen+68:]))
			return b
		}), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unmarshal(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%T is not a FormatError", err)
			}
		})
	}
	// Every truncation is an error, never a panic.
	for n := 0; n < len(good); n++ {
		if _, err := Unmarshal(good[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
}

func TestLoadNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.cache")
	os.WriteFile(p, []byte("garbage!"), 0o644)
	_, err := Load(p)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(p+": not an ibnetdiscover cache")) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// A v44 cache written after a PortInfo timeout references a port with no
// record; like rdma-core v64 the loader skips the key.
func TestMissingPortRecordTolerated(t *testing.T) {
	b := append([]byte(nil), readCaches(t)["2sw2path4hca.osm.cache"]...)
	le := binary.LittleEndian
	// First node (Hca4) has one key: point it at a port with no record.
	le.PutUint64(b[HeaderLen+NodeLen:], 0x999999)
	f, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.NodeByGUID(0x100009); n == nil || n.Port(1) != nil {
		t.Fatalf("Hca4 port 1 should be missing: %v", n)
	}
}

func TestHashGUID(t *testing.T) {
	// Bucket order seen in the ibnetdiscover caches: 0x10000a, 0x200001,
	// 0x100001, 0x200000, 0x100004, 0x100007.
	order := []uint64{0x10000a, 0x200001, 0x100001, 0x200000, 0x100004, 0x100007}
	for i := 1; i < len(order); i++ {
		if hashGUID(order[i-1]) >= hashGUID(order[i]) {
			t.Errorf("bucket(%#x)=%d not before bucket(%#x)=%d", order[i-1], hashGUID(order[i-1]), order[i], hashGUID(order[i]))
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, b := range readCaches(f) {
		f.Add(b)
		f.Add(b[:HeaderLen+NodeLen+3])
	}
	f.Add([]byte{0x2b, 0x83, 0xe7, 0x8f, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fab, err := Unmarshal(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a FormatError: %v", err, err)
			}
			return
		}
		// Whatever loads must print and re-marshal without panicking.
		var buf bytes.Buffer
		topology.WriteTopology(&buf, fab, topology.Options{})
		topology.WritePorts(&buf, fab, nil)
		Marshal(fab)
	})
}

func BenchmarkUnmarshal(b *testing.B) {
	c := readCaches(b)["2sw2path4hca.osm.cache"]
	b.ReportAllocs()
	b.SetBytes(int64(len(c)))
	for i := 0; i < b.N; i++ {
		if _, err := Unmarshal(c); err != nil {
			b.Fatal(err)
		}
	}
}
