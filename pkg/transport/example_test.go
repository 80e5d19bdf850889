package transport_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Exchange one SMP through a transport (here the embedded simulator; a
// umad device or an ibsim client is used the same way), then see the
// errors a transport reports: a Set refused by a read-only wrapper, an
// SMP no node answers, a closed transport, and no device.
func ExampleTransport() {
	fab, err := sim.Generate("fattree:levels=2,radix=4", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := fab.Attach("")
	if err != nil {
		fmt.Println(err)
		return
	}
	tr = transport.ReadOnly(tr)
	ctx := context.Background()

	req := smp.NewGet(smp.DRPath{}, smp.AttrNodeInfo, 0)
	b, _ := req.MarshalBinary()
	resp := make([]byte, 256)
	if err := tr.Exchange(ctx, 0xffff, b, resp); err != nil {
		fmt.Println(err)
		return
	}
	var m smp.MAD
	var ni smp.NodeInfo
	if err := m.UnmarshalBinary(resp); err == nil && ni.UnmarshalBinary(m.Data[:]) == nil {
		fmt.Printf("answered: node type %d, %d ports\n", ni.NodeType, ni.NumPorts)
	}

	b[3] = transport.MethodSet
	err = tr.Exchange(ctx, 0xffff, b, resp)
	fmt.Println(errors.Is(err, transport.ErrReadOnly), err)

	far, _ := smp.ParseDRPath("0,9")
	req = smp.NewGet(far, smp.AttrNodeInfo, 0)
	b, _ = req.MarshalBinary()
	err = tr.Exchange(ctx, 0xffff, b, resp)
	fmt.Println(errors.Is(err, transport.ErrTimeout), err)

	tr.Close()
	err = tr.Exchange(ctx, 0xffff, b, resp)
	fmt.Println(errors.Is(err, transport.ErrClosed), err)

	_, err = new(sim.Fabric).Attach("") // a fabric of no nodes: nothing to attach to
	fmt.Println(errors.Is(err, transport.ErrNoDevice), err)
	// Output:
	// answered: node type 1, 1 ports
	// true send: set method refused: the fabric was opened read-only
	// true recv sim: timed out
	// true send sim: transport closed
	// true attach sim: no InfiniBand device
}
