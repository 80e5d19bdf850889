package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestBadInput: every bad input gets one line on stderr naming the input
// and the problem, exit status 2, no panic, and no output file left.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return clitest.WriteFile(t, dir, name, content) }
	bad := clitest.WriteBadFiles(t, dir)
	badNet, badTopo, badMap, zeroInc := bad.Net, bad.Topo, bad.Map, bad.ZeroInclude
	demo := "../../testdata/fabrics/demo.net"
	junkCache := write("junk.cache", "garbage\x00\x01\x02")
	shortCache := write("short.cache", "\x2b\x83\xe7\x8f\x01\x00\x00\x00\x05\x00")
	out := filepath.Join(dir, "out", "topo.txt")
	long := "0" + strings.Repeat(",1", 64)

	tests := []struct {
		name  string
		args  []string
		input string // the input the message must name
		msg   string // the problem it must state
	}{
		{"net file", []string{"--sim", badNet}, "bad.net:2", "port 9 out of range"},
		{"topology file", []string{"--sim", badTopo}, "bad.topo", "H-0000000000000020"},
		{"missing net file", []string{"--sim", filepath.Join(dir, "none.net")}, "none.net", "no such file"},
		{"generator spec", []string{"--sim", "fattree:levels=9"}, "--sim", "fattree:levels=9"},
		{"DR path port", []string{"--sim", demo, "-from", "0,1,999"}, "-from 0,1,999", "out of range"},
		{"DR path start", []string{"--sim", demo, "-from", "1,2"}, "-from 1,2", "first element must be 0"},
		{"DR path syntax", []string{"--sim", demo, "-from", "0,x"}, "-from 0,x", "not a comma-separated list"},
		{"DR path too long", []string{"--sim", demo, "-from", long}, "-from", "longer than 63 hops"},
		{"DR path past the ports", []string{"--sim", demo, "--from", "0,99"}, "--from 0,99", `hop 1: switch "spine01" has 40 ports, no port 99`},
		{"DR path past a leaf's ports", []string{"--sim", demo, "--from", "0,1,41"}, "--from 0,1,41", `hop 2: switch "leaf01" has 40 ports, no port 41`},
		{"DR path through a CA", []string{"--sim", demo, "--from", "0,1,1,1"}, "--from 0,1,1,1", `hop 3: CA "node001 mlx5_0" does not forward`},
		{"negative hops", []string{"--sim", demo, "-hops", "-1"}, "-hops -1", "must be 0..63"},
		{"absurd hops", []string{"--sim", demo, "-hops", "1000"}, "-hops 1000", "must be 0..63"},
		{"zero window", []string{"--sim", demo, "-o", "0"}, "-o/--outstanding-smps 0", "must be 1.."},
		{"absurd window", []string{"--sim", demo, "-o", "100000"}, "-o/--outstanding-smps 100000", "must be 1.."},
		{"negative timeout", []string{"--sim", demo, "-t", "-5"}, "-t/--timeout -5", "must be 1.."},
		{"timeout syntax", []string{"--sim", demo, "-t", "abc"}, "-t", "abc"},
		{"negative retries", []string{"--sim", demo, "--retries", "-2"}, "--retries -2", "must be 0.."},
		{"name map", []string{"--sim", demo, "--node-name-map", badMap}, "bad.map", "line 2"},
		{"missing name map", []string{"--sim", demo, "--node-name-map", filepath.Join(dir, "none.map")}, "none.map", "no such file"},
		{"junk cache", []string{"--load-cache", junkCache}, "junk.cache", "not an ibnetdiscover cache"},
		{"truncated cache", []string{"--load-cache", shortCache}, "short.cache", "truncated"},
		{"net file as cache", []string{"--load-cache", demo}, "demo.net", "not an ibnetdiscover cache"},
		{"diff cache", []string{"--sim", demo, "--diff", junkCache}, "junk.cache", "not an ibnetdiscover cache"},
		{"unwritable output", []string{"--sim", demo, out}, out, "no such file"},
		// inputs beyond their size limits
		{"sim /dev/zero", []string{"--sim", "/dev/zero"}, "--sim /dev/zero", "more than 64 MiB (the limit for a net file and its includes)"},
		{"include /dev/zero", []string{"--sim", zeroInc}, "zeroinc.net:1", `can't open net configuration file "/dev/zero": more than 64 MiB`},
		{"sim directory", []string{"--sim", dir}, "--sim " + dir, "is a directory"},
		{"sim /dev/null", []string{"--sim", "/dev/null"}, "--sim /dev/null", "no nodes"},
		{"sim binary file", []string{"--sim", "/bin/true"}, "--sim /bin/true", "not a text file: no nodes"},
		{"net file beyond --max-nodes", []string{"--sim", "../../testdata/fabrics/fattree3.net", "--max-nodes", "10"}, "fattree3.net:", "more than 10 nodes (the node limit); --max-nodes raises the limit"},
		{"generator beyond --max-nodes", []string{"--sim", "fattree:levels=2,radix=16", "--max-nodes", "100"}, "--sim", `"fattree:levels=2,radix=16" has 152 nodes, more than the limit of 100`},
		{"16M-host generator", []string{"--sim", "fattree:levels=3,radix=254,hosts=253,leaves=253"}, "--sim", "has 16322803 nodes, more than the limit of 1048576"},
		{"name map /dev/zero", []string{"--sim", demo, "--node-name-map", "/dev/zero"}, "/dev/zero", "larger than 32 MiB, the limit for a node name map"},
		{"name map directory", []string{"--sim", demo, "--node-name-map", dir}, "--node-name-map: " + dir, "is a directory"},
		{"output is a directory", []string{"--sim", demo, dir}, dir, "is a directory"},
		{"unwritable cache", []string{"--sim", demo, "--cache", out}, out, "no such file"},
		{"diffcheck key", []string{"--sim", demo, "--diffcheck", "sw,bogus"}, "--diffcheck", "bogus"},
		{"two transports", []string{"--sim", demo, "--ibsim"}, "--ibsim and --sim", "choose one"},
		{"two outputs", []string{"--sim", demo, "--json", "--dot"}, "--json/--dot", "choose one"},
		{"unknown flag", []string{"--bogus"}, "--bogus", "unknown option (see --help)"},
		{"mistyped flag", []string{"-hop", "2"}, "-hop", "unknown option (did you mean -hops?)"},
		{"mistyped long flag", []string{"--node-name-mapp", "x"}, "--node-name-mapp", "unknown option (did you mean --node-name-map?)"},
		{"mistyped flag after an operand", []string{"x", "--jsn"}, "--jsn", "unknown option (did you mean --json?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runOurs(t, tt.args...)
			clitest.BadInput(t, "ibdiscover", stdout, stderr, code, tt.input, tt.msg)
		})
	}
	// Nothing half-written was left behind.
	clitest.NoLeftovers(t, dir, append(bad.Names(), "junk.cache", "short.cache")...)
}

// TestNoDevice: with no transport flag and no InfiniBand device, one line
// that names --sim and --ibsim, and the fatal exit status.
func TestNoDevice(t *testing.T) {
	t.Setenv("IBDIAG_SYSFS", t.TempDir()) // a sysfs with no infiniband class
	stdout, stderr, code := runOurs(t)
	if code != exitcode.Fatal {
		t.Errorf("exit %d, want %d", code, exitcode.Fatal)
	}
	msg := string(stderr)
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "--sim") || !strings.Contains(msg, "--ibsim") {
		t.Errorf("stderr %q: want one line naming --sim and --ibsim", msg)
	}
	if len(stdout) != 0 {
		t.Errorf("stdout not empty: %q", stdout)
	}
}
