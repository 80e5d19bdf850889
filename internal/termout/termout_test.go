package termout

import (
	"bytes"
	"testing"
)

func TestNoColorOffTerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewPainter(&b)
	if got := p.Bad("x"); got != "x" {
		t.Errorf("Bad on a buffer = %q, want plain", got)
	}
	t.Setenv("NO_COLOR", "1")
	if ColorOK(&b) {
		t.Error("ColorOK with NO_COLOR set")
	}
}
