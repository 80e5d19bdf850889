package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestOutput: --output FILE of links, path and errors holds what stdout
// would (stdout stays empty), also when a check found something (4) or
// the result is partial (3, the file named on stderr); bad input, a bad
// path or an interruption leave an existing FILE as it was and nothing
// beside it.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	faults := "../../testdata/fabrics/faults.net"
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a line stderr must have
	}{
		{"links", []string{"links", "--sim", "testdata/mismatch.net"}, exitcode.OK, ""},
		{"links --check", []string{"links", "--sim", "testdata/mismatch.net", "--check"}, exitcode.Problem, ""},
		{"links --json", []string{"links", "--sim", "../../testdata/fabrics/mixed.net", "--json"}, exitcode.OK, ""},
		{"path", []string{"path", "--sim", "testdata/pathmix.net", "hA", "hB"}, exitcode.OK, ""},
		{"path --json", []string{"path", "--sim", "testdata/pathmix.net", "hA", "hB", "--json"}, exitcode.OK, ""},
		{"errors", []string{"errors", "--sim", "../../testdata/fabrics/demo.net"}, exitcode.OK, ""},
		{"partial links", []string{"links", "--sim", faults, "--retries", "0", "-t", "50"}, exitcode.Partial, " holds a partial result\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _, code := runTool(t, tt.args...)
			if code != tt.code {
				t.Fatalf("%v: exit %d, want %d", tt.args, code, tt.code)
			}
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			stdout, stderr, code := runTool(t, append(tt.args, "--output", p)...)
			if code != tt.code || len(stdout) != 0 {
				t.Fatalf("--output: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
			}
			if tt.stderr != "" && !bytes.Contains(stderr, []byte("ibavtrack: "+p+tt.stderr)) {
				t.Errorf("stderr lacks %q:\n%s", p+tt.stderr, stderr)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if tt.code != exitcode.Partial && !bytes.Equal(got, want) {
				t.Errorf("file:\n%s\nstdout without --output:\n%s", got, want)
			}
			if len(got) == 0 {
				t.Error("empty file")
			}
		})
	}

	// Kept as it was: bad input, an interruption.
	old := filepath.Join(dir, "old.txt")
	for _, tc := range []struct {
		name   string
		cancel bool
		args   []string
		code   int
		stderr string
	}{
		{"bad port", false, []string{"path", "--sim", "testdata/pathmix.net", "hA", "nosuch", "--output", old}, exitcode.Usage, `ibavtrack: DST "nosuch": not a node name or description in the fabric` + "\n"},
		{"interrupted", true, []string{"links", "--sim", "testdata/mismatch.net", "--output", old}, exitcode.Interrupted, "ibavtrack: interrupted: " + old + " left as it was\n"},
	} {
		os.WriteFile(old, []byte("old\n"), 0o644)
		ctx, cancel := context.WithCancel(context.Background())
		if tc.cancel {
			cancel()
		}
		var out, errb bytes.Buffer
		code := run(ctx, &out, &errb, append([]string{"ibavtrack"}, tc.args...))
		cancel()
		if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d with %q", tc.name, code, errb.String(), tc.code, tc.stderr)
		}
		if b, _ := os.ReadFile(old); string(b) != "old\n" {
			t.Errorf("%s: replaced the output: %q", tc.name, b)
		}
	}
	// An output that cannot be created is bad input, before any fabric.
	stdout, stderr, code := runTool(t, "links", "--sim", "testdata/mismatch.net", "--output", filepath.Join(dir, "none", "x"))
	clitest.BadInput(t, "ibavtrack", stdout, stderr, code, "--output", "no such file")
	names := []string{"old.txt"}
	for _, tt := range tests {
		names = append(names, strings.ReplaceAll(tt.name, " ", "_"))
	}
	clitest.NoLeftovers(t, dir, names...)
}
