package completion

import (
	"github.com/ibfabric/ibdiag/internal/clitest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBashCompletes runs the generated bash completions of completions/
// the way bash calls them and checks what they offer: subcommands,
// options (the shared ones before the command name too), files for file
// options and ibdiscover's topology-file operand, nothing for a number.
func TestBashCompletes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		clitest.Skip(t, "no bash (scripts/install-deps.sh installs it)")
	}
	tests := []struct {
		tool  string
		words string // the command line; the last word is being completed
		want  string
	}{
		{"ibavtrack", "ibavtrack li", "links"},
		{"ibavtrack", "ibavtrack --sim x li", "links"},
		{"ibavtrack", "ibavtrack --ibsim links --ch", "--check"},
		{"ibavtrack", "ibavtrack watch --inter", "--interval"},
		{"ibavtrack", "ibavtrack --ibs", "--ibsim --ibsim-sockname"},
		{"ibavtrack", "ibavtrack path --sim ../../testdata/fabrics/dem", "../../testdata/fabrics/demo.net"},
		{"ibdiscover", "ibdiscover --load-cache ../../testdata/fabrics/mix", "../../testdata/fabrics/mixed.net"},
		{"ibdiscover", "ibdiscover --dif", "--diff --diffcheck"},
		{"ibdiscover", "ibdiscover -z ../../testdata/fabrics/loo", "../../testdata/fabrics/loop.net"},
		{"ibdiscover", "ibdiscover ../../testdata/fabrics/chain", "../../testdata/fabrics/chain10.net"},
		{"ibdiscover", "ibdiscover --outstanding", "--outstanding-smps --outstanding_smps"},
		{"ibhops", "ibhops -t 1", ""},
		{"ibhops", "ibhops --check", "--check-routes"},
	}
	for _, tt := range tests {
		words := strings.Fields(tt.words)
		script := `source ../../completions/` + tt.tool + `.bash; COMP_WORDS=(` + strings.Join(words, " ") + `); COMP_CWORD=` +
			string(rune('0'+len(words)-1)) + `; _` + tt.tool + `; echo "${COMPREPLY[*]}"`
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s<TAB>: %q, want %q", tt.words, got, tt.want)
		}
	}
}

// TestZshCompletes runs the generated zsh functions of completions/ in a
// real zsh with the completion system's helpers stubbed (autoloaded as compinit does, _arguments
// sets the state the test asks for and records its specs; _describe
// prints the subcommands): each function parses, offers the subcommands, and hands
// each subcommand's options to _arguments. zsh is one of the packages
// scripts/install-deps.sh installs; under CI=true a missing zsh fails.
func TestZshCompletes(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("zsh missing (scripts/install-deps.sh installs it)")
		}
		clitest.Skip(t, "no zsh (scripts/install-deps.sh installs it)")
	}
	run := func(tool, state string, line ...string) string {
		t.Helper()
		script := `_arguments() { print -rl -- "$@"; state=` + state + `; line=(` + strings.Join(line, " ") + `); return 0 }
_describe() { print -rl -- "${(@P)2}" }
_files() { :; }
fpath=(../../completions $fpath)
autoload -Uz _` + tool + `
_` + tool
		out, err := exec.Command("zsh", "-f", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("zsh _%s (state %s %v): %v\n%s", tool, state, line, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		tool, state string
		line        []string
		want        []string
	}{
		{"ibavtrack", "command", nil, []string{"links:", "path:", "watch:", "errors:", "1: :->command"}},
		{"ibavtrack", "args", []string{"links"}, []string{"--check[", "--counters[", "-t+[per-SMP timeout"}},
		{"ibavtrack", "args", []string{"watch"}, []string{"--interval=[", "--src=["}},
		{"ibavtrack", "args", []string{"errors"}, []string{"--threshold-file=["}},
		{"ibdiscover", "", nil, []string{"--load-cache=[", "--diff=[", "-p[", "--ports["}},
		{"ibhops", "", nil, []string{"--check-routes[", "--routing-engine=[", "--output="}},
	} {
		out := run(tc.tool, tc.state, tc.line...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("_%s state %q %v: no %q in:\n%s", tc.tool, tc.state, tc.line, w, out)
			}
		}
	}
}
