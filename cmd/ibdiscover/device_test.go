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
		lines []string // after "ibdiscover: umad: no usable InfiniBand port"
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
			want := append([]string{"ibdiscover: umad: no usable InfiniBand port"}, tc.lines...)
			want = append(want, "  choose a port with -C/--Ca and -P/--Port, or work without hardware: --sim <net file> (embedded simulator) or --ibsim (a running ibsim)")
			if got := strings.TrimSuffix(string(stderr), "\n"); got != strings.Join(want, "\n") {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}
