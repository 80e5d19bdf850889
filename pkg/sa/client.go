package sa

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Defaults of a Client.
const (
	DefaultTimeout = time.Second
	DefaultRetries = 2
)

// Client queries the SA of one subnet through a transport.
type Client struct {
	tr    transport.Transport
	smLID uint16
	// Timeout bounds each wait for an answer MAD (DefaultTimeout when 0).
	Timeout time.Duration
	// Retries is how many more times a request that got no answer is
	// sent (a transfer already under way is not restarted).
	Retries int
	// SMKey is the SM_Key sent in each request's SA header (0 when not
	// set). OpenSM lists every member's MCMemberRecord only to a
	// requester with its SM_Key, as saquery --smkey does.
	SMKey uint64
	tid   atomic.Uint32
}

// NewClient returns a client of the SA at smLID (the local port's
// PortInfo.MasterSMLID, see MasterSMLID). It fails with ErrNoSM when
// smLID is 0.
func NewClient(tr transport.Transport, smLID uint16) (*Client, error) {
	if smLID == 0 {
		return nil, ErrNoSM
	}
	return &Client{tr: tr, smLID: smLID, Timeout: DefaultTimeout, Retries: DefaultRetries}, nil
}

// SMLID returns the LID the client sends to.
func (c *Client) SMLID() uint16 { return c.smLID }

// MasterSMLID reads the local port's PortInfo (a directed-route SMP with
// an empty path: NodeInfo for the port number, then PortInfo) and returns
// its MasterSMLID, or ErrNoSM when it is 0 or the port is not Active.
func MasterSMLID(ctx context.Context, tr transport.Transport, timeout time.Duration) (uint16, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var req, resp [MADSize]byte
	get := func(attr uint16, mod uint32, out []byte) error {
		if err := smp.MarshalGet(req[:], smp.DRPath{}, attr, mod, 0); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tr.Exchange(cctx, smp.PermissiveLID, req[:], resp[:]); err != nil {
			return err
		}
		var m smp.MAD
		if err := m.UnmarshalBinary(resp[:]); err != nil {
			return err
		}
		if st := m.StatusCode(); st != 0 {
			return &smp.StatusError{Status: st}
		}
		copy(out, m.Data[:])
		return nil
	}
	var data [smp.DataSize]byte
	var ni smp.NodeInfo
	if err := get(smp.AttrNodeInfo, 0, data[:]); err != nil {
		return 0, fmt.Errorf("local NodeInfo: %w", err)
	}
	ni.UnmarshalBinary(data[:])
	var pi smp.PortInfo
	if err := get(smp.AttrPortInfo, uint32(ni.LocalPortNum), data[:]); err != nil {
		return 0, fmt.Errorf("local PortInfo: %w", err)
	}
	pi.UnmarshalBinary(data[:])
	if pi.MasterSMLID == 0 {
		return 0, ErrNoSM
	}
	if pi.PortState != 4 {
		return 0, fmt.Errorf("%w (the local port is not Active: state %d)", ErrNoSM, pi.PortState)
	}
	return pi.MasterSMLID, nil
}

// Get sends SubnAdmGet(attr) with component mask mask and template
// record rec, and copies the one record of the answer into out (as many
// bytes as out holds, at most the stride). An SA error status is a
// *StatusError (ErrNoRecords for none).
func (c *Client) Get(ctx context.Context, attr uint16, mask uint64, rec, out []byte) error {
	var req, resp [MADSize]byte
	if err := MarshalRequest(req[:], MethodGet, attr, mask, rec, 0); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(req[36:], c.SMKey)
	h, err := c.exchange(ctx, req[:], resp[:])
	if err != nil {
		return err
	}
	if err := checkAnswer(&h, MethodGetResp, attr); err != nil {
		return err
	}
	n := int(h.AttributeOffset) * 8
	if n == 0 || n > DataSize {
		n = DataSize
	}
	copy(out, resp[DataOffset:DataOffset+min(n, len(out))])
	return nil
}

// exchange sends req (retrying one that got no answer) and decodes the
// answer's header.
func (c *Client) exchange(ctx context.Context, req, resp []byte) (Header, error) {
	var h Header
	var err error
	for try := 0; try <= c.Retries; try++ {
		cctx, cancel := context.WithTimeout(ctx, c.timeout())
		err = c.tr.Exchange(cctx, c.smLID, req, resp)
		cancel()
		if err == nil || !errors.Is(err, transport.ErrTimeout) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return h, c.sendErr(ctx, err)
	}
	if err := h.UnmarshalBinary(resp); err != nil {
		return h, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	return h, nil
}

func (c *Client) sendErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("SA at LID %d: %w", c.smLID, ctx.Err())
	}
	if errors.Is(err, transport.ErrTimeout) && ctx.Err() == nil {
		return fmt.Errorf("SA at LID %d: %w after %d attempts of %v: %w", c.smLID, ErrNoAnswer, c.Retries+1, c.timeout(), err)
	}
	return fmt.Errorf("SA at LID %d: %w", c.smLID, err)
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// checkAnswer checks an answer's method, attribute and status.
func checkAnswer(h *Header, method uint8, attr uint16) error {
	if h.Method != method || h.AttrID != attr || h.ClassVersion != ClassVersion {
		return fmt.Errorf("%w: method 0x%02x attribute 0x%04x class version %d answering method 0x%02x attribute 0x%04x",
			ErrBadAnswer, h.Method, h.AttrID, h.ClassVersion, method&^0x80, attr)
	}
	if h.Status != 0 {
		return &StatusError{Status: h.Status}
	}
	return nil
}

// GetTable sends SubnAdmGetTable(attr) with component mask mask and
// template record rec and returns every record of the answer,
// reassembling an RMPP transfer of several MADs (and ACKing it as RMPP
// requires) when the transport is a transport.Streamer.
func (c *Client) GetTable(ctx context.Context, attr uint16, mask uint64, rec []byte) (Table, error) {
	var req [MADSize]byte
	if err := MarshalRequest(req[:], MethodGetTable, attr, mask, rec, 0); err != nil {
		return Table{}, err
	}
	binary.BigEndian.PutUint64(req[36:], c.SMKey)
	if s, ok := transport.StreamerOf(c.tr); ok {
		return c.stream(ctx, s, attr, req[:])
	}
	var resp [MADSize]byte
	h, err := c.exchange(ctx, req[:], resp[:])
	if err != nil {
		return Table{}, err
	}
	return single(&h, attr, resp[:])
}

// single decodes a GetTable answer that came as one MAD.
func single(h *Header, attr uint16, b []byte) (Table, error) {
	if err := checkAnswer(h, MethodGetTableResp, attr); err != nil {
		return Table{}, err
	}
	rh := &h.RMPP
	if !rh.Active() || (rh.Type == 0 && rh.Flags&RMPPFlagFirst == 0 && rh.Data1 == 0) {
		return unsized(h, b), nil
	}
	r := newReassembly(attr)
	if _, _, _, err := r.add(h, b); err != nil {
		return Table{}, err
	}
	if !r.done {
		return Table{}, fmt.Errorf("%w (%d bytes announced)", ErrMultiSegment, r.total)
	}
	return r.table(1), nil
}

// stream runs a GetTable transaction through a Streamer.
func (c *Client) stream(ctx context.Context, s transport.Streamer, attr uint16, req []byte) (Table, error) {
	var err error
	for try := 0; try <= c.Retries; try++ {
		var t Table
		var got int
		t, got, err = c.streamOnce(ctx, s, attr, req)
		if err == nil {
			return t, nil
		}
		if got > 0 || !errors.Is(err, transport.ErrTimeout) || ctx.Err() != nil {
			if got > 0 && errors.Is(err, transport.ErrTimeout) && ctx.Err() == nil {
				return Table{}, fmt.Errorf("SA at LID %d: %w: no segment after %d within %v: %w", c.smLID, ErrTruncated, got, c.timeout(), err)
			}
			break
		}
	}
	var se *StatusError
	if errors.As(err, &se) || errors.Is(err, ErrRMPP) || errors.Is(err, ErrOutOfOrder) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrBadAnswer) {
		return Table{}, fmt.Errorf("SA at LID %d: %w", c.smLID, err)
	}
	return Table{}, c.sendErr(ctx, err)
}

func (c *Client) streamOnce(ctx context.Context, s transport.Streamer, attr uint16, req []byte) (Table, int, error) {
	r := newReassembly(attr)
	var ack [MADSize]byte
	var out Table
	got := 0
	var h Header
	err := s.Stream(ctx, c.smLID, req, c.timeout(), func(b []byte) ([]byte, bool, error) {
		if err := h.UnmarshalBinary(b); err != nil {
			return nil, true, fmt.Errorf("%w: %w", ErrBadAnswer, err)
		}
		if got == 0 {
			if err := checkAnswer(&h, MethodGetTableResp, attr); err != nil {
				return nil, true, err
			}
			if !h.RMPP.Active() || (h.RMPP.Type == 0 && h.RMPP.Flags&RMPPFlagFirst == 0 && h.RMPP.Data1 == 0) {
				got++
				out = unsized(&h, b)
				return nil, true, nil
			}
		} else if err := checkAnswer(&h, MethodGetTableResp, attr); err != nil {
			return nil, true, err
		}
		got++
		doAck, seg, win, err := r.add(&h, b)
		if err != nil {
			return nil, true, err
		}
		var reply []byte
		if doAck {
			MarshalAck(ack[:], b, seg, win)
			reply = ack[:]
		}
		if r.done {
			out = r.table(int(r.next - 1))
			return reply, true, nil
		}
		return reply, false, nil
	})
	return out, got, err
}
