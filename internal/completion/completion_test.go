package completion

import (
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
		t.Skip("no bash")
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
