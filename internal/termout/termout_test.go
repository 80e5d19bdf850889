package termout

import (
	"bytes"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, []string{"Port", "Neighbour"}, [][]string{{"1", "hostA mlx5_0"}, {"12", "SwB"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Port", "Neighbour", "hostA mlx5_0", "| 12 "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PORT") {
		t.Errorf("header was upper-cased:\n%s", out)
	}
}

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
