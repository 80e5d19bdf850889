package linkinfo_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/golden"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/linkinfo"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// simFabric discovers a net file on the embedded simulator (its minimal
// SM run first when sm is set), attached at host.
func simFabric(t *testing.T, file, host string, sm bool) *model.Fabric {
	t.Helper()
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{Sim: file, Host: host, SimSM: sm})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := discover.Discover(ctx, c, discover.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Fabric
}

// TestGolden renders the embedded simulator's fabrics (widths and speeds
// that make "Could be" hints, a chassis with external port numbers, down
// ports) with the main options; go test -update rewrites the files.
func TestGolden(t *testing.T) {
	names, err := nodenamemap.Parse(strings.NewReader("0x0000000000200000 \"first switch, renamed\"\n"), "names")
	if err != nil {
		t.Fatal(err)
	}
	path := func(s string) smp.DRPath {
		p, err := smp.ParseDRPath(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, fab := range []struct{ file, host string }{
		{"../../cmd/ibavtrack/testdata/rates.net", ""},
		{"../../cmd/ibavtrack/testdata/mismatch.net", "h1"},
		{"../../testdata/fabrics/loop.net", "h1"},
		{"../../testdata/fabrics/mixed.net", ""},
		{"../../cmd/ibdiscover/testdata/group.net", ""},
		{"../../cmd/ibdiscover/testdata/chassis-voltaire.net", ""},
	} {
		for _, sm := range []bool{false, true} {
			f := simFabric(t, fab.file, fab.host, sm)
			stage := "init"
			if sm {
				stage = "active"
			}
			for _, v := range []struct {
				name string
				o    linkinfo.Options
			}{
				{"default", linkinfo.Options{}},
				{"l-p", linkinfo.Options{Line: true, Additional: true}},
				{"d", linkinfo.Options{Down: true}},
				{"cas-only", linkinfo.Options{Only: linkinfo.CAsOnly, Names: names}},
				{"switches-only-l", linkinfo.Options{Only: linkinfo.SwitchesOnly, Line: true, Names: names}},
				{"D0,1", linkinfo.Options{ByPath: true, Path: path("0,1")}},
			} {
				var b bytes.Buffer
				if err := linkinfo.Render(&b, f, v.o); err != nil {
					t.Fatalf("%s %s %s: %v", fab.file, stage, v.name, err)
				}
				base := strings.TrimSuffix(filepath.Base(fab.file), ".net")
				golden.Check(t, filepath.Join("testdata", "golden", base+"-"+stage+"-"+v.name+".txt"), b.Bytes())
			}
		}
	}
}

// TestSelectNotFound: a GUID or route that leads to no node (or to one
// of the type not kept) is ErrPortNotFound, with nothing written.
func TestSelectNotFound(t *testing.T) {
	f := simFabric(t, "../../testdata/fabrics/loop.net", "h1", false)
	p9, _ := smp.ParseDRPath("0,1,9")
	for _, o := range []linkinfo.Options{
		{ByGUID: true, GUID: 0xdead},
		{ByPath: true, Path: p9},
		{ByGUID: true, GUID: f.From.Ports[1].GUID, Only: linkinfo.SwitchesOnly},
	} {
		var b bytes.Buffer
		err := linkinfo.Render(&b, f, o)
		if !errors.Is(err, linkinfo.ErrPortNotFound) || b.Len() != 0 {
			t.Errorf("%+v: err %v, %d bytes written; want ErrPortNotFound and nothing", o, err, b.Len())
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestWriteError: Render returns the writer's error.
func TestWriteError(t *testing.T) {
	f := simFabric(t, "../../testdata/fabrics/loop.net", "h1", false)
	for _, o := range []linkinfo.Options{{}, {ByPath: true}} {
		if err := linkinfo.Render(failWriter{}, f, o); !errors.Is(err, errWrite) {
			t.Errorf("%+v: err %v; want the writer's", o, err)
		}
	}
}
