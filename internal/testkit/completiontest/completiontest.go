// Package completiontest checks a command's generated completion scripts
// against its flags and runs the installed shells on them.
package completiontest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/completion"
	"github.com/ibfabric/ibdiag/internal/testkit/golden"
)

// Check is a command's completion test: the scripts in dir
// (<tool>.bash, _<tool> and <tool>.fish) are what the app's options
// generate (go test -update rewrites them), every flag name of the app
// and its commands is in each, every command name and every choice of a
// flag's value too, and the shells that are installed parse them.
func Check(t *testing.T, dir string, app *cli.App, operand string, choices map[string]completion.Choices, extra ...cli.Flag) {
	t.Helper()
	app.Setup()
	s := completion.FromApp(app, operand, choices, extra...)
	var bash, zsh, fish bytes.Buffer
	if err := completion.Fish(&fish, s); err != nil {
		t.Fatal(err)
	}
	if err := completion.Bash(&bash, s); err != nil {
		t.Fatal(err)
	}
	if err := completion.Zsh(&zsh, s); err != nil {
		t.Fatal(err)
	}
	bashPath, zshPath, fishPath := dir+"/"+s.Name+".bash", dir+"/_"+s.Name, dir+"/"+s.Name+".fish"
	golden.Check(t, bashPath, bash.Bytes())
	golden.Check(t, zshPath, zsh.Bytes())
	golden.Check(t, fishPath, fish.Bytes())
	scripts := map[string]string{bashPath: bash.String(), zshPath: zsh.String(), fishPath: fish.String()}

	var all []completion.Flag
	for _, f := range s.Flags {
		if !f.Hidden {
			all = append(all, f)
		}
	}
	for _, c := range s.Commands {
		all = append(all, c.Flags...)
		for name, script := range scripts {
			if !strings.Contains(script, c.Name) {
				t.Errorf("%s lacks the command %s", name, c.Name)
			}
		}
	}
	for _, f := range all {
		for _, n := range f.Names {
			for name, script := range map[string]string{bashPath: bash.String(), zshPath: zsh.String()} {
				if !containsWord(script, dashed(n)) {
					t.Errorf("%s lacks %s", name, dashed(n))
				}
			}
			fishOpt := "-l " + n
			if len(n) == 1 {
				fishOpt = "-s " + n
			}
			if !containsWord(fish.String(), fishOpt) {
				t.Errorf("%s lacks %s", fishPath, fishOpt)
			}
		}
		for _, w := range f.Choices.Words {
			for name, script := range scripts {
				if !containsWord(script, w) {
					t.Errorf("%s lacks %s, a value of --%s", name, w, f.Names[0])
				}
			}
		}
	}
	// Without zsh at hand, at least the quoting: every line of the zsh
	// script closes the single quotes it opens, and its brackets.
	for i, line := range strings.Split(zsh.String(), "\n") {
		l := strings.ReplaceAll(line, `'\''`, "")
		if strings.HasPrefix(l, "#") {
			continue
		}
		if strings.Count(l, "'")%2 != 0 || strings.Count(l, "[") != strings.Count(l, "]") ||
			strings.Count(l, "{") != strings.Count(l, "}") {
			t.Errorf("%s:%d: unbalanced quotes or brackets: %s", zshPath, i+1, line)
		}
	}
	for _, sh := range []struct{ bin, path string }{{"bash", bashPath}, {"zsh", zshPath}, {"fish", fishPath}} {
		if _, err := exec.LookPath(sh.bin); err != nil {
			continue
		}
		if out, err := exec.Command(sh.bin, "-n", sh.path).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v\n%s", sh.bin, sh.path, err, out)
		}
	}
}

// containsWord reports whether opt appears in script delimited as an
// option (not as the prefix of a longer one).
func containsWord(script, opt string) bool {
	for i := 0; ; {
		j := strings.Index(script[i:], opt)
		if j < 0 {
			return false
		}
		end := i + j + len(opt)
		if end == len(script) || strings.ContainsRune(" |)\"'+=,}[\n\t", rune(script[end])) {
			return true
		}
		i = end
	}
}

// dashed is a flag name as typed: -n or --name.
func dashed(n string) string {
	if len(n) == 1 {
		return "-" + n
	}
	return "--" + n
}
