//go:build mips || mipsle || mips64 || mips64le || ppc64 || ppc64le

package umad

// _IOC layout of MIPS and PowerPC (13 size bits, 3 direction bits).
const (
	iocNone     = 1
	iocWrite    = 4
	iocRead     = 2
	iocDirShift = 29
)
