package discover

import "testing"

// TestMlnxEPIDevice: libibnetdisc's is_mlnx_ext_port_info_supported
// (rdma-core v44), entry by entry and at each range's edges: Mellanox IDs
// under any vendor, Bull's only under Bull's vendor ID.
func TestMlnxEPIDevice(t *testing.T) {
	const mlnx, bull, other = 0x2c9, 0x119f, 0x8f1
	for _, tt := range []struct {
		vendor uint32
		id     uint16
		want   bool
	}{
		{mlnx, 0xc737, false}, {mlnx, 0xc738, true}, {other, 0xc73b, true}, {mlnx, 0xc73c, false},
		{other, 0xc839, true}, {bull, 0xcb20, true}, {mlnx, 0xcf08, true}, {mlnx, 0xcf09, true},
		{mlnx, 0xcf0a, false}, {other, 0xd2f0, true},
		{mlnx, 0x1002, false}, {mlnx, 0x1003, true}, {other, 0x1017, true}, {bull, 0x101b, true},
		{mlnx, 0x101c, false}, {other, 0xa2d2, true},
		// Bull switches: SwitchX, Switch-IB 1/2, Quantum
		{bull, 0x1b02, true}, {bull, 0x1b50, true}, {bull, 0x1ba0, true}, {bull, 0x1bcf, false},
		{bull, 0x1bd0, true}, {bull, 0x1bd5, true}, {bull, 0x1bd6, false}, {bull, 0x1bf0, true},
		// Bull HCAs: ConnectX-3, Connect-IB, ConnectX-4, Sequana HDR/HDR100
		{bull, 0x1b33, true}, {bull, 0x1b73, true}, {bull, 0x1b40, true}, {bull, 0x1b41, true},
		{bull, 0x1b60, true}, {bull, 0x1b61, true}, {bull, 0x1b83, true}, {bull, 0x1b93, true},
		{bull, 0x1b94, true}, {bull, 0x1bb4, true}, {bull, 0x1bb5, true}, {bull, 0x1bc3, false},
		{bull, 0x1bc4, true}, {bull, 0x1bc6, true}, {bull, 0x1bc7, false},
		// Bull's IDs under another vendor
		{mlnx, 0x1b02, false}, {other, 0x1bd0, false}, {mlnx, 0x1b33, false}, {mlnx, 0x1bc6, false},
	} {
		if got := mlnxEPIDevice(tt.vendor, tt.id); got != tt.want {
			t.Errorf("mlnxEPIDevice(%#x, %#x) = %v, want %v", tt.vendor, tt.id, got, tt.want)
		}
	}
}
