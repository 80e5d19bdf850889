package termout

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// openPTY returns the terminal side of a new pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		clitest.Skip(t, "no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}

// On a terminal, colour is on unless TERM=dumb or NO_COLOR says
// otherwise; --color=always and --color=never win over both.
func TestColorOnATerminal(t *testing.T) {
	tty := openPTY(t)
	for _, tc := range []struct {
		term, noColor string
		mode          Mode
		want          bool
	}{
		{"xterm", "", Auto, true},
		{"dumb", "", Auto, false},
		{"xterm", "1", Auto, false},
		{"dumb", "1", Always, true},
		{"xterm", "", Never, false},
		{"", "", Auto, true},
	} {
		t.Setenv("TERM", tc.term)
		t.Setenv("NO_COLOR", tc.noColor)
		p := NewPainterMode(tty, tc.mode)
		if got := p.Bad("x") != "x"; got != tc.want {
			t.Errorf("TERM=%q NO_COLOR=%q --color=%s: coloured %v, want %v", tc.term, tc.noColor, tc.mode, got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"", "auto", "always", "never"} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
	if _, err := ParseMode("yes"); err == nil {
		t.Error("ParseMode(yes) took it")
	}
}
