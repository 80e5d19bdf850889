package clitest

import "testing"

func TestRepeated(t *testing.T) {
	tests := []struct{ line, want string }{
		{"ibhops: 99: LID 99: not in the fabric\n", "99"},
		{"ibavtrack: --sim-host nosuch: sim: node not found: \"nosuch\"\n", "sim:"},
		{"ibavtrack: --sim-host nosuch: node not found: \"nosuch\"\n", "nosuch"},
		{"ibhops: LID 99: not in the fabric\n", ""},
		{"ibdiscover: -o/--outstanding-smps 0: must be 1..1024\n", ""},
		{"ibdiscover: --from 0,99: hop 1: switch \"spine01\" has 40 ports, no port 99\n", ""},
		{"ibhops: \"node001\": not a node name (did you mean \"node001 mlx5_0\"?)\n", ""},
		{"ibhops: --routed and --routing-engine: choose one\n", ""},
	}
	for _, tt := range tests {
		tool := tt.line[:indexColon(tt.line)]
		if got := Repeated(tool, tt.line); got != tt.want {
			t.Errorf("Repeated(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func indexColon(s string) int {
	for i := range s {
		if s[i] == ':' {
			return i
		}
	}
	return len(s)
}
