package sim

import (
	"errors"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// TestConsoleErrors: each error of the console commands can be told
// apart with errors.Is, one sentinel per case.
func TestConsoleErrors(t *testing.T) {
	nf, err := netfile.Parse("x.net", []byte("width=1\nSwitch 4 \"a\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n[1] \"a\"[1]\n\nwidth=2\nSwitch 4 \"b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(nf, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  string
		want error
	}{
		{`Unlink "nosuch"[1]`, ErrNoNode},
		{`Unlink "a"[9]`, ErrBadPort},
		{`Unlink "a"[2]`, ErrNotLinked},
		{`ReLink "a"[2]`, ErrNoPrevious},
		{`Link "a"[1] "b"[1]`, ErrLinked},
		{`Link "a"[2] "b"[1]`, ErrMismatch},
		{`Error`, ErrBadCommand},
		{`Dump`, ErrUnsupported},
	} {
		if err := f.Exec(c.cmd); !errors.Is(err, c.want) {
			t.Errorf("Exec(%s) = %v, want an error wrapping %q", c.cmd, err, c.want)
		}
	}
}
