// Package termout formats human-facing output: colour (fatih/color) that
// is used only on a terminal and never when NO_COLOR is set, and the
// terminal test behind it. Machine formats never go through it; aligned
// tables are in internal/termtable.
package termout

import (
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IsTerminal reports whether w is a terminal: an *os.File, or a writer
// wrapping one that says so with a method File() *os.File (on every OS:
// go-isatty, which fatih/color uses too, knows each one's way to ask).
func IsTerminal(w io.Writer) bool {
	if fw, ok := w.(interface{ File() *os.File }); ok {
		w = fw.File()
	}
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// ColorOK reports whether colour may be used on w: w is a terminal and
// NO_COLOR is unset or empty.
func ColorOK(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	return IsTerminal(w)
}

// Painter colours text for one writer; it is a no-op where colour is not
// allowed.
type Painter struct{ on bool }

// NewPainter returns a Painter for w (see ColorOK).
func NewPainter(w io.Writer) Painter { return Painter{on: ColorOK(w)} }

func (p Painter) paint(attr color.Attribute, s string) string {
	if !p.on {
		return s
	}
	c := color.New(attr)
	c.EnableColor()
	return c.Sprint(s)
}

// Bad marks a problem (red).
func (p Painter) Bad(s string) string { return p.paint(color.FgRed, s) }

// Warn marks a warning (yellow).
func (p Painter) Warn(s string) string { return p.paint(color.FgYellow, s) }

// Good marks a success (green).
func (p Painter) Good(s string) string { return p.paint(color.FgGreen, s) }

// Bold emphasises.
func (p Painter) Bold(s string) string { return p.paint(color.Bold, s) }
