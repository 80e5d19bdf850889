package pathav_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/pathav"
	"github.com/ibfabric/ibdiag/pkg/routing"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestNoLID: where no SM ran the ports have no LID, and Resolve says so
// with ErrNoLID instead of following LID 0.
func TestNoLID(t *testing.T) {
	fab, err := sim.Load("../../testdata/fabrics/loop.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := fab.Attach("h1")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := res.Fabric.ResolvePort("h1", nil)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := res.Fabric.ResolvePort("h3", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pathav.Resolve(res.Fabric, routing.NewTables(), src, dst); !errors.Is(err, pathav.ErrNoLID) {
		t.Errorf("Resolve without LIDs: %v, want an error wrapping ErrNoLID", err)
	}
}
