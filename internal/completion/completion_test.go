package completion

import (
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
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
		{"ibhops", "ibhops --check", "--check-mcast --check-routes"},
		{"ibhops", "ibhops --routing-engine up", "updn"},
		{"ibhops", "ibhops --routing-engine torus", "torus-2QoS"},
		{"ibdiscover", "ibdiscover --diffcheck sw,r", "sw,router"},
		{"ibdiscover", "ibdiscover --diffcheck n", "nodedesc"},
		{"ibavtrack", "ibavtrack links --color n", "never"},
		{"ibavtrack", "ibavtrack --color a", "auto always"},
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
		{"ibhops", "", nil, []string{"--check-routes[", "--routing-engine=[", "--output=", ":name:(minhop updn dnup file ftree lash dor torus-2QoS nue dfsssp sssp)", ":when:(auto always never)"}},
		{"ibdiscover", "", nil, []string{":keys:_values -s , keys sw ca router port lid nodedesc"}},
	} {
		out := run(tc.tool, tc.state, tc.line...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("_%s state %q %v: no %q in:\n%s", tc.tool, tc.state, tc.line, w, out)
			}
		}
	}
}

// TestFishCompletes asks a real fish what the fish completions of
// completions/ offer (complete -C, as fish does on TAB): subcommands,
// options before and after the command name, the values of
// --routing-engine, --diffcheck (after a comma too) and --color, files
// for file options. fish is one of the packages scripts/install-deps.sh
// installs; under CI=true a missing fish fails.
func TestFishCompletes(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("fish missing (scripts/install-deps.sh installs it)")
		}
		clitest.Skip(t, "no fish (scripts/install-deps.sh installs it)")
	}
	tests := []struct {
		tool, line string
		want       []string // candidates that must be offered
		not        []string // candidates that must not
	}{
		{"ibavtrack", "ibavtrack li", []string{"links"}, nil},
		{"ibavtrack", "ibavtrack ", []string{"links", "path", "watch", "errors"}, nil},
		{"ibavtrack", "ibavtrack --ibs", []string{"--ibsim", "--ibsim-sockname"}, nil},
		{"ibavtrack", "ibavtrack links --ch", []string{"--check"}, []string{"--check-routes"}},
		{"ibavtrack", "ibavtrack watch --inter", []string{"--interval"}, nil},
		{"ibavtrack", "ibavtrack links --color ", []string{"auto", "always", "never"}, nil},
		{"ibavtrack", "ibavtrack errors --threshold-file ../../testdata/fabrics/dem", []string{"../../testdata/fabrics/demo.net"}, nil},
		{"ibdiscover", "ibdiscover --dif", []string{"--diff", "--diffcheck"}, nil},
		{"ibdiscover", "ibdiscover --diffcheck ", []string{"sw", "ca", "router", "port", "lid", "nodedesc"}, nil},
		{"ibdiscover", "ibdiscover --diffcheck sw,", []string{"sw,ca", "sw,nodedesc"}, nil},
		{"ibdiscover", "ibdiscover --load-cache ../../testdata/fabrics/mix", []string{"../../testdata/fabrics/mixed.net"}, nil},
		{"ibdiscover", "ibdiscover ../../testdata/fabrics/chain", []string{"../../testdata/fabrics/chain10.net"}, nil},
		{"ibhops", "ibhops --routing-engine ", []string{"minhop", "updn", "torus-2QoS", "sssp"}, nil},
		{"ibhops", "ibhops --check", []string{"--check-routes"}, nil},
		{"ibhops", "ibhops ../../testdata/fabrics/chain", nil, []string{"../../testdata/fabrics/chain10.net"}},
	}
	for _, tt := range tests {
		script := "source ../../completions/" + tt.tool + ".fish; complete -C " + fishArg(tt.line)
		out, err := exec.Command("fish", "--no-config", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.line, err, out)
		}
		got := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			c, _, _ := strings.Cut(l, "\t")
			got[c] = true
		}
		for _, w := range tt.want {
			if !got[w] {
				t.Errorf("%q<TAB>: no %q in:\n%s", tt.line, w, out)
			}
		}
		for _, w := range tt.not {
			if got[w] {
				t.Errorf("%q<TAB>: %q offered:\n%s", tt.line, w, out)
			}
		}
	}
}

// fishArg quotes s as one fish argument.
func fishArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
