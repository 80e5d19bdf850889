package slurmtopo

import "testing"

// TestCompress: host lists as Slurm writes them (the wants are what
// `scontrol show hostlist` prints for the same names).
func TestCompress(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"node1"}, "node1"},
		{[]string{"node001", "node002", "node003", "node004", "node007"}, "node[001-004,007]"},
		{[]string{"node007", "node002", "node001", "node004", "node003"}, "node[001-004,007]"},
		{[]string{"node1", "node1", "node2"}, "node[1-2]"},
		{[]string{"node9", "node10", "node11"}, "node[9-11]"},
		{[]string{"node09", "node10"}, "node[09-10]"},
		{[]string{"node09", "node100"}, "node[09,100]"},
		{[]string{"a1", "b1", "a2"}, "a[1-2],b1"},
		{[]string{"login", "node1", "node2"}, "login,node[1-2]"},
		{[]string{"login", "login"}, "login"},
		{[]string{"rack10-n1", "rack2-n1", "rack2-n2"}, "rack2-n[1-2],rack10-n1"},
		{[]string{"n0", "n1", "n3", "n4", "n5", "n8"}, "n[0-1,3-5,8]"},
		{[]string{"42", "43"}, "[42-43]"},
		{[]string{"x", ""}, "x"},
	} {
		if got := Compress(c.in); got != c.want {
			t.Errorf("Compress(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
