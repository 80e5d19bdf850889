package main

import (
	"bytes"
	"testing"
)

// TestColorFlag: --color=always colours the warnings on stderr even into
// a pipe; never and auto (not a terminal) leave them plain.
func TestColorFlag(t *testing.T) {
	for _, tc := range []struct {
		color string
		want  bool
	}{
		{"always", true},
		{"never", false},
		{"auto", false},
	} {
		_, stderr, _ := runOurs(t, "--sim", fabrics+"faults.net", "--color", tc.color)
		if len(stderr) == 0 {
			t.Fatalf("--color=%s: no warnings on stderr", tc.color)
		}
		if got := bytes.Contains(stderr, []byte("\x1b[")); got != tc.want {
			t.Errorf("--color=%s: coloured %v, want %v:\n%s", tc.color, got, tc.want, stderr)
		}
	}
}
