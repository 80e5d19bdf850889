package main

import (
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestBadInput: every bad input gets one line on stderr starting
// "ibhops: " and naming the input and the problem, exit status 2, no
// panic, nothing on stdout and no output file left behind. (TestUsage
// covers the mode and argument-count errors.)
func TestBadInput(t *testing.T) {
	t.Parallel() // in-process only: beside the live tests, which mostly wait on their tools
	dir := t.TempDir()
	bad := clitest.WriteBadFiles(t, dir)
	badNet, badTopo, zeroInc := bad.Net, bad.Topo, bad.ZeroInclude
	badMap := bad.Map
	loop := fabrics + "loop.net"
	out := filepath.Join(dir, "out", "lid-matrix.dump")

	tests := []struct {
		name  string
		args  []string
		input string // the input the message must name
		msg   string // the problem it must state
	}{
		// fabric files
		{"net file", []string{"--sim", badNet}, "bad.net:2", "port 9 out of range"},
		{"topology file", []string{"--sim", badTopo}, "bad.topo", "H-0000000000000020"},
		{"missing net file", []string{"--sim", filepath.Join(dir, "none.net")}, "none.net", "no such file"},
		{"generator spec", []string{"--sim", "fattree:levels=9"}, "--sim", "fattree:levels=9"},
		{"net file with a query", []string{"--sim", badNet, "h1", "h2"}, "bad.net:2", "port 9 out of range"},
		{"sim host", []string{"--sim", loop, "--sim-host", "nosuch"}, "--sim-host nosuch", `no node has this id, description, node GUID or port GUID (the first node is "sw1", node GUID 0x0000000000200000)`},
		// numbers
		{"zero window", []string{"--sim", loop, "-o", "0"}, "-o/--outstanding-smps 0", "must be 1.."},
		{"absurd window", []string{"--sim", loop, "-o", "100000"}, "-o/--outstanding-smps 100000", "must be 1.."},
		{"negative timeout", []string{"--sim", loop, "-t", "-5"}, "-t/--timeout -5", "must be 1.."},
		{"absurd timeout", []string{"--sim", loop, "-t", "99999999"}, "-t/--timeout 99999999", "must be 1.."},
		{"negative retries", []string{"--sim", loop, "--retries", "-2"}, "--retries -2", "must be 0.."},
		{"absurd retries", []string{"--sim", loop, "--retries", "1000"}, "--retries 1000", "must be 0.."},
		{"negative limit", []string{"--sim", loop, "--check-routes", "--limit", "-1"}, "--limit -1", "must be 0 or more"},
		{"zero max nodes", []string{"--sim", loop, "--max-nodes", "0"}, "--max-nodes 0", "must be positive"},
		{"port number", []string{"-P", "300"}, "-P/--Port 300", "must be 1..254"},
		// ports and switches that are not in the fabric
		{"unknown LID", []string{"--sim", loop, "h1", "99"}, "ibhops: LID 99: ", "not in the fabric"},
		{"unknown hex LID", []string{"--sim", loop, "0x63", "h1"}, "ibhops: LID 0x63: ", "not in the fabric"},
		{"unknown GUID", []string{"--sim", loop, "h1", "0x00000000deadbeef"}, "ibhops: GUID 0x00000000deadbeef: ", "not in the fabric"},
		{"unknown name", []string{"--sim", loop, "nosuch", "h1"}, `ibhops: "nosuch": `, "not a node name or description in the fabric\n"},
		{"part of a name", []string{"--sim", fabrics + "demo.net", "node001", "node002 mlx5_0"}, `ibhops: "node001": `, `not a node name or description in the fabric (did you mean "node001 mlx5_0"?)`},
		{"mistyped name", []string{"--sim", fabrics + "demo.net", "--switch", "spine1"}, `ibhops: --switch "spine1": `, `(did you mean "spine01" or "spine02"?)`},
		{"DR path as a port", []string{"--sim", loop, "h1", "0,1,999"}, `"0,1,999": `, "not a node name or description in the fabric"},
		{"unknown switch", []string{"--sim", loop, "--switch", "0x00000000deadbeef"}, "--switch GUID 0x00000000deadbeef: ", "not in the fabric"},
		{"switch is a CA", []string{"--sim", loop, "--switch", "h2"}, "--switch h2", "a CA, not a switch"},
		{"unknown LFT switch", []string{"--sim", loop, "--lft", "99"}, "--lft LID 99: ", "not in the fabric"},
		{"LFT of a CA", []string{"--sim", loop, "--lft", "h3"}, "--lft h3", "a CA, not a switch"},
		{"unknown MFT switch", []string{"--sim", loop, "--mft", "99"}, "--mft LID 99: ", "not in the fabric"},
		{"MFT of a CA", []string{"--sim", loop, "--mft", "h3"}, "--mft h3", "a CA, not a switch"},
		{"unknown MFT GUID", []string{"--sim", loop, "--mft", "0x1234567890"}, "--mft", "not in the fabric"},
		{"MFT and LFT", []string{"--sim", loop, "--mft", "sw1", "--lft", "sw1"}, "--lft and --mft", "choose one mode"},
		{"unknown trace source", []string{"--sim", loop, "--trace", "nosuch", "h1"}, `--trace "nosuch": `, "not a node name or description in the fabric"},
		{"unknown trace LID", []string{"--sim", loop, "--trace", "h1", "4000"}, "--trace LID 4000: ", "not in the fabric"},
		// inputs beyond their size limits
		{"sim /dev/zero", []string{"--sim", "/dev/zero"}, "--sim /dev/zero", "more than 64 MiB"},
		{"include /dev/zero", []string{"--sim", zeroInc}, "zeroinc.net:1", `"/dev/zero": more than 64 MiB`},
		{"net file beyond --max-nodes", []string{"--sim", fabrics + "fattree3.net", "--max-nodes", "10"}, "fattree3.net:", "more than 10 nodes"},
		{"16M-host generator", []string{"--sim", "fattree:levels=3,radix=254,hosts=253,leaves=253"}, "--sim", "has 16322803 nodes, more than the limit of 1048576"},
		{"name map /dev/zero", []string{"--sim", loop, "--node-name-map", "/dev/zero"}, "/dev/zero", "larger than 32 MiB"},
		{"name map directory", []string{"--sim", loop, "--node-name-map", dir}, dir, "is a directory"},
		{"output cannot be replaced", []string{"--sim", loop, "--output", "/proc/version"}, "/proc/version", "cannot be replaced: no temporary file can be created beside it in /proc"},
		// routing engines
		{"unknown engine", []string{"--sim", loop, "--routing-engine", "fattree"}, "--routing-engine fattree", "one of minhop, updn"},
		{"engine and routed", []string{"--sim", loop, "--routing-engine", "updn", "--routed"}, "--routed and --routing-engine", "choose one"},
		{"routed trace", []string{"--sim", loop, "--routed", "--trace", "h1", "h2"}, "--routed", "only with the dump or SRC DST"},
		{"torus query", []string{"--sim", loop, "--routing-engine", "torus-2qos", "h1", "h2"}, "--routing-engine torus-2QoS", "builds no hop matrix"},
		{"engine with lft", []string{"--sim", loop, "--routing-engine", "dfsssp", "--lft", "sw1"}, "--routing-engine", "only with the dump"},
		// files
		{"name map", []string{"--sim", loop, "--node-name-map", badMap}, "bad.map", "line 2"},
		{"missing name map", []string{"--sim", loop, "--node-name-map", filepath.Join(dir, "none.map")}, "none.map", "no such file"},
		{"unwritable output", []string{"--sim", loop, "--output", out}, out, "no such file"},
		{"output is a directory", []string{"--sim", loop, "--output", dir}, dir, "is a directory"},
		{"bad output and a bad port", []string{"--sim", loop, "--output", out, "h1", "nosuch"}, out, "no such file"},
		{"good output and a bad port", []string{"--sim", loop, "--output", filepath.Join(dir, "q.txt"), "h1", "nosuch"}, `"nosuch"`, "not a node name or description in the fabric"},
		{"good output and a bad switch", []string{"--sim", loop, "--output", filepath.Join(dir, "s.txt"), "--lft", "h1"}, "--lft h1", "a CA, not a switch"},
		// flags that do not parse
		{"unknown flag", []string{"--bogus"}, "--bogus", "unknown option (see --help)"},
		{"mistyped flag", []string{"--swich", "S0"}, "--swich", "unknown option (did you mean --switch?)"},
		{"mistyped long flag", []string{"--node-name-mapp", "x"}, "--node-name-mapp", "unknown option (did you mean --node-name-map?)"},
		{"mistyped flag after an operand", []string{"x", "--jsn"}, "--jsn", "unknown option (did you mean --json?)"},
		{"timeout syntax", []string{"--sim", loop, "-t", "abc"}, "-t", "abc"},
		{"limit syntax", []string{"--sim", loop, "--limit", "many"}, "limit", "many"},
		{"window syntax", []string{"--sim", loop, "-o", "1.5"}, "-o", "1.5"},
		{"missing value", []string{"--sim"}, "sim", "flag needs an argument"},
		{"two transports", []string{"--sim", loop, "--ibsim"}, "--ibsim and --sim", "choose one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runOurs(t, tt.args...)
			clitest.BadInput(t, "ibhops", stdout, stderr, code, tt.input, tt.msg)
		})
	}
	// Nothing half-written was left behind.
	clitest.NoLeftovers(t, dir, bad.Names()...)
}
