package termtable

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, []string{"Port", "Neighbour"}, [][]string{{"1", "hostA mlx5_0"}, {"12", "SwB"}}); err != nil {
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
