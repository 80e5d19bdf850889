package ibndcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabricdot"
	"github.com/ibfabric/ibdiag/pkg/fabricjson"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

// FuzzRoundTrip loads a cache, writes it and loads the result: whatever
// loads must write a cache ibnetdiscover 44 accepts, that loads again,
// with the same bytes from the first rewrite on.
func FuzzRoundTrip(f *testing.F) {
	for _, b := range readCaches(f) {
		f.Add(b)
	}
	for _, b := range partialCaches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fab, err := Unmarshal(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a FormatError: %v", err, err)
			}
			return
		}
		renderAll(t, fab)
		checkRoundTrip(t, fab)
	})
}

// partialCaches are caches of partial discoveries, as fuzz seeds.
func partialCaches(t testing.TB) [][]byte {
	var out [][]byte
	for _, spec := range []string{
		`fattree:levels=2,radix=8;Drop 10`,
		`fattree:levels=2,radix=8;Error "S1" 100 21`,
		`fattree:levels=2,radix=8;Error "H3" 100 21;Error "L0" 100 16`,
		`fattree:levels=2,radix=8;Inconsistent "L3" portguid 2`,
		"fattree:levels=2,radix=8" + dupGUID(t, "fattree:levels=2,radix=8", "L0", "S1"),
	} {
		tr := attach(t, spec, 3)
		res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Timeout: 20 * time.Millisecond, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Marshal(res.Fabric)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// renderAll runs every renderer over fab; none may fail or panic.
func renderAll(t *testing.T, fab *model.Fabric) {
	t.Helper()
	w := io.Discard
	for _, o := range []topology.Options{{}, {Full: true, MaxHops: true}, {Group: true}} {
		if err := topology.WriteTopology(w, fab, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := topology.WriteList(w, fab, topology.ListAll, nil); err != nil {
		t.Fatal(err)
	}
	if err := topology.WritePorts(w, fab, nil); err != nil {
		t.Fatal(err)
	}
	if err := topology.WriteDiff(w, fab, fab, topology.DiffDefault|topology.DiffLID|topology.DiffNodeDesc, nil); err != nil {
		t.Fatal(err)
	}
	if err := fabricjson.Write(w, fab, fabricjson.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := fabricdot.Write(w, fab, fabricdot.Options{}); err != nil {
		t.Fatal(err)
	}
}

// e2eMaxNodes and e2eMaxBytes bound what one end-to-end input may build.
const (
	e2eMaxNodes = 300
	e2eMaxBytes = 16 << 10
)

// FuzzEndToEnd: net file text (with fault-injection do lines) → embedded
// simulator → discovery → every renderer → cache → reload → renderers;
// the cache must be one ibnetdiscover 44 accepts, and stable.
func FuzzEndToEnd(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/fabrics/*.net")
	faults := []string{
		"", "do Drop 10\n", "do Error \"%s\" 100 21\n", "do Error \"%s\" 100 16\n",
		"do Error \"%s\" 100 17\n", "do Error \"%s\" 100 18\n", "do Kill \"%s\"\n",
		"do Inconsistent \"%s\" portguid 2\n", "do Error \"%s\"[1] 100 17\n",
	}
	for i, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > e2eMaxBytes {
			continue
		}
		nf, err := netfile.Parse(file, b)
		if err != nil || len(nf.Nodes) == 0 {
			continue
		}
		for j, fault := range faults {
			id := nf.Nodes[(i+j)%len(nf.Nodes)].ID
			f.Add(string(b) + "\n" + strings.ReplaceAll(fault, "%s", id))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > e2eMaxBytes || strings.Contains(text, "include") || strings.Contains(text, "Latency") {
			return // bounded, self-contained, no real-time latency model
		}
		nf, err := netfile.Parse("fuzz.net", []byte(text))
		if err != nil || len(nf.Nodes) == 0 || len(nf.Nodes) > e2eMaxNodes {
			return
		}
		fab, err := sim.New(nf, nil)
		if err != nil {
			return
		}
		tr, err := fab.Attach("")
		if err != nil {
			return
		}
		defer tr.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := discover.Discover(ctx, tr, discover.Config{MaxHops: -1, Timeout: time.Millisecond, FixedTimeout: true, Retries: -1, MaxNodes: e2eMaxNodes})
		if err != nil {
			return // the start node did not answer
		}
		renderAll(t, res.Fabric)
		b := checkRoundTrip(t, res.Fabric)
		loaded, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		renderAll(t, loaded)
		var buf bytes.Buffer
		if err := topology.WriteDiff(&buf, res.Fabric, loaded, topology.DiffDefault|topology.DiffLID|topology.DiffNodeDesc, nil); err != nil {
			t.Fatal(err)
		}
	})
}
