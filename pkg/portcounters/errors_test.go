package portcounters

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/sim"
)

// TestNoLID: where no SM ran, no port has a LID and no PMA can be
// reached: every node's failure is a QueryError wrapping ErrNoLID.
func TestNoLID(t *testing.T) {
	nf, err := netfile.Parse("test.net", []byte(testNet))
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.New(nf, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Read(context.Background(), Config{Transport: tr}, res.Fabric)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 {
		t.Fatal("no failures reading a fabric without LIDs")
	}
	for _, qe := range rep.Failures {
		if !errors.Is(qe, ErrNoLID) {
			t.Errorf("%v: want an error wrapping ErrNoLID", qe)
		}
	}
}

// TestThresholdErrorCause: a threshold file the scanner cannot read (one
// line filling the whole size limit) is a ThresholdError that keeps the
// scanner's error.
func TestThresholdErrorCause(t *testing.T) {
	_, _, err := ParseThresholds("th", bytes.Repeat([]byte("a"), MaxThresholdFile))
	var te *ThresholdError
	if !errors.As(err, &te) || !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("ParseThresholds of one 1 MiB line: %v; want a ThresholdError wrapping bufio.ErrTooLong", err)
	}
}
