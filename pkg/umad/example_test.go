package umad_test

import (
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/umad"
)

// Choose the port a tool would use, as libibumad does (the first usable
// one; here port 1 of mlx5_0 is down), from a sysfs tree
// (here a fixture with two CAs; on a host, umad.NewFS("/sys")); umad.Open
// then opens its /dev/infiniband/umadN device.
func ExampleSelect() {
	fs, err := umad.NewFS("testdata/twocas/sys")
	if err != nil {
		fmt.Println(err)
		return
	}
	names, _ := fs.CANames()
	fmt.Println("CAs:", names)
	ref, err := umad.Select(fs, "", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ref.CA, ref.Port, ref.Device)

	_, err = umad.Select(fs, "mlx9_9", 0)
	fmt.Println(errors.Is(err, umad.ErrNotFound), err)
	// Output:
	// CAs: [mlx5_0 mlx5_1]
	// mlx5_0 2 /dev/infiniband/umad1
	// true umad: CA "mlx9_9" (have mlx5_0, mlx5_1): CA or port not found: check the names with ibstat or ls /sys/class/infiniband
}
