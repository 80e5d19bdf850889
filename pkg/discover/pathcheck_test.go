package discover

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// TestCheckPath: a directed route that leads nowhere is reported at the
// hop at fault, with the reason; a good route is nil.
func TestCheckPath(t *testing.T) {
	f, err := sim.Load("../../testdata/fabrics/demo.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	// leaf01 port 2 leads to node002: unplug it
	if err := f.Unlink("S-0c42a1030020a000", 2); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Attach("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tests := []struct {
		path string
		want string // "" for a good route
	}{
		{"0", ""},
		{"0,1", ""},
		{"0,1,1", ""},
		{"0,99", `hop 1: switch "spine01" has 40 ports, no port 99`},
		{"0,1,41", `hop 2: switch "leaf01" has 40 ports, no port 41`},
		{"0,1,1,1", `hop 3: CA "node001 mlx5_0" does not forward: a route ends at a CA or router`},
		{"0,1,2", `hop 2: port 2 of switch "leaf01" is down (no link)`},
	}
	for _, tt := range tests {
		p, err := smp.ParseDRPath(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		q := &Querier{Transport: tr, Timeout: 100 * time.Millisecond, Retries: 0}
		err = CheckPath(context.Background(), q, p)
		var pe *PathError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tt.path, err)
		case tt.want != "" && (!errors.As(err, &pe) || pe.Error() != tt.want || pe.Path != p):
			t.Errorf("%s: %v, want %s", tt.path, err, tt.want)
		}
	}
}
