// Package umad reaches an InfiniBand fabric through the Linux kernel's
// user_mad interface (/dev/infiniband/umadN).
//
// It has three parts: an FS that reads the RDMA devices, their ports and
// the umad devices from sysfs (rooted at any directory, for fixture
// trees); Select, which picks the port to use the way libibumad does; and
// Device, a transport.Transport over one umad device that registers SMP,
// PerfMgt and SA agents, sends requests and matches responses on the low 32 bits of the
// transaction ID. The sysfs reader and the ABI codec are portable; opening
// a device needs Linux.
package umad
