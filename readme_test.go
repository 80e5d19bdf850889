package ibdiag_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestREADMEExamples: every example in README.md that runs on the
// embedded simulator ("$ ... --sim ...", and the output `make demo`
// shows) prints exactly what the README shows, with the tools built as
// make builds them and found on PATH as the README tells.
func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every tool")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if out, err := clitest.GoBuild(filepath.Join(runtime.GOROOT(), "bin", "go"), bin+string(filepath.Separator), "./cmd/...").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	run := func(t *testing.T, cmdline string, wantExit int) string {
		if strings.Contains(cmdline, "| jq ") {
			if _, err := exec.LookPath("jq"); err != nil {
				clitest.Skip(t, "jq is not installed: %s", cmdline)
			}
		}
		c := exec.Command("sh", "-c", cmdline)
		c.Env = env
		var out bytes.Buffer
		c.Stdout = &out
		err := c.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Errorf("%s: %v", cmdline, err)
		}
		if code != wantExit {
			t.Errorf("%s: exit status %d, want %d (the README says so with a last line \"(exit status N)\")", cmdline, code, wantExit)
		}
		return out.String()
	}
	examples := 0
	for _, block := range codeBlocks(string(readme)) {
		lines := strings.Split(block, "\n")
		if strings.HasPrefix(lines[0], "CGO_ENABLED=0 go build") && len(lines) > 2 {
			// make demo: the build line, the run line, then its output
			examples++
			cmd := strings.TrimPrefix(lines[1], "./bin/")
			got := run(t, cmd, 0)
			want := strings.Join(lines[2:], "\n") + "\n"
			if !elidedMatch(dateless(got), dateless(want)) {
				t.Errorf("make demo's %s: got\n%s\nwant (the README)\n%s", cmd, got, want)
			}
			continue
		}
		for i := 0; i < len(lines); i++ {
			cmd, ok := strings.CutPrefix(lines[i], "$ ")
			if !ok {
				continue
			}
			var want strings.Builder
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				want.WriteString(lines[i] + "\n")
			}
			if !strings.Contains(cmd, " --sim ") {
				continue // needs a device or a running ibsim
			}
			examples++
			text, exit := exitLine(want.String())
			if got := run(t, cmd, exit); got != text {
				t.Errorf("%s: got\n%s\nwant (the README)\n%s", cmd, got, text)
			}
		}
	}
	if examples < 4 {
		t.Errorf("%d examples found in README.md: want make demo's and one per tool at least", examples)
	}
}

// codeBlocks returns the contents of README's ``` blocks.
func codeBlocks(md string) []string {
	var blocks []string
	parts := strings.Split(md, "```")
	for i := 1; i < len(parts); i += 2 {
		b := parts[i]
		if nl := strings.IndexByte(b, '\n'); nl >= 0 {
			b = b[nl+1:] // the fence's info string ("go", or nothing)
		}
		blocks = append(blocks, strings.TrimSuffix(b, "\n"))
	}
	return blocks
}

// dateless leaves out the topology header's generation date.
func dateless(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# Topology file: generated on ") {
			lines[i] = "# Topology file: generated on DATE"
		}
	}
	return strings.Join(lines, "\n")
}

// elidedMatch reports whether got is want, where a line "..." in want
// stands for any lines of got between the text before and after it.
func elidedMatch(got, want string) bool {
	head, tail, elided := strings.Cut(want, "...\n")
	if !elided {
		return got == want
	}
	return len(got) >= len(head)+len(tail) && strings.HasPrefix(got, head) && strings.HasSuffix(got, tail)
}

// exitLine splits an example's output from its last line "(exit status
// N)", which says the command exits N (0 when there is none).
func exitLine(out string) (string, int) {
	body := strings.TrimSuffix(out, "\n")
	i := strings.LastIndex(body, "\n")
	last := body[i+1:]
	var n int
	if _, err := fmt.Sscanf(last, "(exit status %d)", &n); err != nil || !strings.HasSuffix(last, ")") {
		return out, 0
	}
	return body[:i+1], n
}
