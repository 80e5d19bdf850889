package ibsim_test

import (
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
)

// Encode the control message a client sends to attach to ibsim (CONNECT,
// naming the node to attach at), decode it back as ibsim reads it, and
// reject a message that is not one. ibsim.Dial does this on the socket.
func ExampleNewCtl() {
	c := ibsim.NewCtl(ibsim.CtlConnect, 0, []byte("leaf01"))
	b, err := c.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	var got ibsim.Ctl
	if err := got.UnmarshalBinary(b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: type %d, slot %d, magic 0x%x\n", len(b), got.Type, got.ClientID, got.Magic)

	b[0] ^= 0xff
	err = got.UnmarshalBinary(b)
	fmt.Println(errors.Is(err, ibsim.ErrMagic), err)
	// Output:
	// 80 bytes: type 1, slot 0, magic 0xdeadbeef
	// true ibsim: bad control message magic
}
