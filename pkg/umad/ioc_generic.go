//go:build !(mips || mipsle || mips64 || mips64le || ppc64 || ppc64le)

package umad

// _IOC layout of most Linux architectures (asm-generic/ioctl.h).
const (
	iocNone     = 0
	iocWrite    = 1
	iocRead     = 2
	iocDirShift = 30
)
