package sim

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// TestLoadErrors: Load refuses what the tools refuse, and its errors can
// be inspected: a missing file wraps fs.ErrNotExist, a file without nodes
// (/etc/passwd) netfile.ErrNoNodes, both in a *netfile.ParseError.
func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		path string
		want error
	}{
		{filepath.Join(t.TempDir(), "nosuch.net"), fs.ErrNotExist},
		{"/etc/passwd", netfile.ErrNoNodes},
		{"/dev/null", netfile.ErrNoNodes},
	} {
		f, err := Load(c.path, nil)
		var pe *netfile.ParseError
		if f != nil || !errors.Is(err, c.want) || !errors.As(err, &pe) {
			t.Errorf("Load(%s) = %v, %v; want nil and a *netfile.ParseError wrapping %v", c.path, f, err, c.want)
		}
	}
}
