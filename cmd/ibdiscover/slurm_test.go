package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

func runIbd(args ...string) (stdout, stderr []byte, code int) {
	var out, errb bytes.Buffer
	code = run(context.Background(), &out, &errb, append([]string{"ibdiscover"}, args...))
	return out.Bytes(), errb.Bytes(), code
}

const demoNet = "../../testdata/fabrics/demo.net"

// TestSlurm: --slurm writes the topology.conf of a discovery and of a
// cache, with the host name rule applied, into the topology file.
func TestSlurm(t *testing.T) {
	out, errb, code := runIbd("--sim", demoNet, "--slurm")
	if code != 0 || !strings.Contains(string(out), "SwitchName=leaf01 Nodes=node[001-003]\nSwitchName=leaf02 Nodes=node[004-006]\n") ||
		!strings.Contains(string(out), "SwitchName=spine01 Switches=leaf[01-02]\n") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "topology.conf")
	out, errb, code = runIbd("--load-cache", "../../pkg/fabricdot/testdata/mixed.cache", "--slurm", "--slurm-hostname", "re:^host(.)", conf)
	got, _ := os.ReadFile(conf)
	if code != 0 || len(out) != 0 || !strings.Contains(string(got), "# from cache ../../pkg/fabricdot/testdata/mixed.cache:") ||
		!strings.Contains(string(got), "SwitchName=SwA Nodes=A,C,D,F\n") {
		t.Errorf("exit %d, stdout %q, stderr %q, file:\n%s", code, out, errb, got)
	}
	// a name map gives the host names
	names := clitest.WriteFile(t, dir, "names.map", "0x0c42a10300300100 login01 mlx5_0\n")
	out, _, code = runIbd("--sim", demoNet, "--slurm", "--node-name-map", names)
	if code != 0 || !strings.Contains(string(out), "SwitchName=leaf01 Nodes=login01,node[002-003]\n") {
		t.Errorf("exit %d, map not applied:\n%s", code, out)
	}
}

// TestSlurmBadInput: a map giving one name to two GUIDs, a bad rule, a
// rule without --slurm, --slurm with another output: one line, exit 2,
// no file written.
func TestSlurmBadInput(t *testing.T) {
	dir := t.TempDir()
	dup := clitest.WriteFile(t, dir, "dup.map", "0x0c42a10300300100 node001\n0x0c42a10300300200 node001\n")
	conf := filepath.Join(dir, "topology.conf")
	for _, c := range []struct {
		args       []string
		input, msg string
	}{
		{[]string{"--slurm", "--node-name-map", dup, conf}, "--node-name-map " + dup, `duplicate name: "node001" is given to 0x0c42a10300300100 and 0x0c42a10300300200`},
		{[]string{"--slurm", "--slurm-hostname", "first", conf}, "--slurm-hostname first", "want word, full or re:REGEXP"},
		{[]string{"--slurm", "--slurm-hostname", "re:(", conf}, "--slurm-hostname re:(", "missing closing )"},
		{[]string{"--slurm-hostname", "full", conf}, "--slurm-hostname", "only with --slurm"},
		{[]string{"--slurm", "--json", conf}, "--json/--dot/--slurm", "choose one output"},
	} {
		out, errb, code := runIbd(append([]string{"--sim", demoNet}, c.args...)...)
		clitest.BadInput(t, "ibdiscover", out, errb, code, c.input, c.msg)
		if _, err := os.Stat(conf); err == nil {
			t.Errorf("%q: %s written", c.args, conf)
		}
	}
}

// TestSVG: --svg draws the fabric with the real dot into the file, next
// to the topology on stdout; without dot it fails at once, in one line,
// with exit status 1 and no file.
func TestSVG(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "fabric.svg")
	if _, err := exec.LookPath("dot"); err != nil {
		clitest.Skip(t, "Graphviz dot is not installed (scripts/install-deps.sh installs graphviz)")
	}
	out, errb, code := runIbd("--sim", demoNet, "--svg", svg)
	got, _ := os.ReadFile(svg)
	if code != 0 || !bytes.Contains(got, []byte("</svg>")) || !bytes.Contains(got, []byte("spine01")) || !bytes.Contains(out, []byte("Topology file")) {
		t.Errorf("exit %d, stderr %s, svg %.300s", code, errb, got)
	}

	defer func(f func() (string, error)) { lookDot = f }(lookDot)
	lookDot = func() (string, error) { return "", errNoDot }
	missing := filepath.Join(dir, "none.svg")
	out, errb, code = runIbd("--sim", demoNet, "--svg", missing)
	if code != exitcode.Fatal || strings.Count(string(errb), "\n") != 1 || !strings.Contains(string(errb), "ibdiscover: --svg: Graphviz's dot is not installed") || len(out) != 0 {
		t.Errorf("without dot: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s written without dot", missing)
	}

	// a dot that fails: its first line, no file
	bad := clitest.WriteFile(t, dir, "dot", "#!/bin/sh\necho 'Error: something broke' >&2\necho more >&2\nexit 1\n")
	os.Chmod(bad, 0o755)
	lookDot = func() (string, error) { return bad, nil }
	failing := filepath.Join(dir, "fail.svg")
	_, errb, code = runIbd("--sim", demoNet, "--svg", failing)
	if code != exitcode.Fatal || !strings.Contains(string(errb), "--svg: "+bad+": Error: something broke\n") || strings.Contains(string(errb), "more") {
		t.Errorf("failing dot: exit %d, stderr %q", code, errb)
	}
	if _, err := os.Stat(failing); err == nil {
		t.Errorf("%s written although dot failed", failing)
	}
}
