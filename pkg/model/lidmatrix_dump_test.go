package model

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ibsimFabric hand-builds the fabric of testdata/lidmatrix.net with the
// LIDs OpenSM gave it (testdata/lidmatrix.topo is ibnetdiscover's view).
//
// testdata/lidmatrix.golden was written by OpenSM 3.3.23 itself, not by
// this package: ibsim 0.10 ran lidmatrix.net, then
//
//	SIM_HOST=H-1 LD_PRELOAD=.../libumad2sim.so opensm -o -F /dev/null \
//	    -D 0x43 --dump_files_dir <dir>
//
// wrote <dir>/opensm-lid-matrix.dump. The switch GUIDs are chosen so that
// the map order differs from GUID order.
func ibsimFabric(t testing.TB) *Fabric {
	b := newBuilder(t)
	sd := b.sw(0x00000000000000ff, 4, 8)
	sc := b.sw(0x0300000000000000, 4, 2)
	sb := b.sw(0x0100000000000002, 8, 4)
	sa := b.sw(0x0200000000000001, 8, 3)
	h3 := b.ca(0x0002c90300000030, 2, 6) // ports 1, 2: lids 6, 7
	h2 := b.ca(0x0002c90300000020, 1, 5)
	h1 := b.ca(0x0002c90300000010, 1, 1)
	b.link(sa, 1, h1, 1)
	b.link(sa, 2, sb, 1)
	b.link(sa, 3, sb, 2)
	b.link(sa, 4, sc, 1)
	b.link(sb, 3, sc, 2)
	b.link(sb, 4, h2, 1)
	b.link(sc, 3, sd, 1)
	b.link(sd, 2, h3, 1)
	b.link(sd, 3, h3, 2)
	return b.f
}

func TestWriteLIDMatrixDumpGolden(t *testing.T) {
	f := ibsimFabric(t)
	if got := f.PortByLID(7); got == nil || got.GUID != 0x0002c90300000032 {
		t.Fatalf("fixture: LID 7 owner %v", got)
	}
	h := ComputeHops(f)
	var buf bytes.Buffer
	if err := WriteLIDMatrixDump(&buf, f, h); err != nil {
		t.Fatal(err)
	}
	// lidmatrix.golden was written by OpenSM 3.3.23 itself (see
	// testdata/README): a reference, never rewritten from our output.
	golden := filepath.Join("testdata", "lidmatrix.golden")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("dump differs from %s\ngot:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
	}
}

func TestWriteLIDMatrixDumpDetails(t *testing.T) {
	// A switch with a LID above 0xff, hop counts >= 16 (printed in hex),
	// an LMC range (extra LIDs never get rows) and a LID nobody owns.
	b := newBuilder(t)
	var sws []*Node
	for i := 0; i < 18; i++ {
		sws = append(sws, b.sw(uint64(0x100+i), 2, uint16(0x1230+2*i)))
		if i > 0 {
			b.link(sws[i-1], 2, sws[i], 1)
		}
	}
	z := sws[0].Port(0)
	z.Info.LMC = 1
	if err := b.f.RegisterPort(z); err != nil {
		t.Fatal(err)
	}
	h := ComputeHops(b.f)
	var buf bytes.Buffer
	if err := WriteLIDMatrixDump(&buf, b.f, h); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Switch: guid 0x0000000000000100\n0x1230: 00 ff 02 # portguid 0x0000000000000100\n",
		"0x1252: 11 ff 11 # portguid 0x0000000000000111\n",
		"Switch: guid 0x0000000000000111\n0x1230: 11 11 ff # portguid 0x0000000000000100\n",
	} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if bytes.Contains(buf.Bytes(), []byte("0x1231:")) {
		t.Error("LMC LID got a row")
	}
	lines := bytes.Count(buf.Bytes(), []byte("\n"))
	if lines != 18*19 {
		t.Errorf("%d lines, want %d", lines, 18*19)
	}
}

func TestWriteLIDMatrixDumpUnowned(t *testing.T) {
	b := newBuilder(t)
	s1 := b.sw(0x1, 1, 1)
	s2 := b.sw(0x2, 1, 2)
	b.link(s1, 1, s2, 1)
	// Forget the owner of LID 2 by building a fresh fabric holding the
	// same nodes without registering s2.
	f := NewFabric()
	for _, n := range []*Node{s1, s2} {
		if err := f.AppendNode(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.RegisterPort(s1.Port(0)); err != nil {
		t.Fatal(err)
	}
	h := ComputeHops(f)
	var buf bytes.Buffer
	if err := WriteLIDMatrixDump(&buf, f, h); err != nil {
		t.Fatal(err)
	}
	want := "Switch: guid 0x0000000000000001\n" +
		"0x0001: 00 02 # portguid 0x0000000000000001\n" +
		"0x0002: 01 01\n" +
		"Switch: guid 0x0000000000000002\n" +
		"0x0001: 01 01 # portguid 0x0000000000000001\n" +
		"0x0002: 00 02\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

var errWrite = errors.New("disk full")

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errWrite
	}
	w.n--
	return len(p), nil
}

func TestWriteLIDMatrixDumpError(t *testing.T) {
	f := fatTree(t, 8, 8)
	h := ComputeHops(f)
	if err := WriteLIDMatrixDump(&failWriter{n: 0}, f, h); !errors.Is(err, errWrite) {
		t.Errorf("err = %v, want %v", err, errWrite)
	}
}

func TestSortOpenSMOrder(t *testing.T) {
	tests := []struct {
		in, want []uint64
	}{
		{
			[]uint64{0x0100000000000002, 0x0200000000000001},
			[]uint64{0x0200000000000001, 0x0100000000000002},
		},
		{
			[]uint64{0xff, 0x0100000000000002, 0x0300000000000000, 0x0200000000000001},
			[]uint64{0x0300000000000000, 0x0200000000000001, 0x0100000000000002, 0xff},
		},
		{
			// Same last byte: the next-to-last byte decides.
			[]uint64{0x0002c90300000210, 0x0002c90300000110, 0x0002c90300000011},
			[]uint64{0x0002c90300000110, 0x0002c90300000210, 0x0002c90300000011},
		},
	}
	for _, tt := range tests {
		var nodes []*Node
		for _, g := range tt.in {
			n := &Node{}
			n.Info.NodeGUID = g
			nodes = append(nodes, n)
		}
		SortOpenSMOrder(nodes)
		for i, n := range nodes {
			if n.GUID() != tt.want[i] {
				t.Errorf("%x: position %d = %#x, want %#x", tt.in, i, n.GUID(), tt.want[i])
			}
		}
	}
}

func BenchmarkWriteLIDMatrixDump(b *testing.B) {
	f := fatTree(b, 16, 16)
	h := ComputeHops(f)
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := WriteLIDMatrixDump(&buf, f, h); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
