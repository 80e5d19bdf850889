package main

import (
	"bytes"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// TestColorFlag: --color=always colours the marks of the links table even
// into a pipe and with NO_COLOR set; auto (the default) colours only a
// terminal, never leaves them plain.
func TestColorFlag(t *testing.T) {
	for _, tc := range []struct {
		color, noColor string
		want           bool
	}{
		{"", "", false},
		{"auto", "", false},
		{"always", "", true},
		{"always", "1", true},
		{"never", "", false},
	} {
		t.Setenv("NO_COLOR", tc.noColor)
		args := []string{"links", "--sim", "testdata/mismatch.net"}
		if tc.color != "" {
			args = append(args, "--color="+tc.color)
		}
		stdout, stderr, code := runTool(t, args...)
		if code != exitcode.OK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		if got := bytes.Contains(stdout, []byte("\x1b[")); got != tc.want {
			t.Errorf("--color=%q NO_COLOR=%q: coloured %v, want %v", tc.color, tc.noColor, got, tc.want)
		}
	}
}
