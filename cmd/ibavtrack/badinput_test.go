package main

import (
	"path/filepath"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// TestBadInput: every bad input of every command gets one line on stderr
// starting "ibavtrack: " and naming the input and the problem, exit
// status 2, no panic and nothing on stdout. (TestUsage covers the
// argument-count errors.)
func TestBadInput(t *testing.T) {
	t.Parallel() // in-process only: beside the live tests, which mostly wait on their tools
	dir := t.TempDir()
	bad := clitest.WriteBadFiles(t, dir)
	badNet, badTopo, zeroInc := bad.Net, bad.Topo, bad.ZeroInclude
	mix := "testdata/pathmix.net"
	// watch must stop after one sweep should a bad input slip through.
	once := []string{"--count", "1", "--interval", "1ms"}

	type tc struct {
		name  string
		args  []string
		input string // the input the message must name
		msg   string // the problem it must state
	}
	tests := []tc{
		// commands and flags that do not parse
		{"unknown global flag", []string{"--bogus", "links"}, "--bogus", "unknown option (see --help)"},
		{"mistyped global flag", []string{"--ibsm", "links"}, "--ibsm", "unknown option (did you mean --ibsim?)"},
		{"mistyped flag", []string{"links", "--chek"}, "--chek", "unknown option (did you mean --check?)"},
		{"mistyped watch flag", []string{"watch", "--intervall", "1s", "hA"}, "--intervall", "unknown option (did you mean --interval?)"},
		{"help of no command", []string{"help", "nosuch"}, "help nosuch", "no such command (want links, path, watch, errors, mcast)"},
		{"max-op-vls syntax", []string{"links", "--sim", mix, "--max-op-vls", "x"}, "max-op-vls", "x"},
		{"interval syntax", []string{"watch", "--sim", mix, "--interval", "soon", "hA"}, "--interval soon", "not a time: give seconds (10) or a duration"},
		{"interval overflow", []string{"watch", "--sim", mix, "--interval", "1e300", "hA"}, "--interval 1e300", "not a usable number of seconds"},
		{"count syntax", []string{"watch", "--sim", mix, "--count", "1.5", "hA"}, "count", "1.5"},
		{"missing value", []string{"path", "--sim"}, "sim", "flag needs an argument"},
		// numbers out of range
		{"max-op-vls zero", []string{"links", "--sim", mix, "--max-op-vls", "0"}, "--max-op-vls 0", "must be 1..5"},
		{"max-op-vls negative", []string{"links", "--sim", mix, "--max-op-vls", "-3"}, "--max-op-vls -3", "must be 1..5"},
		{"max-op-vls absurd", []string{"links", "--sim", mix, "--max-op-vls", "100"}, "--max-op-vls 100", "must be 1..5"},
		{"negative interval", []string{"watch", "--sim", mix, "--interval", "-1s", "hA"}, "--interval -1s", "must be positive"},
		{"full interval syntax", []string{"watch", "--sim", mix, "--full-interval", "later", "hA"}, "--full-interval later", "not a time: give seconds (10) or a duration"},
		{"negative full interval", []string{"watch", "--sim", mix, "--full-interval", "-1m", "hA"}, "--full-interval -1m", "must be 0 (every sweep full) or more"},
		{"negative count", []string{"watch", "--sim", mix, "--count", "-1", "hA"}, "--count -1", "must be 0 or more"},
		{"negative hold", []string{"watch", "--sim", mix, "--hold", "-1", "hA"}, "--hold -1", "must be 0..1000"},
		{"absurd hold", []string{"watch", "--sim", mix, "--hold", "5000", "hA"}, "--hold 5000", "must be 0..1000"},
		{"max nodes", []string{"links", "--sim", mix, "--max-nodes", "-1"}, "--max-nodes -1", "must be positive"},
		{"port number", []string{"links", "-P", "-1"}, "-P/--Port -1", "must be 1..254"},
		{"two transports", []string{"links", "--sim", mix, "--ibsim"}, "--ibsim and --sim", "choose one"},
		// inputs beyond their size limits
		{"sim /dev/zero", []string{"links", "--sim", "/dev/zero"}, "--sim /dev/zero", "more than 64 MiB"},
		{"include /dev/zero", []string{"path", "--sim", zeroInc, "1", "2"}, "zeroinc.net:1", `"/dev/zero": more than 64 MiB`},
		{"net file beyond --max-nodes", []string{"links", "--sim", "../../testdata/fabrics/fattree3.net", "--max-nodes", "10"}, "fattree3.net:", "more than 10 nodes"},
		{"16M-host generator", append([]string{"watch", "--sim", "fattree:levels=3,radix=254,hosts=253,leaves=253", "H0"}, once...), "--sim", "has 16322803 nodes, more than the limit of 1048576"},
		// ports that are not in the fabric
		{"path unknown LID", []string{"path", "--sim", mix, "hA", "99"}, "DST LID 99: ", "not in the fabric"},
		{"path unknown GUID", []string{"path", "--sim", mix, "0x00000000deadbeef", "hB"}, "SRC GUID 0x00000000deadbeef: ", "not in the fabric"},
		{"path unknown name", []string{"path", "--sim", mix, "nosuch", "hB"}, `SRC "nosuch": `, "not a node name or description in the fabric"},
		{"path DR path", []string{"path", "--sim", mix, "hA", "0,1,999"}, `DST "0,1,999": `, "not a node name or description in the fabric"},
		{"watch unknown DST", append([]string{"watch", "--sim", mix, "nosuch"}, once...), `DST "nosuch": `, "not a node name or description in the fabric"},
		{"watch unknown LID", append([]string{"watch", "--sim", mix, "hB", "4000"}, once...), "DST LID 4000: ", "not in the fabric"},
		{"watch unknown SRC", append([]string{"watch", "--sim", mix, "--src", "0x00000000deadbeef", "hB"}, once...), "--src GUID 0x00000000deadbeef: ", "not in the fabric"},
		{"sim host", []string{"links", "--sim", mix, "--sim-host", "nosuch"}, "--sim-host nosuch", "no node has this id, description, node GUID or port GUID"},
	}
	// The fabric files and the shared numeric flags, for every command.
	for _, cmd := range [][]string{{"links"}, {"path", "hA", "hB"}, append([]string{"watch", "hB"}, once...)} {
		with := func(args ...string) []string { return append(append([]string{}, cmd...), args...) }
		tests = append(tests,
			tc{cmd[0] + " net file", with("--sim", badNet), "bad.net:2", "port 9 out of range"},
			tc{cmd[0] + " topology file", with("--sim", badTopo), "bad.topo", "H-0000000000000020"},
			tc{cmd[0] + " missing net file", with("--sim", filepath.Join(dir, "none.net")), "none.net", "no such file"},
			tc{cmd[0] + " generator spec", with("--sim", "fattree:levels=9"), "--sim", "fattree:levels=9"},
			tc{cmd[0] + " zero window", with("--sim", mix, "-o", "0"), "-o/--outstanding-smps 0", "must be 1.."},
			tc{cmd[0] + " absurd window", with("--sim", mix, "-o", "100000"), "-o/--outstanding-smps 100000", "must be 1.."},
			tc{cmd[0] + " negative timeout", with("--sim", mix, "-t", "-5"), "-t/--timeout -5", "must be 1.."},
			tc{cmd[0] + " timeout syntax", with("--sim", mix, "-t", "abc"), "-t", "abc"},
			tc{cmd[0] + " negative retries", with("--sim", mix, "--retries", "-2"), "--retries -2", "must be 0.."},
			tc{cmd[0] + " unknown flag", with("--bogus"), "--bogus", "unknown option (see --help)"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runTool(t, tt.args...)
			clitest.BadInput(t, "ibavtrack", stdout, stderr, code, tt.input, tt.msg)
		})
	}
	// Nothing was written beside the inputs.
	clitest.NoLeftovers(t, dir, bad.Names()...)
}
