package mad_test

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/mad"
)

// Decode the common header of a MAD as it arrives: a SubnGet response of
// NodeInfo (attribute 0x0011) whose status reports an unsupported
// attribute.
func ExampleHeader_UnmarshalBinary() {
	b := make([]byte, 256)
	h := mad.Header{BaseVersion: 1, Class: 0x81, ClassVersion: 1, Method: 0x81, Status: 0x000c, TID: 7, AttrID: 0x0011}
	if err := h.MarshalTo(b); err != nil {
		fmt.Println(err)
		return
	}
	var got mad.Header
	if err := got.UnmarshalBinary(b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("class 0x%02x attribute 0x%04x response %v tid %d\n", got.Class, got.AttrID, got.IsResponse(), got.TID)
	fmt.Println(mad.StatusText(got.Status))
	if err := got.UnmarshalBinary(b[:10]); err != nil {
		fmt.Println(err)
	}
	// Output:
	// class 0x81 attribute 0x0011 response true tid 7
	// method/attribute combination not supported
	// mad: buffer too short
}
