package main

import (
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/internal/exitcode"
)

// TestDeviceReasons: without -C, a host whose devices cannot be used is
// told why, device by device and port by port (sysfs fixture trees of
// pkg/umad), not "no InfiniBand device found".
func TestDeviceReasons(t *testing.T) {
	tests := []struct {
		tree  string
		lines []string // after "ibdiscover: no usable InfiniBand port"
	}{
		{"down", []string{
			"  mlx4_0 port 1: port is DOWN (physical Polling): no link; check the cable and the peer port",
			"  mlx4_0 port 2: port is Disabled (state DOWN): enable it, e.g. ibportstate enable"}},
		{"roce", []string{"  mlx5_0 port 1: link layer is Ethernet (RoCE): no subnet management, no SMPs"}},
		{"abi4", []string{"  kernel user_mad ABI version 4 is below 5, which is not supported: upgrade the kernel"}},
		{"reasons", []string{
			"  mlx5_0 port 1: link layer is Ethernet (RoCE): no subnet management, no SMPs",
			"  mlx5_1 port 1: port is DOWN (physical Polling): no link; check the cable and the peer port",
			"  mlx5_1 port 2: no SMI (IsSMDisabled in the capability mask): a GSI-only port",
			"  mlx5_2 port 1: no umad device: load the ib_umad kernel module (modprobe ib_umad)",
			"  siw0: a RNIC device (node type 4), not InfiniBand: no subnet management"}},
	}
	for _, tc := range tests {
		t.Run(tc.tree, func(t *testing.T) {
			t.Setenv("IBDIAG_SYSFS", "../../pkg/umad/testdata/"+tc.tree+"/sys")
			stdout, stderr, code := runOurs(t)
			if code != exitcode.Fatal || len(stdout) != 0 {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			want := append([]string{"ibdiscover: no usable InfiniBand port"}, tc.lines...)
			want = append(want, "  choose a port with -C/--Ca and -P/--Port, or work without hardware: --sim <net file> (embedded simulator) or --ibsim (a running ibsim)")
			if got := strings.TrimSuffix(string(stderr), "\n"); got != strings.Join(want, "\n") {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// TestDeviceNotFound: a -C or -P that names no device or port is one line
// that says so once, the names there are, and no package prefix.
func TestDeviceNotFound(t *testing.T) {
	t.Setenv("IBDIAG_SYSFS", "../../pkg/umad/testdata/reasons/sys")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-C", "mlx5_9"}, `ibdiscover: CA "mlx5_9" (have mlx5_0, mlx5_1, mlx5_2, siw0): not found: check the names with ibstat or ls /sys/class/infiniband` + "\n"},
		{[]string{"-C", "mlx5_0", "-P", "7"}, "ibdiscover: port 7 on CA mlx5_0: not found: check the names with ibstat or ls /sys/class/infiniband\n"},
	} {
		stdout, stderr, code := runOurs(t, tc.args...)
		if code != exitcode.Fatal || len(stdout) != 0 || string(stderr) != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %d, %q", tc.args, code, stderr, exitcode.Fatal, tc.want)
		}
	}
}
