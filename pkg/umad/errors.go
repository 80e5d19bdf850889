package umad

import (
	"errors"
	"io/fs"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

// hintError is a sentinel error with a message telling the user what to
// do; it unwraps to a more general sentinel.
type hintError struct {
	msg    string
	parent error
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.parent }

// Sentinel errors of device discovery and opening. Each message says what
// to do; the returned errors wrap them with the CA, port or path at fault.
var (
	// ErrNoInfiniBand: the host has no RDMA device with an InfiniBand port.
	ErrNoInfiniBand error = &hintError{
		"no InfiniBand device found (nothing usable under /sys/class/infiniband); " +
			"to work without hardware use --sim <net file> (embedded simulator) or --ibsim (a running ibsim)",
		transport.ErrNoDevice}
	// ErrEthernet: the port's link layer is Ethernet (RoCE), which carries no SMPs.
	ErrEthernet error = &hintError{
		"port link layer is Ethernet (RoCE): RoCE ports have no subnet management (no SMPs); " +
			"choose an InfiniBand port with -C/--Ca and -P/--Port, or use --sim/--ibsim",
		transport.ErrNoDevice}
	// ErrPortNotActive: the chosen port's link is down, so no SMP leaves it.
	ErrPortNotActive error = &hintError{
		"port is not Active: check the cable and the peer port, or choose another port with -C/--Ca and -P/--Port",
		transport.ErrNoDevice}
	// ErrNotFound: the CA or port named with -C/-P does not exist.
	ErrNotFound error = &hintError{
		"CA or port not found: check the names with ibstat or ls /sys/class/infiniband",
		transport.ErrNoDevice}
	// ErrNoUmad: the port has no umad device (the ib_umad module is not loaded).
	ErrNoUmad error = &hintError{
		"no umad device for the port: load the ib_umad kernel module (modprobe ib_umad)",
		transport.ErrNoDevice}
	// ErrABIVersion: the kernel's user_mad ABI is older than version 5.
	ErrABIVersion error = &hintError{
		"kernel user_mad ABI version is below 5, which is not supported: upgrade the kernel",
		transport.ErrNoDevice}
	// ErrNotInfiniBand: an RDMA device that is not InfiniBand (iWARP,
	// usNIC): it has no subnet management.
	ErrNotInfiniBand error = &hintError{
		"not an InfiniBand device (iWARP or usNIC): no subnet management, no SMPs",
		transport.ErrNoDevice}
	// ErrPermission: the umad device may not be opened by this user. The
	// hint gives access to a group, not to every local user: whoever may
	// open umad devices may send SMPs (and Sets) to the whole fabric.
	ErrPermission error = &hintError{
		"no permission to open the umad device: run as root, or give a group of " +
			`administrators access with a udev rule such as KERNEL=="umad*", GROUP="rdma", MODE="0660" ` +
			"and add them to that group (MODE=\"0666\" would let every local user send SMPs)",
		fs.ErrPermission}
	// ErrClass: the MAD's management class has no registered agent.
	ErrClass = errors.New("umad: management class not registered on this device (SMP classes 0x01 and 0x81, PerfMgt 0x04)")
)
