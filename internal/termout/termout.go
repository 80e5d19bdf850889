// Package termout formats human-facing output: colour (fatih/color) that
// is used, unless asked for always or never (--color), only on a terminal
// that is not TERM=dumb and never when NO_COLOR is set, and the terminal
// test behind it. Machine formats never go through it; aligned
// tables are in internal/termtable.
package termout

import (
	"fmt"
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

// ColorOK reports whether colour may be used on w: w is a terminal,
// TERM is not "dumb" and NO_COLOR is unset or empty (https://no-color.org).
func ColorOK(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// Mode is when to colour: the value of a --color flag.
type Mode string

// The modes.
const (
	Auto   Mode = "auto"   // where ColorOK says so
	Always Mode = "always" // even into a pipe or file, NO_COLOR or not
	Never  Mode = "never"
)

// Modes are the modes, in the order a help text lists them.
var Modes = []Mode{Auto, Always, Never}

// ParseMode parses a --color value ("" is Auto).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Auto, nil
	case Auto, Always, Never:
		return m, nil
	}
	return Auto, fmt.Errorf("want auto, always or never")
}

// Painter colours text for one writer; it is a no-op where colour is not
// allowed.
type Painter struct{ on bool }

// NewPainter returns a Painter for w (see ColorOK).
func NewPainter(w io.Writer) Painter { return Painter{on: ColorOK(w)} }

// NewPainterMode returns a Painter for w in mode m: Auto is NewPainter.
func NewPainterMode(w io.Writer, m Mode) Painter {
	switch m {
	case Always:
		return Painter{on: true}
	case Never:
		return Painter{}
	}
	return NewPainter(w)
}

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
